#!/usr/bin/env python3
"""Times a whole ONNX model under ONNX Runtime (CPU, N intra-op threads) and prints JSON:
{"median_ms", "min_ms", "p90_ms", "threads", "cpu_median_ms" (process CPU time, a
load-independent measure with 1 thread), "ort_version"}. Used by cpu_conv_bench."""
import argparse
import json
import time

import numpy as np
import onnxruntime as ort


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=3)
    a = ap.parse_args()
    so = ort.SessionOptions()
    so.intra_op_num_threads = a.threads
    so.inter_op_num_threads = 1
    sess = ort.InferenceSession(a.model, so, providers=["CPUExecutionProvider"])
    inp = sess.get_inputs()[0]
    shape = [d if isinstance(d, int) else 1 for d in inp.shape]
    x = np.random.default_rng(0).random(shape, dtype=np.float32)
    for _ in range(a.warmup):
        sess.run(None, {inp.name: x})
    ms, cpu = [], []
    for _ in range(a.iters):
        t0, c0 = time.perf_counter(), time.process_time()
        sess.run(None, {inp.name: x})
        ms.append((time.perf_counter() - t0) * 1e3)
        cpu.append((time.process_time() - c0) * 1e3)
    ms.sort()
    cpu.sort()
    print(json.dumps({"median_ms": ms[len(ms) // 2], "min_ms": ms[0],
                      "p90_ms": ms[min(len(ms) - 1, int(len(ms) * 0.9))], "threads": a.threads,
                      "cpu_median_ms": cpu[len(cpu) // 2],
                      "ort_version": ort.__version__}))


if __name__ == "__main__":
    main()
