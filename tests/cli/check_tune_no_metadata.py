#!/usr/bin/env python3
"""`yoloc tune` on a model without metadata (yolov8n with its metadata_props removed, so its
family cannot be told) needs no --family: it lists the same tasks as the model with metadata.
`yoloc run`, which decodes detections, still asks for --family.

usage: check_tune_no_metadata.py --yoloc BIN --model yolov8n.onnx --image bus.jpg --work DIR
"""
import argparse
import os
import subprocess
import sys

SKIP = 77


def tasks(yoloc, model, work):
    p = subprocess.run([yoloc, "tune", model, "--list-tasks", "--records",
                        os.path.join(work, "unused.jsonl")], capture_output=True, text=True)
    print(f"tune --list-tasks {os.path.basename(model)}: exit {p.returncode} {p.stderr.strip()}")
    # The first line names the model file; the task table follows.
    return p.returncode, p.stdout.splitlines()[1:]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--yoloc", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--image", required=True)
    ap.add_argument("--work", required=True)
    a = ap.parse_args()
    if not os.path.isfile(a.model):
        print(f"skipped: {a.model} not found")
        return SKIP
    try:
        import onnx
    except ImportError as e:
        print(f"skipped: onnx is needed ({e})")
        return SKIP
    os.makedirs(a.work, exist_ok=True)
    m = onnx.load(a.model)
    del m.metadata_props[:]
    bare = os.path.join(a.work, "no-metadata.onnx")
    onnx.save(m, bare)

    failed = False
    rc_ref, ref = tasks(a.yoloc, a.model, a.work)
    rc, got = tasks(a.yoloc, bare, a.work)
    if rc_ref != 0 or rc != 0:
        print("FAIL: tune --list-tasks failed")
        failed = True
    elif got != ref or not got:
        print("FAIL: the tasks differ:\n--- with metadata\n" + "\n".join(ref) +
              "\n--- without\n" + "\n".join(got))
        failed = True
    p = subprocess.run([a.yoloc, "run", bare, a.image, "--json", os.path.join(a.work, "d.json")],
                       capture_output=True, text=True)
    print(f"run without metadata: exit {p.returncode} {p.stderr.strip()}")
    if p.returncode != 1 or "--family" not in p.stderr:
        print("FAIL: run should still ask for --family")
        failed = True
    print("FAIL" if failed else "ok")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
