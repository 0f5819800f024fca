#!/usr/bin/env python3
"""Checks `yoloc eval` against an independent evaluation: the model is compiled for this CPU
(`yoloc compile`, as a user deploys it; the ONNX model on the reference executor takes minutes),
the artifact's detections on the set are scored by yoloc and again with pycocotools
(tests/e2e/independent_eval.py), and both mAP50 and mAP50-95 must agree within 0.005, overall
and per class; precision and recall (Ultralytics' best-F1 point, computed there in numpy from
pycocotools' matches) within 0.005 too. The table eval prints must show the JSON's figures.
Prints the overall figures.

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
    table = common.run([args.yoloc, "eval", artifact, "--data", args.data, "--json", ours,
                        "--dump-detections", dets], "yoloc eval").stdout
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
    for key in ("map50", "map50_95", "precision", "recall"):
        diff = abs(mine[key] - theirs[key])
        ok &= diff <= TOLERANCE
        print(f"{'ok  ' if diff <= TOLERANCE else 'FAIL'} {os.path.basename(args.model)} {key}: "
              f"yoloc {mine[key]:.4f}, pycocotools/numpy {theirs[key]:.4f} (|diff| {diff:.2g} "
              f"<= {TOLERANCE})")
    classes = {str(c["class_id"]): c for c in mine["classes"]}
    if sorted(classes) != sorted(theirs["classes"]):
        print(f"FAIL classes: yoloc {sorted(classes)}, pycocotools {sorted(theirs['classes'])}")
        ok = False
    worst = {}
    for cid, ref in theirs["classes"].items():
        for key, value in ref.items():
            diff = abs(classes.get(cid, {}).get(key, float("inf")) - value)
            worst[key] = max(worst.get(key, 0.0), diff)
            if diff > TOLERANCE:
                print(f"FAIL class {cid} {key}: yoloc {classes.get(cid, {}).get(key)}, "
                      f"reference {value:.4f}")
                ok = False
    print(f"     per class ({len(classes)}), largest |diff|: " +
          ", ".join(f"{k} {v:.2g}" for k, v in sorted(worst.items())))
    # The table: a header, then 'all' with the overall figures as Ultralytics prints them.
    rows = [line.split() for line in table.splitlines()]
    all_row = next((r for r in rows if r and r[0] == "all"), None)
    want = ["all", str(mine["images"]), str(mine["instances"])] + [
        f"{mine[k]:.3g}" for k in ("precision", "recall", "map50", "map50_95")]
    if all_row != want or not any(r[:1] == ["Class"] for r in rows) or \
            len([r for r in rows if len(r) >= 7]) != len(classes) + 2:
        print(f"FAIL the table's 'all' row {all_row}, expected {want} and one row per class:\n"
              f"{table}")
        ok = False
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
