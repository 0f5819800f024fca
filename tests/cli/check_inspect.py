#!/usr/bin/env python3
"""`yoloc inspect` on a small model built here: text, --json (checked against numpy counts),
--dim, --dot (DOT text, and SVG when graphviz is installed).

usage: check_inspect.py --yoloc BIN --work DIR
"""
import argparse
import json
import os
import shutil
import subprocess
import sys

SKIP = 77


def build_model(path):
    """y = (x * w) + b - x with w float32[1, 3, 1, 1], b float32[3, 1, 1]; x is [batch, 3, 8, 8]."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    w = numpy_helper.from_array(np.arange(3, dtype=np.float32).reshape(1, 3, 1, 1), "w")
    b = numpy_helper.from_array(np.ones((3, 1, 1), np.float16).astype(np.float32), "b")
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3, 8, 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    nodes = [helper.make_node("Mul", ["x", "w"], ["t0"], name="scale"),
             helper.make_node("Add", ["t0", "b"], ["t1"], name="shift"),
             helper.make_node("Sub", ["t1", "x"], ["y"], name="residual")]
    model = helper.make_model(helper.make_graph(nodes, "tiny", [x], [y], [w, b]),
                              opset_imports=[helper.make_opsetid("", 13)],
                              producer_name="inspect-test")
    helper.set_model_props(model, {"author": "yoloc tests"})
    onnx.save(model, path)
    return 3 + 3, (3 + 3) * 4  # parameter count and bytes, by hand


def run(args):
    p = subprocess.run(args, capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"FAIL: {' '.join(args)} exited {p.returncode}: {p.stderr}")
    return p.stdout


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--yoloc", required=True)
    ap.add_argument("--work", required=True)
    a = ap.parse_args()
    try:
        import onnx  # noqa: F401
    except ImportError as e:
        print(f"skipped: the Python package onnx is needed ({e})")
        return SKIP
    os.makedirs(a.work, exist_ok=True)
    model = os.path.join(a.work, "tiny.onnx")
    params, param_bytes = build_model(model)
    problems = []

    def expect(cond, what):
        print(("ok   " if cond else "FAIL ") + what)
        if not cond:
            problems.append(what)

    text = run([a.yoloc, "inspect", model])
    print(text)
    expect("x: float32[batch, 3, 8, 8]" in text, "text lists the input with its symbolic dim")
    expect("Add 1" in text and "Mul 1" in text and "Sub 1" in text, "text has the op histogram")
    expect("symbolic" in text, "text says FLOPs need static shapes")

    j = json.loads(run([a.yoloc, "inspect", model, "--json", "-"]))
    expect(j["opset"] == 13, "json opset 13")
    expect(j["producer"].startswith("inspect-test"), "json producer")
    expect(j["inputs"][0]["shape"] == ["batch", 3, 8, 8], "json input shape keeps the symbol")
    expect(j["ops"] == {"Add": 1, "Mul": 1, "Sub": 1}, "json op histogram")
    expect(j["nodes"] == 3, "json node count")
    expect(j["parameters"]["count"] == params, f"json parameter count {params}")
    expect(j["parameters"]["bytes"] == param_bytes, f"json parameter bytes {param_bytes}")
    expect(j["flops"]["total"] is None and j["flops"]["symbolic_dims"] == ["batch"],
           "json FLOPs unknown with a symbolic batch")
    expect(j["metadata"] == {"author": "yoloc tests"}, "json metadata")

    fixed = json.loads(run([a.yoloc, "inspect", model, "--json", "-", "--dim", "batch=2"]))
    expect(fixed["outputs"][0]["shape"] == [2, 3, 8, 8], "--dim batch=2 gives static shapes")
    expect(fixed["flops"]["total"] is not None, "FLOPs are counted with static shapes")

    dot = os.path.join(a.work, "tiny.dot")
    run([a.yoloc, "inspect", model, "--dot", dot])
    with open(dot) as f:
        d = f.read()
    expect(d.startswith("digraph") and d.count("->") == 5,
           "DOT has the graph with 5 edges (x->Mul, Mul->Add, Add->Sub, x->Sub, Sub->y)")
    expect("w: float32[1, 3, 1, 1]" in d, "DOT folds the constant into the Mul label")
    if shutil.which("dot"):
        svg = os.path.join(a.work, "graph.svg")
        run([a.yoloc, "inspect", model, "--dot", svg])
        with open(svg) as f:
            expect("<svg" in f.read(), "--dot FILE.svg writes an SVG through graphviz")
        expect(os.path.isfile(os.path.join(a.work, "tiny.svg")), "--dot FILE.dot writes FILE.svg")
    else:
        print("graphviz 'dot' is not installed: the SVG checks are skipped")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
