#!/usr/bin/env python3
"""A model of 100,000 chained Identity nodes (built here with onnx) must import, optimize and
run in seconds: every step on that path (importer, shape inference, verifier, passes, dead code
elimination, inspect) is linear. The bound is generous (a loaded two-core machine); a quadratic
step takes minutes. `exec` checks the output equals the input (numpy); `inspect --json` that the
optimizer removed the chain.

usage: check_long_chain.py --yoloc BIN --work DIR [--nodes N] [--seconds S]
"""
import argparse
import json
import os
import subprocess
import sys
import time

SKIP = 77


def build_chain(path, n):
    import onnx
    from onnx import TensorProto, helper
    nodes, prev = [], "x"
    for i in range(n):
        cur = "y" if i == n - 1 else f"t{i}"
        nodes.append(helper.make_node("Identity", [prev], [cur], name=f"id{i}"))
        prev = cur
    vi = lambda name: helper.make_tensor_value_info(name, TensorProto.FLOAT, [1, 3, 4, 4])  # noqa
    model = helper.make_model(helper.make_graph(nodes, "chain", [vi("x")], [vi("y")]),
                              opset_imports=[helper.make_opsetid("", 13)])
    onnx.save(model, path)


def timed(args, limit):
    t0 = time.monotonic()
    try:
        p = subprocess.run(args, capture_output=True, text=True, timeout=limit * 3)
    except subprocess.TimeoutExpired:
        raise SystemExit(f"FAIL: {' '.join(args[1:3])} ran past {limit * 3} s")
    dt = time.monotonic() - t0
    print(f"{os.path.basename(args[0])} {args[1]}: {dt:.2f} s (exit {p.returncode})")
    if p.returncode != 0:
        print(p.stdout, p.stderr)
        raise SystemExit(f"FAIL: {args[1]} exited {p.returncode}")
    if dt > limit:
        raise SystemExit(f"FAIL: {args[1]} took {dt:.1f} s, over the {limit} s bound")
    return p


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--yoloc", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--nodes", type=int, default=100_000)
    ap.add_argument("--seconds", type=float, default=60)
    a = ap.parse_args()
    try:
        import numpy as np
    except ImportError as e:
        print(f"skipped: numpy and onnx are needed ({e})")
        return SKIP
    os.makedirs(a.work, exist_ok=True)
    model = os.path.join(a.work, f"chain{a.nodes}.onnx")
    try:
        build_chain(model, a.nodes)
    except ImportError as e:
        print(f"skipped: onnx is needed ({e})")
        return SKIP
    x = np.random.default_rng(0).standard_normal((1, 3, 4, 4)).astype(np.float32)
    np.save(os.path.join(a.work, "x.npy"), x)
    out = os.path.join(a.work, "out")
    timed([a.yoloc, "exec", model, "--input", f"x={os.path.join(a.work, 'x.npy')}",
           "--output-dir", out], a.seconds)
    y = np.load(os.path.join(out, "y.npy"))
    if not np.array_equal(x, y):
        raise SystemExit("FAIL: the chain's output differs from its input")
    info = json.loads(timed([a.yoloc, "inspect", model, "--json", "-", "--passes"], a.seconds).stdout)
    if info["nodes"] != a.nodes:
        raise SystemExit(f"FAIL: inspect counts {info['nodes']} nodes, the model has {a.nodes}")
    left = info["optimized"]["nodes"]
    if left > 1:
        raise SystemExit(f"FAIL: {left} nodes left after optimization (expected at most 1)")
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
