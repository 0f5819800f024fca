#!/usr/bin/env python3
"""`yoloc exec` on a model without inputs (its values come from constants): runs without any
--input and writes what numpy computes; a model that has inputs still asks for them.

usage: check_exec_no_inputs.py --yoloc BIN --work DIR
"""
import argparse
import os
import subprocess
import sys

SKIP = 77


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--yoloc", required=True)
    ap.add_argument("--work", required=True)
    a = ap.parse_args()
    try:
        import numpy as np
        import onnx
        from onnx import TensorProto, helper, numpy_helper
    except ImportError as e:
        print(f"skipped: numpy and onnx are needed ({e})")
        return SKIP
    os.makedirs(a.work, exist_ok=True)
    c = np.arange(12, dtype=np.float32).reshape(3, 4) - 5
    nodes = [helper.make_node("Constant", [], ["c"], value=numpy_helper.from_array(c)),
             helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("Mul", ["r", "c"], ["y"])]
    y_info = helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 4])
    model = os.path.join(a.work, "constant.onnx")
    onnx.save(helper.make_model(helper.make_graph(nodes, "no_inputs", [], [y_info]),
                                opset_imports=[helper.make_opsetid("", 13)]), model)
    failed = False
    for level in ["-O0", "-O1"]:
        out = os.path.join(a.work, "out" + level)
        p = subprocess.run([a.yoloc, "exec", model, level, "--output-dir", out],
                           capture_output=True, text=True)
        print(f"exec {level}: exit {p.returncode} {p.stdout.strip()} {p.stderr.strip()}")
        if p.returncode != 0:
            failed = True
            continue
        got = np.load(os.path.join(out, "y.npy"))
        want = np.maximum(c, 0) * c
        if not np.array_equal(got, want):
            print(f"FAIL: {level} gave {got.tolist()}, numpy {want.tolist()}")
            failed = True

    # A model with an input, run without --input: a one-line error naming the option.
    x_info = helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 4])
    with_input = os.path.join(a.work, "relu.onnx")
    onnx.save(helper.make_model(
        helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "relu", [x_info], [y_info]),
        opset_imports=[helper.make_opsetid("", 13)]), with_input)
    p = subprocess.run([a.yoloc, "exec", with_input, "--output-dir", os.path.join(a.work, "o")],
                       capture_output=True, text=True)
    print(f"exec with an input and no --input: exit {p.returncode} {p.stderr.strip()}")
    if p.returncode != 1 or "--input x=" not in p.stderr or len(p.stderr.splitlines()) != 1:
        print("FAIL: expected exit 1 and one line naming --input x=FILE.npy")
        failed = True
    print("FAIL" if failed else "ok")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
