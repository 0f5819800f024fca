#!/usr/bin/env python3
"""Checks `yoloc exec` against ONNX Runtime on one model, on seeded random inputs in [0, 1).

Each output must agree within the relative error of its dtype (TOLERANCE), where
relative error = max|yoloc - ort| / max(max|ort|, 1e-6). Models with a dynamic batch are also
run at batch 2; models with dynamic height/width also at 320x320 (when ONNX Runtime accepts it).

Dynamically quantized models (DynamicQuantizeLinear) quantize every activation at run time, so a
last-bit difference in a float op upstream (ONNX Runtime's Sigmoid is a polynomial approximation)
moves values across rounding boundaries and the difference grows through the network: no two
correct implementations agree to 1e-4 there. For them a second, independent reference, the ONNX
reference evaluator (onnx.reference), measures how far two correct implementations drift apart,
and yoloc must be no further from ONNX Runtime than that (QUANT_SLACK), in max relative error and
in the fraction of elements off by more than 1e-4.

usage: check_models.py --yoloc BIN --model MODEL.onnx --work DIR
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

# Largest allowed relative error per output dtype.
TOLERANCE = {"float32": 1e-4, "float16": 1e-2}
SEED = 0
QUANT_SLACK = 1.5
ORT_TYPES = {"tensor(float)": "float32", "tensor(float16)": "float16", "tensor(double)": "float64"}


def variants(session):
    """(label, {input: shape}) to run: the default shape, then batch 2 and 320x320 if dynamic."""
    default, batch2, small = {}, {}, {}
    dyn_batch = dyn_hw = False
    for i in session.get_inputs():
        shape = list(i.shape)
        base = []
        for axis, d in enumerate(shape):
            if isinstance(d, int) and d > 0:
                base.append(d)
            elif axis == 0:
                base.append(1)
                dyn_batch = True
            else:
                base.append(640)  # the export size of every dynamic model in ../shared/models
                dyn_hw = True
        default[i.name] = base
        batch2[i.name] = [2] + base[1:]
        small[i.name] = base[:2] + [320] * (len(base) - 2)
    out = [("default", default)]
    if dyn_batch:
        out.append(("batch 2", batch2))
    if dyn_hw:
        out.append(("320x320", small))
    return out


def main():
    args = common.model_args()
    import numpy as np

    session = common.ort_session(args.model)
    name = os.path.basename(args.model)
    quantized = any(n.op_type == "DynamicQuantizeLinear" for n in common.load_nodes(args.model))
    ok = True
    for label, shapes in variants(session):
        rng = np.random.default_rng(SEED)
        feeds = {}
        for i in session.get_inputs():
            dtype = ORT_TYPES.get(i.type)
            if dtype is None:
                common.skip(f"input {i.name} has type {i.type}; only float inputs are generated")
            feeds[i.name] = rng.random(shapes[i.name], dtype=np.float32).astype(dtype)
        try:
            ref = session.run(None, feeds)
        except Exception as e:  # noqa: BLE001 - any ORT failure means the variant is not valid
            print(f"{name} [{label}]: not run: ONNX Runtime rejects {shapes}: "
                  f"{str(e).splitlines()[0][:200]}")
            continue
        got = common.yoloc_exec(args.yoloc, args.model, feeds,
                                os.path.join(args.work, label.replace(" ", "_")))
        second = None
        if quantized:
            with np.errstate(all="ignore"):  # its Sigmoid evaluates exp on both branches
                second = common.onnx_reference_evaluator(args.model).run(None, feeds)
        for k, (o, r) in enumerate(zip(session.get_outputs(), ref)):
            if o.name not in got:
                print(f"FAIL {name} [{label}] output {o.name}: missing from yoloc's outputs")
                ok = False
                continue
            y = got[o.name]
            if y.shape != r.shape or y.dtype != r.dtype:
                print(f"FAIL {name} [{label}] output {o.name}: yoloc gave {y.dtype}{list(y.shape)}, "
                      f"ONNX Runtime {r.dtype}{list(r.shape)}")
                ok = False
                continue
            bad_nan = np.isnan(r.astype(np.float64)) != np.isnan(y.astype(np.float64))
            err, frac = common.relative_error(y, r)
            tol = TOLERANCE.get(str(r.dtype), 0.0)
            extra = ""
            if second is not None:
                ref_err, ref_frac = common.relative_error(second[k], r)
                passed = err <= max(tol, QUANT_SLACK * ref_err) and \
                    frac <= QUANT_SLACK * ref_frac + 1e-3
                extra = (f"; {frac:.2%} of elements off by > 1e-4; the ONNX reference evaluator is "
                         f"{ref_err:.3g} / {ref_frac:.2%} from ONNX Runtime (dynamic quantization)")
            else:
                passed = err <= tol
            passed &= not bad_nan.any()
            ok &= passed
            print(f"{'ok  ' if passed else 'FAIL'} {name} [{label}] output {o.name} "
                  f"{r.dtype}{list(r.shape)}: max relative error {err:.3g} (tolerance {tol:g})"
                  + extra
                  + (f", {int(bad_nan.sum())} NaN mismatches" if bad_nan.any() else ""))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
