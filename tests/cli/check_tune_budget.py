#!/usr/bin/env python3
"""`yoloc tune --time-budget` bounds the whole command (the model's import, the search, the
re-measurements): a run with a small budget on yolov8n ends within the budget plus SLACK
seconds (the process's start and exit), and still measures something.

usage: check_tune_budget.py --yoloc BIN --model yolov8n.onnx --work DIR [--budget 15]
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
from common import skip  # noqa: E402

SLACK = 2.0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--yoloc", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--budget", type=float, default=15)
    a = ap.parse_args()
    if not os.path.exists(a.model):
        skip(f"no model {a.model}")
    shutil.rmtree(a.work, ignore_errors=True)
    os.makedirs(a.work)
    records = os.path.join(a.work, "records.jsonl")
    t0 = time.monotonic()
    p = subprocess.run([a.yoloc, "tune", a.model, "--records", records, "--time-budget",
                        f"{a.budget:g}s", "--quiet"], capture_output=True, text=True)
    wall = time.monotonic() - t0
    if p.returncode != 0:
        print(f"FAIL: tune exited with {p.returncode}:\n{p.stdout[-2000:]}\n{p.stderr[-2000:]}")
        return 1
    with open(records) as f:
        n = sum(1 for line in f if line.strip() and "config" in json.loads(line))
    ok = wall <= a.budget + SLACK and n > 0
    print(f"{'ok  ' if ok else 'FAIL'} tune --time-budget {a.budget:g}s ran {wall:.1f} s "
          f"(<= {a.budget + SLACK:g} s) and wrote {n} records")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
