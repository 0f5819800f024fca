#!/usr/bin/env python3
"""Independent COCO box mAP of a detections JSON, computed with pycocotools.

Checks `yoloc eval`: run
    yoloc eval MODEL --data DIR --json summary.json --dump-detections dets.json
    python3 tests/e2e/independent_eval.py --data DIR --detections dets.json --compare summary.json

The detections JSON is the `yoloc run --json` format: a list of {"image": path, "detections":
[{"class_id": i, "score": f, "box": [x1, y1, x2, y2]}]}. The ground truth is read here from
DIR/labels/<stem>.txt (YOLO "class cx cy w h", normalised), with the image sizes read from the
image files' own headers, so nothing but the boxes and scores comes from yoloc. The protocol is
yoloc's: IoU thresholds 0.50:0.05:0.95, all areas, at most 300 detections per image, AP averaged
over the classes present in the ground truth.

Precision and recall are Ultralytics val's (ap_per_class, re-implemented here in numpy): per
class, the detections matched by pycocotools at IoU 0.5 give precision and recall curves over
1000 confidences; P and R are read where the smoothed mean F1 over the classes is highest.

Prints {"map50": f, "map50_95": f, "precision": f, "recall": f, "images": n, "classes":
{class_id: {"map50", "map50_95", "precision", "recall"}}}; with --compare, exits 1 when yoloc's
figures differ by more than --tol (default 0.005).
"""
import argparse
import contextlib
import io
import json
import os
import struct
import sys

import numpy as np
from pycocotools.coco import COCO
from pycocotools.cocoeval import COCOeval

IMAGE_EXTENSIONS = (".jpg", ".jpeg", ".png", ".bmp")
MAX_DETS = 300


