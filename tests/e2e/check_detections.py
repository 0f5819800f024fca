#!/usr/bin/env python3
"""Checks `yoloc run MODEL IMAGES... --json -` against detections computed here with ONNX Runtime
and an independent numpy pre/post-processing (letterbox or YOLOX resize, head decoding, NMS), as
/work/shared/models/README.md specifies them.

Every reference detection must have a yoloc detection of the same class with IoU >= 0.9 and a
score within 0.01, and vice versa; detections whose score is within SCORE_TOL of the confidence
threshold may be missing on either side.

Dynamically quantized models quantize every activation at run time: a last-bit difference in a
float op (ONNX Runtime's Sigmoid is a polynomial approximation) moves a value across a rounding
boundary of the next quantization, and scores drift by one or two quanta (up to ~0.02) between
any two correct implementations. For them the ONNX reference evaluator (onnx.reference) is a
second, independent reference: the score tolerance on an image becomes 1.5x the largest score
difference between the two references there (at least SCORE_TOL).

usage: check_detections.py --yoloc BIN --decoder DECODE_BIN --model M.onnx --images A.jpg ...
                           --work DIR [--conf 0.25] [--iou 0.45]
"""
import argparse
import json
import os
import re
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

MIN_IOU = 0.9
SCORE_TOL = 0.01
MAX_DET = 300
PAD = 114


def family(model, session):
    """The head of a model: 'v8' (1,4+C,N), 'v5' (B,N,5+C), 'yolox' (raw head), 'v10' (1,300,6)."""
    base = os.path.basename(model).lower()
    if "yolox" in base:
        return "yolox"
    shape = session.get_outputs()[0].shape
    if isinstance(shape[-1], int) and shape[-1] == 6:
        return "v10"
    if isinstance(shape[1], int) and shape[1] == 84:
        return "v8"
    if "yolov5" in base or (isinstance(shape[-1], int) and shape[-1] == 85):
        return "v5"
    if "yolov8" in base or "yolo11" in base:
        return "v8"
    raise SystemExit(f"error: cannot tell the head of {model} (output {shape})")


def input_size(session):
    shape = session.get_inputs()[0].shape
    return shape[2] if isinstance(shape[2], int) else 640


def resize_bilinear(img, new_w, new_h):
    """OpenCV INTER_LINEAR on uint8 HWC: half-pixel centers, edge clamp, no antialiasing."""
    h, w = img.shape[:2]

    def axis(n_dst, n_src):
        s = np.maximum((np.arange(n_dst) + 0.5) * (n_src / n_dst) - 0.5, 0.0)
        i0 = np.minimum(np.floor(s).astype(np.int64), n_src - 1)
        i1 = np.minimum(i0 + 1, n_src - 1)
        f = np.where(i0 >= n_src - 1, 0.0, s - i0)
        return i0, i1, f

    y0, y1, fy = axis(new_h, h)
    x0, x1, fx = axis(new_w, w)
    src = img.astype(np.float64)
    top = src[y0] * (1 - fy)[:, None, None] + src[y1] * fy[:, None, None]
    out = top[:, x0] * (1 - fx)[None, :, None] + top[:, x1] * fx[None, :, None]
    return np.clip(np.floor(out + 0.5), 0, 255).astype(np.uint8)


def preprocess(rgb, size, fam):
    """The input tensor (1, 3, S, S) float32 and the mapping back: (r, left, top)."""
    h, w = rgb.shape[:2]
    r = min(size / h, size / w)
    if fam == "yolox":
        new_w, new_h = int(w * r), int(h * r)
        canvas = np.full((size, size, 3), PAD, np.uint8)
        canvas[:new_h, :new_w] = resize_bilinear(rgb, new_w, new_h)
        bgr = canvas[:, :, ::-1]
        x = bgr.transpose(2, 0, 1).astype(np.float32)  # 0..255, BGR: the Megvii demo convention
        return x[None], (r, 0.0, 0.0)
    new_w, new_h = round(w * r), round(h * r)
    dw, dh = (size - new_w) / 2, (size - new_h) / 2
    top, bottom = round(dh - 0.1), round(dh + 0.1)
    left, right = round(dw - 0.1), round(dw + 0.1)
    canvas = np.full((new_h + top + bottom, new_w + left + right, 3), PAD, np.uint8)
    canvas[top:top + new_h, left:left + new_w] = resize_bilinear(rgb, new_w, new_h)
    x = canvas.transpose(2, 0, 1).astype(np.float32) / 255.0
    return x[None], (r, float(left), float(top))


