#!/usr/bin/env python3
"""yoloc (compiled for this CPU) against ONNX Runtime (CPU execution provider), same threads,
alternating rounds in one run, on the shared float models at batch 1 and 4. Writes JSON with the
machine (CPU model, flags, cores, load) and versions, and prints a table.

A shared model exported with a static batch of 1 gets a batch-4 twin here (in a temporary folder,
never committed): its input batch becomes symbolic and every Reshape shape constant that starts
with 1 starts with 0 (ONNX: copy that dimension from the input), the same graph otherwise. Both
engines run that same twin.

usage: bench/cpu_vs_ort.py --yoloc build/release/yoloc [--models DIR] [--threads 2]
                           [--batches 1 4] [--rounds 5] [--iters 20] [--json FILE]
"""
import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnxruntime as ort

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from onnx_twin import dynamic_batch_twin  # noqa: E402

MODELS = [("yolov8n.onnx", []), ("yolox-nano-facemask.onnx", ["--family", "yolox"])]


def cpu_info():
    info = {"model": platform.processor(), "flags": [], "cores": os.cpu_count()}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() == "model name":
                    info["model"] = value.strip()
                elif key.strip() == "flags":
                    flags = value.split()
                    info["flags"] = sorted(f for f in flags if f.startswith(("avx", "fma", "sse4")))
                    break
    except OSError:
        pass
    return info


def ort_session(path, threads):
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.log_severity_level = 3
    return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])


def time_ort(sess, x, iters, warmup):
    name = sess.get_inputs()[0].name
    for _ in range(warmup):
        sess.run(None, {name: x})
    ms = []
    for _ in range(iters):
        t0 = time.perf_counter()
        sess.run(None, {name: x})
        ms.append((time.perf_counter() - t0) * 1e3)
    return ms


def time_yoloc(yoloc, artifact, threads, iters, warmup, work):
    out = os.path.join(work, "bench.json")
    subprocess.run([yoloc, "bench", artifact, "--threads", str(threads), "--iters", str(iters),
                    "--warmup", str(warmup), "--json", out], check=True, capture_output=True)
    with open(out) as f:
        return json.load(f)


def pct(values, q):
    v = sorted(values)
    return v[min(len(v) - 1, int(round(q * (len(v) - 1))))]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--yoloc", required=True)
    ap.add_argument("--models", default=os.path.join(os.path.dirname(__file__), "..", "..",
                                                     "shared", "models"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batches", type=int, nargs="+", default=[1, 4])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--json", default="")
    a = ap.parse_args()
    work = tempfile.mkdtemp(prefix="yoloc-bench-")
    yoloc_version = subprocess.run([a.yoloc, "--version"], capture_output=True, text=True).stdout
    results = []
    for file, opts in MODELS:
        path = os.path.join(a.models, file)
        if not os.path.isfile(path):
            print(f"skipped {file}: not found in {a.models}")
            continue
        for batch in a.batches:
            model = path if batch == 1 else dynamic_batch_twin(path, work)
            artifact = os.path.join(work, f"{file}-b{batch}.ycm")
            t0 = time.time()
            subprocess.run([a.yoloc, "compile", model, "-o", artifact, "--force", "--batch",
                            str(batch), *opts], check=True, capture_output=True)
            compile_s = time.time() - t0
            sess = ort_session(model, a.threads)
            shape = [batch] + [d for d in sess.get_inputs()[0].shape[1:]]
            x = np.random.default_rng(0).random(shape, dtype=np.float32)
            ort_ms, ort_rounds, y_rounds, y_p99, y_rss = [], [], [], [], []
            for r in range(a.rounds):  # alternate: ORT, then yoloc, each round
                ms = time_ort(sess, x, a.iters, a.warmup)
                ort_ms += ms
                ort_rounds.append(statistics.median(ms))
                y = time_yoloc(a.yoloc, artifact, a.threads, a.iters, a.warmup, work)
                y_rounds.append(y["median_ms"])
                y_p99.append(y["p99_ms"])
                y_rss.append(y["peak_rss_mb"])
            ort_med, y_med = statistics.median(ort_rounds), statistics.median(y_rounds)
            row = {"model": file, "batch": batch, "threads": a.threads, "rounds": a.rounds,
                   "iters_per_round": a.iters, "compile_s": round(compile_s, 2),
                   "yoloc_median_ms": y_med, "yoloc_round_medians_ms": y_rounds,
                   "yoloc_p99_ms_max_over_rounds": max(y_p99), "yoloc_peak_rss_mb": max(y_rss),
                   "ort_median_ms": ort_med, "ort_round_medians_ms": ort_rounds,
                   "ort_p90_ms": pct(ort_ms, 0.9), "ort_p99_ms": pct(ort_ms, 0.99),
                   "ratio_yoloc_over_ort": y_med / ort_med,
                   "yoloc_images_per_s": 1000.0 * batch / y_med,
                   "ort_images_per_s": 1000.0 * batch / ort_med}
            results.append(row)
            print(f"{file:28s} b{batch}  yoloc {y_med:8.2f} ms  ORT {ort_med:8.2f} ms  "
                  f"ratio {y_med / ort_med:.3f}  (compile {compile_s:.1f} s)", flush=True)
    try:
        load = os.getloadavg()
    except OSError:
        load = None
    report = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
              "machine": {"cpu": cpu_info(), "kernel": platform.release(),
                          "load_average_at_end": load},
              "versions": {"yoloc": yoloc_version.strip(), "onnxruntime": ort.__version__,
                           "onnx": __import__("onnx").__version__, "numpy": np.__version__,
                           "python": platform.python_version()},
              "method": "per model and batch: rounds x (ORT iters, then yoloc bench iters), "
                        "medians of the round medians; same intra-op threads",
              "results": results}
    if a.json:
        with open(a.json, "w") as f:
            json.dump(report, f, indent=1)
    return 0 if results else 1


if __name__ == "__main__":
    sys.exit(main())
