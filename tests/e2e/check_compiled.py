#!/usr/bin/env python3
"""Compiles a shared model for the CPU (`yoloc compile`; `--target cuda` on a GPU machine, at
`--precision fp32|fp16|bf16`) and checks the artifact's outputs
(`yoloc exec MODEL.ycm`) on a random input, at batch 1 and (for models with a dynamic batch)
batch 2 (`CHECK_BATCHES=1,4` takes other batches: at 4 the CUDA target's nearest Resizes have
kernels of their own instead of the convs' upsampled copies):
- against ONNX Runtime within 1e-4 relative, each part of the output relative to its own scale
  (compare.py: boxes, class scores, objectness; top-K rows matched by rank), for float models;
- for dynamically quantized models, which the CPU target compiles to fp32 (weights dequantized,
  activations kept in float), against the reference executor running the same rewrite
  (`yoloc exec --precision fp32`) within 1e-4, against ONNX Runtime running that rewrite made
  independently (float_rewrite.py) within 1e-4, and against ONNX Runtime's int8 run within
  INT8_SLACK times the distance between ONNX Runtime's float rewrite and its int8 run (see
  INT8_SLACK);
and prints the compile time and arena figures. fp16 / bf16 CUDA artifacts store activations
narrow. Every run takes an input in the model's range (0..255 for YOLOX, which takes raw pixels:
common.input_range). Narrow artifacts must stay within 2e-2 relative (bf16 5e-2), or within
twice the error ONNX Runtime's own fp16 conversion of the model makes on the same input when that is larger (some exports amplify
rounding: YOLOX's box branch on a noise image). The detections (check_detections.py) are what
must agree. COMPILE_OPTIONS adds compile options (e.g. "--b2b on"). IO_PRECISION=fp16 compiles with `--io-precision fp16` (fp16 image in, fp16 outputs
out): the artifact then takes the random input rounded to fp16, which ONNX Runtime takes too (as
float32).

usage: check_compiled.py --yoloc BIN --model M.onnx --work DIR [--target cuda --precision P]
"""
import os
import re
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402
import compare  # noqa: E402
from float_rewrite import float_rewrite_session  # noqa: E402

TOL = 1e-4
# The artifact of a dynamically quantized model keeps activations in float; ONNX Runtime's int8 run
# quantizes them. Both references for the distance between the two are independent of yoloc:
# ONNX Runtime running the float rewrite (float_rewrite.py, bit-identical to yolov8n.onnx for
# yolov8n-dynint8) and ONNX Runtime running the int8 model. The artifact equals the float rewrite
# to 1e-4 (checked above), so its distance to the int8 run can differ from the references' only
# by that rounding: 1.5x their distance, per part, in max error and in the fraction of elements
# off, as for the other quantized comparisons (check_models.py's QUANT_SLACK).
INT8_SLACK = 1.5


def output_tolerance(tol, dtype):
    """The relative error allowed per part of an output: tol, at least 1e-2 for fp16 outputs
    (they round to 1e-3 relative and the fp16 model's ops in between)."""
    return max(tol, 1e-2) if dtype == np.float16 else tol


def family_options(model):
    base = os.path.basename(model).lower()
    if "yolox" in base:
        return ["--family", "yolox"]
    if "yolov5" in base:
        return ["--family", "yolov5"]
    return []


def ort_fp16_outputs(model, input_name, x):
    """ONNX Runtime's outputs of the model converted to fp16 (inputs and outputs kept float32),
    by name; empty when the converter is not available."""
    try:
        import onnx
        from onnxruntime.transformers import float16
    except ImportError:
        return {}
    m16 = float16.convert_float_to_float16(onnx.load(model), keep_io_types=True)
    sess = common.import_onnxruntime().InferenceSession(m16.SerializeToString(),
                                                       providers=["CPUExecutionProvider"])
    return dict(zip([o.name for o in sess.get_outputs()], sess.run(None, {input_name: x})))


def check_recompile_from_cache(args, artifact, extra):
    """The same compile again takes every kernel from the kernel build cache and writes the same
    artifact, byte for byte."""
    again = artifact + ".again.ycm"
    t0 = time.time()
    p = common.run([args.yoloc, "compile", args.model, "-o", again, "--force", "--target",
                    args.target, "--precision", args.precision, *extra], "yoloc compile (again)")
    first_line = p.stdout.splitlines()[0]
    if "from the kernel build cache" not in first_line or " of " in first_line.split("(")[-1]:
        print(f"FAIL: a second compile did not take all its kernels from the cache: {first_line}")
        sys.exit(1)
    with open(artifact, "rb") as a, open(again, "rb") as b:
        if a.read() != b.read():
            print("FAIL: the artifact compiled from the kernel build cache differs")
            sys.exit(1)
    os.remove(again)
    print(f"compiled again in {time.time() - t0:.1f} s, every kernel from the kernel build cache "
          "(the same artifact)")