def iou(a, b):
    """IoU of one box a (4,) with boxes b (N, 4), x1y1x2y2."""
    ix1, iy1 = np.maximum(a[0], b[:, 0]), np.maximum(a[1], b[:, 1])
    ix2, iy2 = np.minimum(a[2], b[:, 2]), np.minimum(a[3], b[:, 3])
    inter = np.clip(ix2 - ix1, 0, None) * np.clip(iy2 - iy1, 0, None)
    area = lambda x: (x[..., 2] - x[..., 0]) * (x[..., 3] - x[..., 1])  # noqa: E731
    return inter / np.maximum(area(a) + area(b) - inter, 1e-12)


def nms(boxes, scores, classes, iou_thr):
    """Greedy per-class NMS; returns kept indices by decreasing score."""
    order = np.argsort(-scores, kind="stable")
    keep = []
    suppressed = np.zeros(len(order), bool)
    for k, i in enumerate(order):
        if suppressed[k]:
            continue
        keep.append(i)
        rest = order[k + 1:]
        same = classes[rest] == classes[i]
        over = iou(boxes[i], boxes[rest]) > iou_thr
        suppressed[k + 1:] |= same & over
        if len(keep) == MAX_DET:
            break
    return np.array(keep, dtype=np.int64)


def cxcywh_to_xyxy(b):
    return np.stack([b[:, 0] - b[:, 2] / 2, b[:, 1] - b[:, 3] / 2,
                     b[:, 0] + b[:, 2] / 2, b[:, 1] + b[:, 3] / 2], axis=1)


def yolox_grid(pred, size):
    """Decodes the raw YOLOX head: grid offsets and exp sizes at strides 8, 16, 32."""
    out = pred.copy()
    start = 0
    for s in (8, 16, 32):
        n = size // s
        gy, gx = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
        sl = slice(start, start + n * n)
        out[sl, 0] = (pred[sl, 0] + gx.reshape(-1)) * s
        out[sl, 1] = (pred[sl, 1] + gy.reshape(-1)) * s
        out[sl, 2] = np.exp(pred[sl, 2]) * s
        out[sl, 3] = np.exp(pred[sl, 3]) * s
        start += n * n
    return out


def postprocess(out, fam, size, conf, iou_thr):
    """Boxes (N, 4) x1y1x2y2 in input pixels, scores (N,), classes (N,) of batch item 0."""
    out = out[0].astype(np.float64)
    if fam == "v10":
        keep = out[:, 4] > conf
        return out[keep, :4], out[keep, 4], out[keep, 5].astype(np.int64)
    if fam == "v8":
        pred = out.T
        cls_scores = pred[:, 4:]
    else:
        pred = yolox_grid(out, size) if fam == "yolox" else out
        cls_scores = pred[:, 5:] * pred[:, 4:5]
    classes = cls_scores.argmax(1)
    scores = cls_scores[np.arange(len(classes)), classes]
    keep = scores > conf
    boxes, scores, classes = cxcywh_to_xyxy(pred[keep, :4]), scores[keep], classes[keep]
    k = nms(boxes, scores, classes, iou_thr)
    return boxes[k], scores[k], classes[k]


