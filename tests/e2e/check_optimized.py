#!/usr/bin/env python3
"""Checks that the graph optimizer preserves a model's outputs: `yoloc exec` (optimized, -O1)
against `yoloc exec -O0` (the graph as imported), both on the reference executor, on the same
seeded random input. Each part of each output (boxes, class scores, objectness...: compare.py)
must be within 1e-4 relative to its own scale for float32 outputs and 1e-2 for float16 (top-K
rows matched by rank). Prints the figure and the kernel count `yoloc inspect` reports.

usage: check_optimized.py --yoloc BIN --model MODEL.onnx --work DIR
"""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402
import compare  # noqa: E402

TOLERANCE = {"float32": 1e-4, "float16": 1e-2}
TOPK_SEPARATION = 1e-5  # top-K heads: scores closer than this may swap ranks


def main():
    args = common.model_args()
    import numpy as np
    import onnx

    model = onnx.load(args.model, load_external_data=False)
    rng = np.random.default_rng(0)
    feeds = {}
    for i in model.graph.input:
        t = i.type.tensor_type
        shape = [d.dim_value if d.dim_value > 0 else (1 if k == 0 else 640)
                 for k, d in enumerate(t.shape.dim)]
        dtype = onnx.helper.tensor_dtype_to_np_dtype(t.elem_type)
        feeds[i.name] = (rng.random(shape, dtype=np.float32) *
                         common.input_range(args.model)).astype(dtype)
    raw = common.yoloc_exec(args.yoloc, args.model, feeds, os.path.join(args.work, "O0"), ["-O0"])
    opt = common.yoloc_exec(args.yoloc, args.model, feeds, os.path.join(args.work, "O1"), ["-O1"])
    info = json.loads(common.run([args.yoloc, "inspect", args.model, "--json", "-"], "inspect").stdout)
    name = os.path.basename(args.model)
    ok = True
    for out, r in raw.items():
        y = opt[out]
        tol = TOLERANCE.get(str(r.dtype), 0.0)
        if y.shape != r.shape:
            passed, text = False, f"shape {list(y.shape)}, -O0 gave {list(r.shape)}"
        else:
            passed, text = compare.judge(
                compare.part_errors(y, r, args.model, TOPK_SEPARATION), tol)
        ok &= passed
        print(f"{'ok  ' if passed else 'FAIL'} {name} output {out}: optimized vs -O0 relative "
              f"error {text}; {info['nodes']} nodes -> "
              f"{info['optimized']['nodes']} nodes, {info['optimized']['kernels']} kernels")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
