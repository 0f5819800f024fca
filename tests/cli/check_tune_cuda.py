#!/usr/bin/env python3
"""`yoloc tune --target cuda` and `compile --target cuda --records` on a shared model's first
layers (compile --outputs), quick:
  - `tune --target cuda --list-tasks` needs no GPU and lists the CUDA tasks, yolov8n's 9
    back-to-back pairs among them (marked, outside the shares);
  - `compile --target cuda --records FILE` applies a hand-written record of one task's key (its
    default config: always valid): that task's launches say "tuned": true in the manifest, the
    others not; a record of another arch is not applied;
  - `tune --target cuda` without a GPU fails with a clear error (no crash, no hang); with a GPU it
    runs a tiny budget, and compile applies what it recorded.

usage: check_tune_cuda.py --yoloc BIN --model MODEL.onnx --work DIR
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
from common import read_artifact, run, skip  # noqa: E402

OUTPUT = "/model.2/cv1/act/Mul_output_0"  # yolov8n: three convs in


def fail(message):
    print(f"FAIL: {message}")
    sys.exit(1)


def launch_tasks(path):
    manifest, _ = read_artifact(path)
    return [launch["task"] for launch in manifest["program"]["launches"] if "task" in launch
            and launch["task"]]


def record(key, template, config, arch):
    return {"format": 1, "tool": None, "key": key, "template": template,
            "target": {"kind": "cuda", "arch": arch, "device": "NVIDIA Test GPU", "device_id": 0},
            "config": config, "batch": 1, "threads": 1, "clock": "wall", "mode": "kernel",
            "times": [1e-6], "median": 1e-6, "error": "", "flops": 1.0,
            "time": "2026-01-01T00:00:00Z"}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--yoloc", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--work", required=True)
    args = ap.parse_args()
    if not os.path.exists(args.model):
        skip(f"no model {args.model}")
    help_text = subprocess.run([args.yoloc, "compile", "--help"], capture_output=True,
                               text=True).stdout
    if "cuda" not in help_text:
        skip("this yoloc has no CUDA target")
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    work = lambda name: os.path.join(args.work, name)  # noqa: E731
    version = run([args.yoloc, "--version"], "yoloc --version").stdout.split()[-1]

    listing = run([args.yoloc, "tune", args.model, "--target", "cuda", "--list-tasks"],
                  "tune --target cuda --list-tasks").stdout
    if not re.search(r"\d+ kernels, \d+ tasks", listing) or "tc_conv" not in listing:
        fail(f"tune --target cuda --list-tasks lists no CUDA tasks:\n{listing}")
    # yolov8n's 9 back-to-back pairs are tasks too, marked as such and left out of the shares.
    pairs = re.search(r"and (\d+) fused pairs of them", listing)
    marked = re.findall(r"^\s*\d+ tc_conv\s+\d+\s+[\d.]+\s+pair\s", listing, re.M)
    shares = [float(x) for x in re.findall(r"^\s*\d+ \S+\s+\d+\s+[\d.]+\s+([\d.]+)%\s", listing,
                                           re.M)]
    if not pairs or int(pairs.group(1)) != 9 or len(marked) != 9 or abs(sum(shares) - 100) > 1:
        fail(f"tune --target cuda --list-tasks: {len(marked)} pairs marked, shares summing to "
             f"{sum(shares):.1f} %:\n{listing}")

    base = [args.yoloc, "compile", args.model, "--target", "cuda", "--arch", "sm_90",
            "--precision", "fp16", "--outputs", OUTPUT, "--force"]
    empty = work("empty.jsonl")
    open(empty, "w").close()
    run(base + ["--records", empty, "-o", work("default.ycm")], "compile --target cuda")
    tasks = launch_tasks(work("default.ycm"))
    if not tasks or any(t.get("tuned") for t in tasks):
        fail(f"untuned compile: expected launches with tuned false: {tasks}")
    chosen = next((t for t in tasks if t["template"] == "tc_conv"), tasks[0])
    config = {kv.split("=")[0]: int(kv.split("=")[1]) for kv in chosen["config"].split(",") if kv}

    records = work("records.jsonl")
    with open(records, "w") as f:
        for arch, key in (("sm_90", chosen["key"]), ("sm_80", tasks[-1]["key"])):
            r = record(key, chosen["template"], config, arch)
            r["tool"] = version
            f.write(json.dumps(r) + "\n")
    out = run(base + ["--records", records, "-o", work("tuned.ycm")],
              "compile --target cuda --records").stdout
    tuned = launch_tasks(work("tuned.ycm"))
    for t in tuned:
        expect = t["key"] == chosen["key"]
        if bool(t.get("tuned")) != expect:
            fail(f"task {t['key']}: tuned {t.get('tuned')}, expected {expect}")
    if "1 for this arch" not in out:
        fail(f"compile should count 1 record for sm_90:\n{out}")
    print(f"compile --records applied the record of {chosen['key']} ({chosen['config']})")

    tune = [args.yoloc, "tune", args.model, "--target", "cuda", "--records", work("tuned.jsonl"),
            "--trials", "4", "--verify-rounds", "1", "--timeout", "60", "-q"]
    p = subprocess.run(tune, capture_output=True, text=True, timeout=600)
    if p.returncode != 0:
        message = p.stdout + p.stderr
        if "Traceback" in message or p.returncode < 0:
            fail(f"tune --target cuda crashed ({p.returncode}):\n{message}")
        if "cannot use CUDA device 0" not in message:
            fail(f"tune --target cuda without a GPU: unclear error:\n{message}")
        print("tune --target cuda without a GPU: " + message.strip().splitlines()[-1])
        return
    lines = [json.loads(x) for x in open(work("tuned.jsonl")) if x.strip()]
    ok = [r for r in lines if not r["error"]]
    print(f"tune --target cuda: {len(lines)} records, {len(ok)} ok")
    if not ok or any(r["target"]["kind"] != "cuda" for r in lines):
        fail(f"tune --target cuda wrote no valid cuda records:\n{p.stdout}{p.stderr}")
    run(base + ["--records", work("tuned.jsonl"), "-o", work("gpu_tuned.ycm")],
        "compile --records (GPU records)")


if __name__ == "__main__":
    main()