def reference(session, model, rgb, conf, iou_thr):
    fam = family(model, session)
    size = input_size(session)
    x, (r, left, top) = preprocess(rgb, size, fam)
    inp = session.get_inputs()[0]
    if inp.type == "tensor(float16)":
        x = x.astype(np.float16)
    out = session.run(None, {inp.name: x})[0]
    boxes, scores, classes = postprocess(out, fam, size, conf, iou_thr)
    h, w = rgb.shape[:2]
    boxes = boxes.copy()
    boxes[:, [0, 2]] = np.clip((boxes[:, [0, 2]] - left) / r, 0, w)
    boxes[:, [1, 3]] = np.clip((boxes[:, [1, 3]] - top) / r, 0, h)
    return [{"class_id": int(c), "score": float(s), "box": [float(v) for v in b]}
            for b, s, c in zip(boxes, scores, classes)]


def match(ref, got, conf, score_tol=SCORE_TOL):
    """Returns (problems, matched pairs) between reference and yoloc detections."""
    problems, pairs = [], []
    used = set()
    for d in sorted(ref, key=lambda d: -d["score"]):
        best, best_iou = None, 0.0
        for j, g in enumerate(got):
            if j in used or g["class_id"] != d["class_id"]:
                continue
            v = float(iou(np.array(d["box"]), np.array([g["box"]]))[0])
            if v > best_iou:
                best, best_iou = j, v
        if best is not None and best_iou >= MIN_IOU and \
                abs(got[best]["score"] - d["score"]) <= score_tol:
            used.add(best)
            pairs.append((best_iou, abs(got[best]["score"] - d["score"])))
        elif d["score"] >= conf + score_tol:
            near = f"; nearest same-class yoloc box IoU {best_iou:.3f}" + (
                f" score {got[best]['score']:.4f}" if best is not None else "")
            problems.append(f"reference detection class {d['class_id']} score {d['score']:.4f} "
                            f"box {[round(v, 1) for v in d['box']]} has no match{near}")
    for j, g in enumerate(got):
        if j not in used and g["score"] >= conf + score_tol:
            problems.append(f"extra yoloc detection class {g['class_id']} score {g['score']:.4f} "
                            f"box {[round(v, 1) for v in g['box']]}")
    return problems, pairs


class ReferenceEvaluatorSession:
    """The ONNX reference evaluator behind ONNX Runtime's session interface."""

    def __init__(self, session, model):
        self._session = session
        self._evaluator = common.onnx_reference_evaluator(model)

    def get_inputs(self):
        return self._session.get_inputs()

    def get_outputs(self):
        return self._session.get_outputs()

    def run(self, names, feeds):
        with np.errstate(all="ignore"):  # its Sigmoid evaluates exp on both branches
            return self._evaluator.run(names, feeds)


