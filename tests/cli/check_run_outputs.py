#!/usr/bin/env python3
"""What `yoloc run` writes, checked against its own yoloc-format JSON with the conversions done
here: --save-txt labels (class cx cy w h normalised; --save-conf adds the score), --format
ultralytics and coco, --classes, the speed line, and --iou's default (0.7, Ultralytics
predict's). Labels are never written over an input.

usage: check_run_outputs.py --yoloc BIN --model yolov8n.onnx --images DIR_WITH_bus_AND_zidane
                            --work DIR
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
from common import run, skip  # noqa: E402

problems = []
COCO91 = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25,
          27, 28, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 46, 47, 48, 49, 50, 51,
          52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63, 64, 65, 67, 70, 72, 73, 74, 75, 76, 77,
          78, 79, 80, 81, 82, 84, 85, 86, 87, 88, 89, 90]


def expect(cond, what):
    print(f"{'ok  ' if cond else 'FAIL'} {what}")
    if not cond:
        problems.append(what)


def close(a, b, tol=2e-6):
    return len(a) == len(b) and all(abs(x - y) <= tol for x, y in zip(a, b))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--yoloc", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--images", required=True, help="folder with bus.jpg and zidane.jpg")
    ap.add_argument("--work", required=True)
    a = ap.parse_args()
    bus, zidane = (os.path.join(a.images, n) for n in ("bus.jpg", "zidane.jpg"))
    for f in (a.model, bus, zidane):
        if not os.path.exists(f):
            skip(f"{f} not found")
    shutil.rmtree(a.work, ignore_errors=True)
    os.makedirs(a.work)
    numbered = os.path.join(a.work, "000000000139.jpg")
    shutil.copy(bus, numbered)
    art = os.path.join(a.work, "yolov8n.ycm")
    run([a.yoloc, "compile", a.model, "-o", art], "compile")
    inputs = [numbered, zidane]

    def run_json(*extra):
        p = run([a.yoloc, "run", art, *inputs, "--json", "-", *extra], "run " + " ".join(extra))
        return json.loads(p.stdout), p.stderr

    ours, stderr = run_json()
    wh = [(r["width"], r["height"]) for r in ours]

    # --save-txt / --save-conf.
    save = os.path.join(a.work, "save")
    p = run([a.yoloc, "run", art, *inputs, "--save-txt", "--save-conf", "--save-dir", save],
            "run --save-txt")
    for r, (w, h) in zip(ours, wh):
        stem = os.path.splitext(os.path.basename(r["image"]))[0]
        with open(os.path.join(save, "labels", stem + ".txt")) as f:
            lines = [[float(v) for v in line.split()] for line in f if line.strip()]
        want = [[d["class_id"], (d["box"][0] + d["box"][2]) / 2 / w,
                 (d["box"][1] + d["box"][3]) / 2 / h, (d["box"][2] - d["box"][0]) / w,
                 (d["box"][3] - d["box"][1]) / h, d["score"]] for d in r["detections"]]
        expect(len(lines) == len(want) and all(close(x, y) for x, y in zip(lines, want)),
               f"--save-txt --save-conf: labels/{stem}.txt is class cx cy w h conf, normalised "
               f"({len(lines)} lines)")
    expect("labels written to" in p.stdout, "--save-txt: says where the labels went")

    # Labels are never written over an input.
    trap = os.path.join(a.work, "trap", "labels")
    os.makedirs(trap)
    fake = os.path.join(trap, "picture.txt")
    shutil.copy(bus, fake)
    p = subprocess.run([a.yoloc, "run", art, fake, "--save-txt", "--save-dir",
                        os.path.dirname(trap)], capture_output=True, text=True)
    with open(fake, "rb") as f, open(bus, "rb") as g:
        intact = f.read() == g.read()
    expect(p.returncode == 1 and "overwrite" in p.stderr and intact,
           f"--save-txt refuses to write over an input ({p.stderr.strip()})")

    # --format ultralytics and coco hold the same detections.
    ultra, _ = run_json("--format", "ultralytics")
    ok = len(ultra) == len(ours)
    for u, r in zip(ultra, ours):
        ok &= u["image"] == r["image"] and len(u["detections"]) == len(r["detections"])
        for x, d in zip(u["detections"], r["detections"]):
            b = x["box"]
            ok &= (x["class"] == d["class_id"] and x["name"] == d["class_name"] and
                   close([x["confidence"]], [d["score"]], 1e-5) and
                   close([b["x1"], b["y1"], b["x2"], b["y2"]], d["box"], 1e-3))
    expect(ok, "--format ultralytics: name, class, confidence, box {x1, y1, x2, y2} per image")
    coco, _ = run_json("--format", "coco")
    want = [(139 if i == 0 else 1, COCO91[d["class_id"]],
             [d["box"][0], d["box"][1], d["box"][2] - d["box"][0], d["box"][3] - d["box"][1]],
             d["score"]) for i, r in enumerate(ours) for d in r["detections"]]
    ok = len(coco) == len(want)
    for c, (image_id, cat, bbox, score) in zip(coco, want):
        ok &= (c["image_id"] == image_id and c["category_id"] == cat and
               close(c["bbox"], bbox, 1e-3) and close([c["score"]], [score], 1e-6))
    expect(ok, "--format coco: image_id from a numeric file name (else the index), COCO's "
               "category ids, bbox [x, y, w, h]")

    # --classes keeps those classes only.
    persons, _ = run_json("--classes", "0", "5")
    want = [[d for d in r["detections"] if d["class_id"] in (0, 5)] for r in ours]
    expect([r["detections"] for r in persons] == want and any(want),
           "--classes 0 5: the detections of classes 0 and 5, nothing else")

    # The speed line, on stderr with --json - (stdout is the JSON alone).
    m = re.search(r"Speed: (\d+\.\d)ms preprocess, (\d+\.\d)ms inference, (\d+\.\d)ms "
                  r"postprocess per image at shape \(1, 3, 640, 640\)", stderr)
    expect(m is not None and float(m.group(2)) > 0, f"the speed line ({stderr.strip()[-160:]})")

    # --iou defaults to 0.7.
    h = run([a.yoloc, "run", "--help"], "run --help").stdout
    expect(re.search(r"--iou\s+FLOAT\S*(\s.*)?=0\.7\b", h) is not None, "--iou's default is 0.7")
    explicit, _ = run_json("--iou", "0.7")
    expect(explicit == ours, "run without --iou is run --iou 0.7")
    print("FAIL" if problems else "ok", f"{len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