def image_size(path):
    """(width, height) from a JPEG, PNG or BMP header."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] == b"\x89PNG\r\n\x1a\n":
        return struct.unpack(">II", data[16:24])
    if data[:2] == b"BM":
        w, h = struct.unpack("<ii", data[18:26])
        return w, abs(h)
    if data[:2] == b"\xff\xd8":
        i = 2
        while i + 4 <= len(data):
            if data[i] != 0xFF:
                i += 1
                continue
            marker = data[i + 1]
            if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7 or marker == 0xFF:
                i += 1 if marker == 0xFF else 2
                continue
            length = struct.unpack(">H", data[i + 2:i + 4])[0]
            if marker in (0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD,
                          0xCE, 0xCF):
                h, w = struct.unpack(">HH", data[i + 5:i + 9])
                return w, h
            i += 2 + length
    raise ValueError(f"{path}: cannot read the image size (not a JPEG, PNG or BMP)")


def load_ground_truth(data_dir):
    images_dir = os.path.join(data_dir, "images")
    files = sorted(f for f in os.listdir(images_dir) if f.lower().endswith(IMAGE_EXTENSIONS))
    images, annotations, classes = [], [], set()
    for image_id, name in enumerate(files, start=1):
        w, h = image_size(os.path.join(images_dir, name))
        images.append({"id": image_id, "file_name": name, "width": w, "height": h})
        label = os.path.join(data_dir, "labels", os.path.splitext(name)[0] + ".txt")
        if not os.path.exists(label):
            continue
        with open(label) as f:
            for line in f:
                if not line.strip():
                    continue
                c, cx, cy, bw, bh = line.split()
                c, cx, cy, bw, bh = int(float(c)), float(cx), float(cy), float(bw), float(bh)
                x1, y1 = (cx - bw / 2) * w, (cy - bh / 2) * h
                box = [x1, y1, (cx + bw / 2) * w - x1, (cy + bh / 2) * h - y1]
                classes.add(c)
                annotations.append({"id": len(annotations) + 1, "image_id": image_id,
                                    "category_id": c + 1, "bbox": box,
                                    "area": box[2] * box[3], "iscrowd": 0})
    return images, annotations, classes


def load_detections(path, images):
    by_name = {im["file_name"]: im["id"] for im in images}
    with open(path) as f:
        results = json.load(f)
    dets, seen = [], set()
    for r in results:
        name = os.path.basename(r["image"])
        if name not in by_name:
            raise ValueError(f"{path}: image '{r['image']}' is not in the dataset")
        seen.add(name)
        for d in r["detections"]:
            x1, y1, x2, y2 = d["box"]
            dets.append({"image_id": by_name[name], "category_id": d["class_id"] + 1,
                         "bbox": [x1, y1, x2 - x1, y2 - y1], "score": d["score"]})
    if seen != set(by_name):
        raise ValueError(f"{path}: has {len(seen)} of the dataset's {len(by_name)} images")
    return dets


def ultralytics_precision_recall(tp, conf, pred_cls, target_counts):
    """Ultralytics' ap_per_class (ultralytics/utils/metrics.py) for P and R: tp (N,) bools at
    IoU 0.5, conf (N,), pred_cls (N,), target_counts {class: ground-truth count}. Returns
    ({class: (p, r)}, mean p, mean r)."""
    eps = 1e-16
    i = np.argsort(-conf, kind="stable")
    tp, conf, pred_cls = tp[i], conf[i], pred_cls[i]
    classes = sorted(target_counts)
    x = np.linspace(0, 1, 1000)
    p_curve, r_curve = np.zeros((len(classes), 1000)), np.zeros((len(classes), 1000))
    for ci, c in enumerate(classes):
        k = pred_cls == c
        n_l, n_p = target_counts[c], k.sum()
        if n_p == 0 or n_l == 0:
            continue
        fpc = (1 - tp[k]).cumsum(0)
        tpc = tp[k].cumsum(0)
        recall = tpc / (n_l + eps)
        r_curve[ci] = np.interp(-x, -conf[k], recall, left=0)
        precision = tpc / (tpc + fpc)
        p_curve[ci] = np.interp(-x, -conf[k], precision, left=1)
    f1 = 2 * p_curve * r_curve / (p_curve + r_curve + eps)
    y = f1.mean(0)
    nf = round(len(y) * 0.1 * 2) // 2 + 1  # Ultralytics' smooth(y, f=0.1)
    pad = np.ones(nf // 2)
    smoothed = np.convolve(np.concatenate((pad * y[0], y, pad * y[-1])), np.ones(nf) / nf,
                           mode="valid")
    best = smoothed.argmax()
    p, r = p_curve[:, best], r_curve[:, best]
    return ({c: (float(p[ci]), float(r[ci])) for ci, c in enumerate(classes)},
            float(p.mean()), float(r.mean()))


def evaluate(data_dir, detections_path):
    images, annotations, classes = load_ground_truth(data_dir)
    dets = load_detections(detections_path, images)
    summary = {"map50": 0.0, "map50_95": 0.0, "images": len(images)}
    if not dets or not annotations:
        return summary
    gt = COCO()
    gt.dataset = {"images": images, "annotations": annotations,
                  "categories": [{"id": c + 1, "name": str(c)} for c in sorted(classes)]}
    with contextlib.redirect_stdout(io.StringIO()):
        gt.createIndex()
        dt = gt.loadRes(dets)
        e = COCOeval(gt, dt, "bbox")
        e.params.imgIds = [im["id"] for im in images]
        # Every category that has ground truth; detections of other classes are never matched.
        e.params.catIds = sorted(c + 1 for c in classes)
        e.params.maxDets = [1, 10, MAX_DETS]
        e.evaluate()
        e.accumulate()
    # precision[T, R, K, A, M]: area range 0 is "all", maxDets index 2 is 300; -1 marks classes
    # without ground truth.
    p = e.eval["precision"][:, :, :, 0, 2]
    summary["map50_95"] = float(np.mean(p[p > -1]))
    p50 = p[0]
    summary["map50"] = float(np.mean(p50[p50 > -1]))
    # Per class: AP, and the detections pycocotools matched at IoU 0.5 (area "all").
    tp, conf, pred_cls, counts = [], [], [], {}
    for ev in e.evalImgs:
        if ev is None or ev["aRng"] != e.params.areaRng[0]:
            continue
        c = ev["category_id"] - 1
        counts[c] = counts.get(c, 0) + int(np.sum(np.logical_not(ev["gtIgnore"])))
        tp += [bool(m > 0) for m in ev["dtMatches"][0]]
        conf += list(ev["dtScores"])
        pred_cls += [c] * len(ev["dtScores"])
    pr, summary["precision"], summary["recall"] = ultralytics_precision_recall(
        np.array(tp, dtype=np.float64), np.array(conf, dtype=np.float64), np.array(pred_cls),
        {c: n for c, n in counts.items() if n > 0})
    summary["classes"] = {}
    for k, cat in enumerate(e.params.catIds):
        pk = p[:, :, k]
        summary["classes"][int(cat) - 1] = {
            "map50": float(np.mean(pk[0][pk[0] > -1])) if np.any(pk[0] > -1) else 0.0,
            "map50_95": float(np.mean(pk[pk > -1])) if np.any(pk > -1) else 0.0,
            "precision": pr.get(cat - 1, (0.0, 0.0))[0],
            "recall": pr.get(cat - 1, (0.0, 0.0))[1]}
    return summary


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", required=True, help="dataset folder with images/ and labels/")
    ap.add_argument("--detections", required=True, help="detections JSON (yoloc run format)")
    ap.add_argument("--compare", help="yoloc eval --json output to check against")
    ap.add_argument("--tol", type=float, default=0.005)
    args = ap.parse_args()
    summary = evaluate(args.data, args.detections)
    print(json.dumps(summary))
    if args.compare:
        with open(args.compare) as f:
            theirs = json.load(f)
        bad = [k for k in ("map50", "map50_95") if abs(theirs[k] - summary[k]) > args.tol]
        if theirs.get("images") != summary["images"]:
            bad.append("images")
        if bad:
            print(f"MISMATCH in {bad}: yoloc {theirs} vs pycocotools {summary}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
