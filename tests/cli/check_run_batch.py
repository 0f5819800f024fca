#!/usr/bin/env python3
"""A batch-8 artifact detects what a batch-1 artifact does: a model with a dynamic batch
(yolov5n-fp16-dynbatch) is compiled at batch 1 and at batch 8, and on the same folder of images (9 by default: one full batch and one padded
with blank inputs)
  - `yoloc run --save-txt --json` gives the same detections (class, box, score) and labels,
  - `yoloc eval` gives the same figures,
  - the C API's single-image call (libyoloc_runtime through ctypes) on the batch-8 artifact
    gives the batch-1 artifact's detections.
Prints the largest box and score differences.

usage: check_run_batch.py --yoloc BIN --runtime LIBYOLOC_RUNTIME.so --model M.onnx
                          [--family F] --data COCO_EVAL_DIR --work DIR [--images N] [--batch 8]
"""
import argparse
import ctypes
import json
import os
import shutil
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
from common import run, skip  # noqa: E402

BOX_TOL = 0.05    # pixels
SCORE_TOL = 1e-3
CONF = 0.25


def fail(message):
    print(f"FAIL: {message}")
    sys.exit(1)


def dataset(data, work, n):
    """A folder with the first n images of data/images and their labels (symlinks)."""
    names = sorted(f for f in os.listdir(os.path.join(data, "images"))
                   if f.lower().endswith((".jpg", ".jpeg", ".png")))
    names = names if n <= 0 else names[:n]
    for sub in ("images", "labels"):
        os.makedirs(os.path.join(work, sub))
    for name in names:
        os.symlink(os.path.abspath(os.path.join(data, "images", name)),
                   os.path.join(work, "images", name))
        label = os.path.splitext(name)[0] + ".txt"
        if os.path.exists(os.path.join(data, "labels", label)):
            os.symlink(os.path.abspath(os.path.join(data, "labels", label)),
                       os.path.join(work, "labels", label))
    return names


def compare(a, b, where, stats):
    """Problems between two detection lists (yoloc JSON detections), pairing them in order;
    detections within SCORE_TOL of the threshold may be missing on either side."""
    strong = lambda ds: [d for d in ds if d["score"] >= CONF + SCORE_TOL]  # noqa: E731
    if len(strong(a)) != len(strong(b)):
        return [f"{where}: {len(a)} vs {len(b)} detections"]
    problems = []
    for da, db in zip(a, b):
        box = max(abs(x - y) for x, y in zip(da["box"], db["box"]))
        score = abs(da["score"] - db["score"])
        stats["box"] = max(stats["box"], box)
        stats["score"] = max(stats["score"], score)
        if da["class_id"] != db["class_id"] or box > BOX_TOL or score > SCORE_TOL:
            problems.append(f"{where}: class {da['class_id']} {da['score']:.4f} {da['box']} vs "
                            f"class {db['class_id']} {db['score']:.4f} {db['box']}")
    return problems


