#!/usr/bin/env python3
"""`yoloc tune` end to end on a shared model with a tiny budget:
  - --list-tasks lists every kernel's workload with shares that add up to 100 %;
  - a grid run whose first conv candidates are made to crash and hang (YOLOC_TUNE_INJECT) writes
    one JSON-lines record per trial, the crash and the hang among them, and goes on (building
    each next round while the current one is measured); then it
    re-measures the best configs alone and inside the model ("model" records);
  - `compile --records` applies records (here: the valid non-default ones, made the fastest so
    that the tuned artifact really runs other configs) and its outputs match the untuned
    artifact's within 1e-4 (relative to the largest output);
  - records of another tool version are ignored; --report summarises the records as JSON.

usage: check_tune.py --yoloc BIN --model MODEL.onnx --work DIR
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
import compare  # noqa: E402
from common import run, skip, yoloc_exec  # noqa: E402

TRIALS = 16


def fail(message):
    print(f"FAIL: {message}")
    sys.exit(1)


def read_records(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--yoloc", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--work", required=True)
    args = ap.parse_args()
    if not os.path.exists(args.model):
        skip(f"no model {args.model}")
    try:
        import numpy as np
    except ImportError:
        skip("numpy is not installed")
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    work = lambda name: os.path.join(args.work, name)  # noqa: E731

    listing = run([args.yoloc, "tune", args.model, "--list-tasks"], "tune --list-tasks").stdout
    m = re.search(r"(\d+) kernels, (\d+) tasks", listing)
    if not m:
        fail(f"--list-tasks has no kernel/task count:\n{listing}")
    tasks = int(m.group(2))
    shares = [float(s) for s in re.findall(r"\s(\d+\.\d)%\s", listing)]
    if len(shares) != tasks or abs(sum(shares) - 100) > 1:
        fail(f"--list-tasks: {len(shares)} shares for {tasks} tasks, summing to {sum(shares)}")

    # Grid order: the first candidates after each conv's default have owb=1 and unroll 1, 2, 4.
    # Builds overlap measurements (--overlap on, whatever the cores): the crash and the hang
    # come while the next round builds.
    records = work("records.jsonl")
    env = dict(os.environ, YOLOC_TUNE_INJECT="crash@conv:owb=1,unroll=2;hang@conv:owb=1,unroll=4")
    p = subprocess.run([args.yoloc, "tune", args.model, "--records", records, "--trials",
                        str(TRIALS), "--strategy", "grid", "--threads", "1", "--timeout", "2",
                        "--repeats", "2", "--min-repeat-ms", "0.5", "--model-top", "1",
                        "--model-rounds", "1", "--model-iters", "2", "--overlap", "on"],
                       capture_output=True, text=True, env=env)
    if p.returncode != 0:
        fail(f"tune exited with {p.returncode}:\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}")
    if "trials" not in p.stderr:
        fail(f"no progress lines on stderr:\n{p.stderr[-2000:]}")
    rs = read_records(records)
    # The search's trials, the re-measurement of the defaults and best configs alone, then
    # each measured task's default and best config inside the model.
    m = re.search(r"(\d+) trials and (\d+) re-measurements", p.stdout)
    im = re.search(r"timed (\d+) configs inside the model \((\d+) artifacts\)", p.stdout)
    in_model = [r for r in rs if r.get("mode") == "model"]
    if not m or not im or int(m.group(1)) != TRIALS or int(im.group(2)) != 2 or \
            len(in_model) != int(im.group(1)) or not in_model or \
            len(rs) != TRIALS + int(m.group(2)) + len(in_model):
        fail(f"{len(rs)} records for {TRIALS} trials and the re-measurements:\n{p.stdout}")
    rs = [r for r in rs if r.get("mode", "kernel") == "kernel"]
    for r in rs:
        for field in ("key", "target", "config", "median", "times", "error", "tool", "format"):
            if field not in r:
                fail(f"record without '{field}': {r}")
    errors = [r["error"] for r in rs if r["error"]]
    if not any("crashed" in e for e in errors) or not any("timeout" in e for e in errors):
        fail(f"the injected crash and hang are not both recorded: {errors}")
    ok = [r for r in rs if not r["error"]]
    if len(ok) != len(rs) - len(errors) or not ok:
        fail("valid records missing")

    # Records that pick other configs than the defaults: every valid one, made 1000x faster
    # (the defaults are each task's first record).
    defaults, forced = {}, []
    for r in rs:
        defaults.setdefault(r["key"], r["config"])
        if not r["error"] and r["config"] != defaults[r["key"]]:
            forced.append(dict(r, median=r["median"] / 1000))
    if not forced:
        fail("no valid non-default record to apply")
    forced_path = work("forced.jsonl")
    with open(forced_path, "w") as f:
        for r in forced:
            f.write(json.dumps(r) + "\n")
        stale = dict(forced[0], tool="0.0.0-old")
        f.write(json.dumps(stale) + "\n")

    run([args.yoloc, "compile", args.model, "-o", work("default.ycm")], "compile")
    out = run([args.yoloc, "compile", args.model, "--records", forced_path, "-o",
               work("tuned.ycm")], "compile --records").stdout
    m = re.search(r"(\d+) for this machine \((\d+) of other versions ignored\); (\d+) tasks tuned, "
                  r"(\d+) defaults", out)
    want_tuned = len({r["key"] for r in forced})
    if not m or int(m.group(2)) != 1 or int(m.group(3)) != want_tuned:
        fail(f"compile --records should apply {want_tuned} tasks and ignore 1 stale record:\n{out}")

    rng = np.random.default_rng(0)
    x = rng.random((1, 3, 640, 640), dtype=np.float32)
    a = yoloc_exec(args.yoloc, work("default.ycm"), {"images": x}, work("exec-default"))
    b = yoloc_exec(args.yoloc, work("tuned.ycm"), {"images": x}, work("exec-tuned"))
    for name in a:
        passed, text = compare.judge(compare.part_errors(b[name], a[name], args.model, 1e-5), 1e-4)
        print(f"{name}: tuned vs default relative error {text}")
        if not passed:
            fail(f"output {name} of the tuned artifact differs: relative error {text}")

    report = work("report.json")
    text = run([args.yoloc, "tune", args.model, "--records", records, "--threads", "1",
                "--report", report], "tune --report").stdout
    with open(report) as f:
        rep = json.load(f)
    measured = [t for t in rep["tasks"] if t["default_s"] > 0]
    in_model = [t for t in rep["tasks"] if t["model_default_s"] > 0]
    if len(rep["tasks"]) != tasks or not measured or not in_model or \
            "kernels in the model" not in text:
        fail(f"report: {len(rep['tasks'])} tasks, {len(measured)} with a default time:\n{text}")
    print(f"ok: {len(rs)} records ({len(errors)} failed), {want_tuned} tasks applied")


if __name__ == "__main__":
    main()