def threshold_options(yoloc, conf, iou_thr):
    """`yoloc run` options that set the thresholds, when its --help lists them."""
    if not common.has_subcommand(yoloc, "run"):
        common.skip("`yoloc run` is not available in this build")
    p = subprocess.run([yoloc, "run", "--help"], capture_output=True, text=True)
    opts = []
    for pattern, value in ((r"--conf[\w-]*", conf), (r"--iou[\w-]*", iou_thr)):
        m = re.search(pattern, p.stdout)
        if m:
            opts += [m.group(0), str(value)]
    return opts


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--yoloc", required=True)
    ap.add_argument("--decoder", required=True, help="yoloc_test_decode_image")
    ap.add_argument("--model", required=True)
    ap.add_argument("--images", nargs="+", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--conf", type=float, default=0.25)
    ap.add_argument("--iou", type=float, default=0.45)
    ap.add_argument("--compile", action="store_true",
                    help="compile the model for the CPU first and detect with the artifact")
    ap.add_argument("--target", default="cpu", help="with --compile: cpu, or cuda (GPU machine)")
    ap.add_argument("--precision", default="fp32", help="with --compile: fp32, fp16 or bf16")
    args = ap.parse_args()
    for f in [args.model] + args.images:
        if not os.path.isfile(f):
            common.skip(f"{f} not found")
    if args.compile:
        common.check_known_unsupported(args.yoloc, args.model, args.work, args.target,
                                       ["--precision", args.precision])
    extra = threshold_options(args.yoloc, args.conf, args.iou)
    session = common.ort_session(args.model)
    os.makedirs(args.work, exist_ok=True)

    head = family(args.model, session)
    # v5 and YOLOX exports carry no metadata: yoloc needs the family named (an artifact has it).
    family_opts = []
    if head in ("v5", "yolox"):
        family_opts = ["--family", {"v5": "yolov5", "yolox": "yolox"}[head]]
    quantized = any(n.op_type == "DynamicQuantizeLinear" for n in common.load_nodes(args.model))
    second = ReferenceEvaluatorSession(session, args.model) if quantized else None
    target = args.model
    # A quantized model compiled for the CPU computes in fp32 (weights dequantized, activations
    # in float): its reference is the reference executor on that same rewrite, and how far it
    # lands from the int8 references is reported, not judged.
    fp32_reference = None
    if args.compile and quantized:
        p = common.run([args.yoloc, "run", args.model, *args.images, "--json", "-", *extra,
                        *family_opts, "--precision", "fp32"], "yoloc run --precision fp32")
        fp32_reference = json.loads(p.stdout)
    if args.compile:
        target = os.path.join(args.work, "model.ycm")
        common.run([args.yoloc, "compile", args.model, "-o", target, "--force", "--target",
                    args.target, "--precision", args.precision, *family_opts,
                    *os.environ.get("COMPILE_OPTIONS", "").split()], "yoloc compile")
        family_opts = []
    p = common.run([args.yoloc, "run", target, *args.images, "--json", "-", *extra, *family_opts],
                   "yoloc run")
    try:
        results = json.loads(p.stdout)
    except json.JSONDecodeError as e:
        print(f"FAIL: `yoloc run --json -` printed no JSON on stdout ({e}):\n{p.stdout[:2000]}")
        return 1
    ok = True
    name = os.path.basename(args.model)
    for image, res in zip(args.images, results):
        pixels = os.path.join(args.work, os.path.basename(image) + ".npy")
        common.run([args.decoder, image, pixels], "image decoder")
        rgb = np.load(pixels)
        h, w = rgb.shape[:2]
        problems = []
        if (res.get("width"), res.get("height")) != (w, h):
            problems.append(f"image size {res.get('width')}x{res.get('height')}, expected {w}x{h}")
        ref = reference(session, args.model, rgb, args.conf, args.iou)
        # Activations stored in 16 bits move scores by up to about 1e-2.
        score_tol = SCORE_TOL if args.precision == "fp32" else 0.02
        if fp32_reference is not None:
            _, int8_pairs = match(ref, res.get("detections", []), args.conf, score_tol=1.0)
            print(f"     {os.path.basename(image)}: compiled fp32 vs ONNX Runtime's int8 run: "
                  f"max score diff {max((p[1] for p in int8_pairs), default=0.0):.4f} (reported)")
            ref = fp32_reference[args.images.index(image)]["detections"]
        elif second is not None:
            ref2 = reference(second, args.model, rgb, args.conf, args.iou)
            _, ref_pairs = match(ref, ref2, args.conf, score_tol=1.0)
            spread = max((p[1] for p in ref_pairs), default=0.0)
            score_tol = max(SCORE_TOL, 1.5 * spread)
            print(f"     {os.path.basename(image)}: ONNX Runtime and the ONNX reference evaluator "
                  f"differ by up to {spread:.4f} in score: tolerance {score_tol:.4f}")
        probs, pairs = match(ref, res.get("detections", []), args.conf, score_tol)
        problems += probs
        ok &= not problems
        figure = (f"{len(pairs)} matched, min IoU {min(p[0] for p in pairs):.4f}, max score diff "
                  f"{max(p[1] for p in pairs):.4f}" if pairs else "0 matched")
        print(f"{'ok  ' if not problems else 'FAIL'} {name} {os.path.basename(image)}: "
              f"{len(ref)} reference, {len(res.get('detections', []))} yoloc detections; {figure}")
        for pr in problems:
            print(f"     {pr}")
    if len(results) != len(args.images):
        print(f"FAIL: yoloc gave {len(results)} results for {len(args.images)} images")
        ok = False
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