def main():
    args = common.model_args()
    common.check_known_unsupported(args.yoloc, args.model, args.work, args.target,
                                   ["--precision", args.precision])
    tol = {"fp32": TOL, "fp16": 2e-2, "bf16": 5e-2}[args.precision]
    session = common.ort_session(args.model)
    os.makedirs(args.work, exist_ok=True)
    quantized = any(n.op_type == "DynamicQuantizeLinear" for n in common.load_nodes(args.model))
    inp = session.get_inputs()[0]
    dynamic_batch = not isinstance(inp.shape[0], int)
    failed = False
    batches = [int(b) for b in os.environ.get("CHECK_BATCHES", "1,2").split(",")]
    io = os.environ.get("IO_PRECISION", "")
    io_options = ["--io-precision", io] if io else []
    io_options += os.environ.get("COMPILE_OPTIONS", "").split()  # e.g. "--b2b on"
    for batch in batches if dynamic_batch else [1]:
        artifact = os.path.join(args.work, f"model-b{batch}.ycm")
        t0 = time.time()
        p = common.run([args.yoloc, "compile", args.model, "-o", artifact, "--force",
                        "--batch", str(batch), "--target", args.target, "--precision",
                        args.precision, *io_options, *family_options(args.model)],
                       "yoloc compile")
        seconds = time.time() - t0
        arena = re.search(r"arena: ([\d.]+) MB \(naive sum of intermediates ([\d.]+) MB", p.stdout)
        print(f"batch {batch}: compiled in {seconds:.1f} s; " + (
            f"arena {arena.group(1)} MB of naive {arena.group(2)} MB" if arena else p.stdout))
        # OpenCL artifacts carry source the device builds at load: the compile builds nothing.
        if (batch == 1 and args.target != "opencl"
                and os.environ.get("YOLOC_CACHE_DIR", "off") not in ("", "off")):
            check_recompile_from_cache(args, artifact, family_options(args.model))
        spec = common.read_artifact(artifact)[0]["inputs"][0]
        x = np.random.default_rng(batch).random(spec["shape"], dtype=np.float32)
        x *= common.input_range(args.model)
        if inp.type == "tensor(float16)":
            x = x.astype(np.float16)
        x_in = x
        if spec["dtype"] == "float16" and x.dtype != np.float16:  # --io-precision fp16
            x_in = x.astype(np.float16)
            x = x_in.astype(np.float32)
        got = common.yoloc_exec(args.yoloc, artifact, {inp.name: x_in},
                                os.path.join(args.work, f"compiled-b{batch}"))
        ort = dict(zip([o.name for o in session.get_outputs()], session.run(None, {inp.name: x})))
        if quantized:
            ref = common.yoloc_exec(args.yoloc, args.model, {inp.name: x},
                                    os.path.join(args.work, f"reference-b{batch}"),
                                    ["--precision", "fp32"])
        else:
            ref = ort
        narrow = args.precision != "fp32" and not quantized
        ort16 = ort_fp16_outputs(args.model, inp.name, x) if narrow else {}
        # Top-K heads: scores closer than this may swap ranks (fp16 / bf16 scores round to ~1e-3).
        sep = 1e-5 if args.precision == "fp32" else 2e-3
        refs = [("reference executor, fp32 rewrite" if quantized else "ONNX Runtime", ref, None)]
        if quantized:
            rewrite = float_rewrite_session(args.model)
            ort_float = dict(zip([o.name for o in rewrite.get_outputs()],
                                 rewrite.run(None, {inp.name: x})))
            refs.append(("ONNX Runtime, float rewrite", ort_float, None))
            refs.append(("ONNX Runtime, int8", ort, ort_float))
        for what, outputs, second in refs:
            for name, r in outputs.items():
                if name not in got:
                    print(f"FAIL: the artifact has no output '{name}' (it has {sorted(got)})")
                    sys.exit(1)
                allowed = output_tolerance(tol, r.dtype)
                if name in ort16:
                    err16 = max(e for e, _ in compare.part_errors(ort16[name].astype(r.dtype), r,
                                                                   args.model, sep).values())
                    print(f"  ONNX Runtime's own fp16 conversion: max relative error {err16:.3g}")
                    allowed = max(tol, 2 * err16)
                if got[name].shape != r.shape:
                    print(f"FAIL: output '{name}' has shape {list(got[name].shape)}, expected "
                          f"{list(r.shape)}")
                    failed = True
                    continue
                topk = compare.output_parts(args.model, r.shape)[1]
                rank_sep = sep
                allowance = None
                if second is not None:
                    if topk:
                        rank_sep = compare.topk_separation(second[name], r, INT8_SLACK)
                    allowance = compare.part_errors(second[name], r, args.model, rank_sep)
                errors = compare.part_errors(got[name], r, args.model, rank_sep)
                ok, text = compare.judge(errors, allowed, allowance, INT8_SLACK)
                if topk:
                    _, compared, rows = compare.rows_errors(got[name], r, rank_sep)
                    text += (f"; {compared} of {rows} rows matched by rank (scores {rank_sep:.3g} "
                             "apart)")
                if allowance is not None:
                    for kind in compare.loose_allowance(r, args.model, allowed, allowance,
                                                        rank_sep, INT8_SLACK):
                        ok = False
                        text += f"; FAIL: the allowance accepts an output with {kind}"
                print(f"batch {batch} {name} vs {what}: {'ok' if ok else 'FAIL'}: {text}")
                failed |= not ok
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
