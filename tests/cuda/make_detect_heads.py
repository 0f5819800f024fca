#!/usr/bin/env python3
"""Writes real detection-head outputs for the GPU post-processing test (cuda_detect_gpu_test):
each shared model of one family run by ONNX Runtime on bus.jpg and zidane.jpg, saved as
<family>_<image>_head.npy into --out (the GPU machine has no ONNX Runtime and the GPU test binary
no ONNX frontend). The pre-processing only needs to be realistic, not exact: the test compares
the GPU decoding + NMS with the CPU's on the same head.

  tests/cuda/make_detect_heads.py --shared ../shared --out build/cuda_gpu/data
"""
import argparse
import os

import numpy as np
import onnxruntime as ort
from PIL import Image

# family -> (model, letterbox (Ultralytics) or top-left paste (YOLOX) with 0..255 BGR)
MODELS = {
    "yolov8": ("yolov8n.onnx", "letterbox"),
    "yolov5": ("yolov5n-fp16-dynbatch.onnx", "letterbox"),
    "yolov10": ("yolov10n-dynint8-e2e.onnx", "letterbox"),
    "yolox": ("yolox-nano-facemask.onnx", "yolox"),
}


def preprocess(path, size, mode, dtype):
    img = Image.open(path).convert("RGB")
    w, h = img.size
    r = min(size / w, size / h)
    nw, nh = (round(w * r), round(h * r)) if mode == "letterbox" else (int(w * r), int(h * r))
    resized = np.asarray(img.resize((nw, nh), Image.BILINEAR))
    canvas = np.full((size, size, 3), 114, np.uint8)
    left, top = ((size - nw) // 2, (size - nh) // 2) if mode == "letterbox" else (0, 0)
    canvas[top:top + nh, left:left + nw] = resized
    if mode == "letterbox":
        x = canvas.astype(np.float32) / 255.0  # RGB
    else:
        x = canvas[:, :, ::-1].astype(np.float32)  # BGR, 0..255
    return np.ascontiguousarray(x.transpose(2, 0, 1)[None]).astype(dtype)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shared", required=True, help="the shared folder (models/, data/images/)")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    for family, (model, mode) in MODELS.items():
        sess = ort.InferenceSession(os.path.join(args.shared, "models", model),
                                    providers=["CPUExecutionProvider"])
        inp = sess.get_inputs()[0]
        size = inp.shape[2] if isinstance(inp.shape[2], int) else 640
        dtype = np.float16 if inp.type == "tensor(float16)" else np.float32
        for image in ("bus", "zidane"):
            x = preprocess(os.path.join(args.shared, "data", "images", image + ".jpg"), size, mode,
                           dtype)
            head = sess.run(None, {inp.name: x})[0]
            out = os.path.join(args.out, f"{family}_{image}_head.npy")
            np.save(out, np.ascontiguousarray(head))
            print(f"{out}: {head.shape} {head.dtype} (input {size}x{size})")


if __name__ == "__main__":
    main()