def c_api_detections(runtime, artifact, image):
    class Det(ctypes.Structure):
        _fields_ = [("x1", ctypes.c_float), ("y1", ctypes.c_float), ("x2", ctypes.c_float),
                    ("y2", ctypes.c_float), ("score", ctypes.c_float), ("class_id", ctypes.c_int),
                    ("class_name", ctypes.c_char_p)]

    class Options(ctypes.Structure):
        _fields_ = [("threads", ctypes.c_int), ("conf", ctypes.c_float), ("iou", ctypes.c_float),
                    ("max_det", ctypes.c_int), ("public_key_file", ctypes.c_char_p),
                    ("device", ctypes.c_int), ("in_flight", ctypes.c_int)]

    lib = ctypes.CDLL(runtime)
    lib.yoloc_last_error.restype = ctypes.c_char_p
    options = Options()
    lib.yoloc_options_init(ctypes.byref(options))
    options.conf, options.iou = CONF, 0.7  # yoloc run's thresholds
    det = ctypes.c_void_p()
    if lib.yoloc_detector_load(artifact.encode(), ctypes.byref(options), ctypes.byref(det)) != 0:
        fail(f"C API: loading {artifact}: {lib.yoloc_last_error().decode()}")
    out, count = ctypes.POINTER(Det)(), ctypes.c_size_t()
    if lib.yoloc_detect_file(det, image.encode(), ctypes.byref(out), ctypes.byref(count)) != 0:
        fail(f"C API: yoloc_detect_file on a batch-8 artifact: {lib.yoloc_last_error().decode()}")
    dets = [{"class_id": out[i].class_id, "score": out[i].score,
             "box": [out[i].x1, out[i].y1, out[i].x2, out[i].y2]} for i in range(count.value)]
    lib.yoloc_detections_free(out)
    lib.yoloc_detector_free(det)
    return dets


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--yoloc", required=True)
    ap.add_argument("--runtime", required=True, help="libyoloc_runtime.so")
    ap.add_argument("--model", required=True)
    ap.add_argument("--data", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--images", type=int, default=9, help="images to use (0: all)")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--family", default="", help="compile --family, for models that do not say")
    a = ap.parse_args()
    for f in (a.model, a.data):
        if not os.path.exists(f):
            skip(f"{f} not found")
    shutil.rmtree(a.work, ignore_errors=True)
    os.makedirs(a.work)
    ds = os.path.join(a.work, "data")
    names = dataset(a.data, ds, a.images)
    images = os.path.join(ds, "images")

    out = {}
    for batch in (1, a.batch):
        art = os.path.join(a.work, f"b{batch}.ycm")
        family = ["--family", a.family] if a.family else []
        run([a.yoloc, "compile", a.model, "-o", art, "--batch", str(batch), *family],
            f"compile batch {batch}")
        save = os.path.join(a.work, f"run-b{batch}")
        p = run([a.yoloc, "run", art, images, "--save-txt", "--save-dir", save, "--json",
                 save + ".json", "--conf", str(CONF)], f"run batch {batch}")
        with open(save + ".json") as f:
            results = json.load(f)
        labels = {}
        for name in sorted(os.listdir(os.path.join(save, "labels"))):
            with open(os.path.join(save, "labels", name)) as f:
                labels[name] = f.read().splitlines()
        p = run([a.yoloc, "eval", art, "--data", ds, "--json", save + "-eval.json"],
                f"eval batch {batch}")
        with open(save + "-eval.json") as f:
            ev = json.load(f)
        out[batch] = (art, results, labels, ev)
        print(f"batch {batch}: {p.stdout.splitlines()[1].strip() if p.stdout else ''}")

    (art1, r1, l1, e1), (art8, r8, l8, e8) = out[1], out[a.batch]
    problems, stats = [], {"box": 0.0, "score": 0.0}
    if [r["image"] for r in r1] != [r["image"] for r in r8] or len(r1) != len(names):
        problems.append(f"images differ: {len(r1)} vs {len(r8)} results for {len(names)} images")
    for x, y in zip(r1, r8):
        problems += compare(x["detections"], y["detections"], os.path.basename(x["image"]), stats)
    if sorted(l1) != sorted(l8) or len(l1) != len(names):
        problems.append(f"label files differ: {sorted(l1)[:3]}... vs {sorted(l8)[:3]}...")
    for name in l1:
        if len(l1[name]) != len(l8.get(name, [])):
            problems.append(f"labels/{name}: {len(l1[name])} vs {len(l8.get(name, []))} lines")
    for key in ("map50", "map50_95", "precision", "recall"):
        if abs(e1[key] - e8[key]) > 1e-3:
            problems.append(f"eval {key}: batch 1 {e1[key]:.4f}, batch {a.batch} {e8[key]:.4f}")
    first = os.path.join(images, names[0])
    c_dets = [d for d in c_api_detections(a.runtime, art8, first)]
    problems += compare(r1[0]["detections"], c_dets, f"C API {names[0]}", stats)
    for pr in problems:
        print(f"  FAIL: {pr}")
    ndet = sum(len(r["detections"]) for r in r1)
    print(f"{'FAIL' if problems else 'ok  '} batch 1 vs batch {a.batch}: {len(names)} images, "
          f"{ndet} detections, max box diff {stats['box']:.2g} px, max score diff "
          f"{stats['score']:.2g}; mAP50-95 {e1['map50_95']:.4f} vs {e8['map50_95']:.4f}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
