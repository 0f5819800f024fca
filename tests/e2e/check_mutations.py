#!/usr/bin/env python3
"""The e2e checkers can fail: deliberately corrupted outputs are rejected, intact ones pass.

For every shared model, ONNX Runtime's output on an image (letterboxed, or YOLOX-resized) is the
reference, and ONNX Runtime's output with its graph optimizations off is the intact output (another
correct evaluation: fusions change the float rounding). A dynamically quantized model runs as its
float rewrite (float_rewrite.py): that is what its compiled artifact is compared with at 1e-4, and
two int8 evaluations drift by whole quanta. Then:

- the tensor comparisons of check_models.py, check_compiled.py and check_optimized.py (and the
  aarch64 check, which uses compare.judge at check_compiled's tolerance) must pass the intact
  output and reject each of compare.corruptions: class scores zeroed, every box moved right by one
  input pixel, the rows shuffled, all zeros. fp16 outputs round box coordinates near 640 to
  0.25-0.5 px: a one-pixel shift is within their 1e-2 tolerance, and the detection check (edges
  within 0.5 px) is the one that sees it there;
- the detection comparison of check_detections.py, at the tolerance it uses for the model, must
  pass the intact detections and reject those decoded from the corrupted outputs (scores zeroed,
  boxes moved, all zeros; shuffled rows decode to the same detections).

usage: check_mutations.py --decoder BIN --image IMG --models DIR --work DIR
"""
import argparse
import glob
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_compiled  # noqa: E402
import check_detections  # noqa: E402
import check_models  # noqa: E402
import check_optimized  # noqa: E402
import common  # noqa: E402
import compare  # noqa: E402
from float_rewrite import float_rewrite  # noqa: E402

CONF, IOU = 0.25, 0.45
DETECTION_CORRUPTIONS = ("scores zeroed", "boxes moved 1 px", "all zeros")


class FixedOutput:
    """A session that returns a given output (check_detections.reference runs it)."""

    def __init__(self, session, output):
        self._session, self._output = session, output

    def get_inputs(self):
        return self._session.get_inputs()

    def get_outputs(self):
        return self._session.get_outputs()

    def run(self, names, feeds):
        return [self._output]


def tensor_judges(model, dtype):
    """(checker, judge(y, r) -> (passed, text)) of each e2e tensor comparison."""
    def models(y, r):
        return check_models.judge_output("", model, y, r, None,
                                         check_models.TOLERANCE.get(str(dtype), 0.0))

    def compiled(y, r):
        tol = check_compiled.output_tolerance(check_compiled.TOL, dtype)
        return compare.judge(compare.part_errors(y, r, model, 1e-5), tol)

    def optimized(y, r):
        return compare.judge(compare.part_errors(y, r, model, check_optimized.TOPK_SEPARATION),
                             check_optimized.TOLERANCE.get(str(dtype), 0.0))

    return [("check_models", models), ("check_compiled", compiled),
            ("check_optimized", optimized)]


def check_model(model, rgb):
    """Problems found for one model (empty: every corruption rejected, intact passes)."""
    name = os.path.basename(model)
    quantized = any(n.op_type == "DynamicQuantizeLinear" for n in common.load_nodes(model))
    source = float_rewrite(model).SerializeToString() if quantized else model
    ref_session = common.ort_session(source)
    intact_session = common.ort_session(source, optimize=False)
    inp = ref_session.get_inputs()[0]
    fam = check_detections.family(model, ref_session)
    size = check_detections.input_size(ref_session)
    x, _ = check_detections.preprocess(rgb, size, fam)
    if inp.type == "tensor(float16)":
        x = x.astype(np.float16)
    r = ref_session.run(None, {inp.name: x})[0]
    intact = intact_session.run(None, {inp.name: x})[0]
    bad = compare.corruptions(r, model)
    problems = []
    for checker, judge in tensor_judges(model, r.dtype):
        passed, text = judge(intact, r)
        if not passed:
            problems.append(f"{checker} rejects the intact output: {text}")
        for what, y in bad.items():
            if what == "boxes moved 1 px" and r.dtype == np.float16:
                continue  # within fp16 rounding; the detection check sees it
            passed, text = judge(y, r)
            if passed:
                problems.append(f"{checker} accepts an output with {what}: {text}")
    tol = check_detections.tolerance("fp32", r.dtype == np.float16)
    h, w = rgb.shape[:2]
    scale = min(size / h, size / w)

    def detections(output, candidates=None):
        return check_detections.reference(FixedOutput(ref_session, output), model, rgb, CONF, IOU,
                                          candidates)

    # With the reference's NMS candidates, as check_detections matches: a corrupted detection
    # must not pass for an NMS tie either.
    candidates = []
    want = detections(r, candidates)
    if not want:
        problems.append("the reference finds nothing on the image: nothing to corrupt")
    found, _ = check_detections.match(want, detections(intact), CONF, tol, scale, candidates, IOU)
    if found:
        problems.append(f"check_detections rejects the intact detections: {found[0]}")
    for what in DETECTION_CORRUPTIONS:
        found, pairs = check_detections.match(want, detections(bad[what]), CONF, tol, scale,
                                              candidates, IOU)
        if not found:
            problems.append(f"check_detections accepts detections with {what} "
                            f"({check_detections.figures(pairs)}; allowed {tol})")
    if problems:
        print(f"FAIL {name}:")
    else:
        print(f"ok   {name}: {len(want)} detections; the intact output passes; {', '.join(bad)} "
              "are rejected")
    for p in problems:
        print(f"     {p}")
    return problems


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--decoder", required=True)
    ap.add_argument("--image", required=True)
    ap.add_argument("--models", required=True)
    ap.add_argument("--work", required=True)
    args = ap.parse_args()
    models = sorted(glob.glob(os.path.join(args.models, "*.onnx")))
    if not models or not os.path.isfile(args.image):
        common.skip(f"no models in {args.models} or no image {args.image}")
    common.import_onnxruntime()
    os.makedirs(args.work, exist_ok=True)
    pixels = os.path.join(args.work, "image.npy")
    common.run([args.decoder, args.image, pixels], "image decoder")
    rgb = np.load(pixels)
    t0 = time.time()
    failed = sum(bool(check_model(m, rgb)) for m in models)
    print(f"{len(models) - failed} of {len(models)} models: every corruption rejected, intact "
          f"outputs pass ({time.time() - t0:.1f} s)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
