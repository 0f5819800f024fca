#!/usr/bin/env python3
"""Checks `yoloc eval` against an independent evaluation: the model is compiled for this CPU
(`yoloc compile`, as a user deploys it; the ONNX model on the reference executor takes minutes),
the artifact's detections on the set are scored by yoloc and again with pycocotools
(tests/e2e/independent_eval.py), and both mAP50 and mAP50-95 must agree within 0.005. Prints
both figures.

usage: check_eval.py --yoloc BIN --model MODEL.onnx --data DIR --work DIR
"""
import argparse
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

TOLERANCE = 0.005


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--yoloc", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--data", required=True)
    ap.add_argument("--work", required=True)
    args = ap.parse_args()
    for f in (args.model, args.data):
        if not os.path.exists(f):
            common.skip(f"{f} not found")
    try:
        import pycocotools  # noqa: F401
    except ImportError:
        common.skip("pycocotools is not installed (pip install pycocotools)")
    os.makedirs(args.work, exist_ok=True)
    ours = os.path.join(args.work, "eval.json")
    dets = os.path.join(args.work, "detections.json")
    artifact = os.path.join(args.work, "model.ycm")
    common.run([args.yoloc, "compile", args.model, "-o", artifact, "--force"], "yoloc compile")
    common.run([args.yoloc, "eval", artifact, "--data", args.data, "--json", ours,
                "--dump-detections", dets], "yoloc eval")
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "independent_eval.py")
    p = subprocess.run([sys.executable, script, "--data", args.data, "--detections", dets],
                       capture_output=True, text=True)
    if p.returncode != 0:
        print(f"FAIL: independent evaluation failed:\n{p.stdout}\n{p.stderr}")
        return 1
    theirs = json.loads(p.stdout.strip().splitlines()[-1])
    with open(ours) as f:
        mine = json.load(f)
    ok = True
    for key in ("map50", "map50_95"):
        diff = abs(mine[key] - theirs[key])
        ok &= diff <= TOLERANCE
        print(f"{'ok  ' if diff <= TOLERANCE else 'FAIL'} {os.path.basename(args.model)} {key}: "
              f"yoloc {mine[key]:.4f}, pycocotools {theirs[key]:.4f} (|diff| {diff:.2g} <= "
              f"{TOLERANCE})")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
