"""Helpers shared by the end-to-end checks: skipping, running yoloc, reading .npy outputs."""
import json
import os
import re
import subprocess
import sys

SKIP = 77  # ctest SKIP_RETURN_CODE


def skip(message):
    print(f"skipped: {message}")
    sys.exit(SKIP)


def model_args(description=None):
    """Parses the arguments every per-model check takes (--yoloc, --model, --work); a model
    that is not there skips the check."""
    import argparse

    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--yoloc", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--target", default="cpu", help="compile target: cpu, or cuda (on a GPU machine)")
    ap.add_argument("--precision", default="fp32", help="compile precision (cuda: fp32, fp16, bf16)")
    ap.add_argument("--image", help="an image, for the checks that feed one to top-K heads")
    ap.add_argument("--decoder", help="yoloc_test_decode_image, with --image")
    args = ap.parse_args()
    if not os.path.isfile(args.model):
        skip(f"model {args.model} not found")
    return args


def input_range(model):
    """The largest value of a model's image input: 255 for YOLOX, which takes raw pixels (Megvii's
    preprocessing), 1 for the others (pixels / 255). Random inputs are drawn in [0, range): on
    [0, 1) YOLOX sees a black image, its objectness falls to ~1e-4 and below, where ONNX Runtime's
    own Sigmoid is off by 100% (its optimized and unoptimized graphs differ by 7.5e-4 of the
    objectness' scale there, 3e-6 on 0..255)."""
    return 255.0 if "yolox" in os.path.basename(model).lower() else 1.0


def read_artifact(path):
    """A .ycm file's manifest (dict) and blobs ({name: bytes}), from the fixed header: magic,
    format version, flags, then manifest offset/size and blob section offset (little endian)."""
    import struct

    with open(path, "rb") as f:
        data = f.read()
    _, _, moff, msize, boff, _ = struct.unpack_from("<IIQQQQ", data, 8)
    manifest = json.loads(data[moff:moff + msize])
    blobs = {b["name"]: data[boff + b["offset"]:boff + b["offset"] + b["size"]]
             for b in manifest["blobs"]}
    return manifest, blobs


def has_subcommand(yoloc, name):
    """Whether this yoloc build has the subcommand (its --help shows `Usage: ... NAME`; without the
    subcommand CLI11 prints the top-level help instead)."""
    p = subprocess.run([yoloc, name, "--help"], capture_output=True, text=True)
    return p.returncode == 0 and re.search(rf"Usage: \S+ {name}\b", p.stdout) is not None


def import_onnxruntime():
    try:
        import onnxruntime  # noqa: F401
    except ImportError as e:
        skip(f"onnxruntime is not installed ({e}); pip install onnxruntime")
    import onnxruntime
    return onnxruntime


def ort_session(model, optimize=True):
    """An ONNX Runtime (CPU) session of a model (a path or serialized bytes); optimize=False
    turns its graph optimizations (fusions) off: another, equally correct evaluation."""
    ort = import_onnxruntime()
    opts = ort.SessionOptions()
    opts.log_severity_level = 3
    if not optimize:
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return ort.InferenceSession(model, opts, providers=["CPUExecutionProvider"])


def run(cmd, what):
    """Runs a command; on failure prints its output and exits 1."""
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        print(f"FAIL: {what} exited with {p.returncode}: {' '.join(cmd)}")
        print(p.stdout[-4000:], p.stderr[-4000:], sep="\n")
        sys.exit(1)
    return p


def yoloc_exec(yoloc, model, feeds, work, extra=()):
    """Runs `yoloc exec` on numpy inputs (with extra arguments); returns {output name: array}."""
    import numpy as np

    os.makedirs(work, exist_ok=True)
    args = [yoloc, "exec", model, "--output-dir", os.path.join(work, "out")]
    for name, array in feeds.items():
        path = os.path.join(work, f"input_{name}.npy")
        np.save(path, array)
        args += ["--input", f"{name}={path}"]
    run(args + list(extra), "yoloc exec")
    with open(os.path.join(work, "out", "outputs.json")) as f:
        listing = json.load(f)["outputs"]
    return {o["name"]: np.load(os.path.join(work, "out", o["file"])) for o in listing}


def load_nodes(model):
    """The nodes of an ONNX model's main graph."""
    import onnx

    return onnx.load(model, load_external_data=False).graph.node


def onnx_reference_evaluator(model):
    """The ONNX reference evaluator (onnx.reference) for a model: a second, independent reference.
    Its GatherElements uses numpy.choose, which fails on axes longer than 64; this one gathers
    with numpy.take_along_axis (the same semantics)."""
    import numpy as np
    from onnx.reference import ReferenceEvaluator
    from onnx.reference.op_run import OpRun

    class GatherElements(OpRun):
        def _run(self, data, indices, axis=None):
            axis = axis or 0
            idx = np.where(indices < 0, indices + data.shape[axis], indices)
            return (np.take_along_axis(data, idx, axis=axis),)

    return ReferenceEvaluator(model, new_ops=[GatherElements])


def relative_error(y, r):
    """(max |y - r| / max(max |r|, 1e-6), fraction of elements whose error exceeds 1e-4 of it)."""
    import numpy as np

    r64, y64 = r.astype(np.float64), y.astype(np.float64)
    if not r.size:
        return 0.0, 0.0
    scale = max(float(np.nanmax(np.abs(r64))), 1e-6)
    diff = np.abs(r64 - y64) / scale
    return float(np.nanmax(diff)), float(np.mean(diff > 1e-4))


# Shared models a target cannot compile yet, with the reason. Their compile must fail with a
# one-line user error naming the missing kernel (checked), and the test is reported as skipped.
UNSUPPORTED = {
    "cpu": {},
    "cuda": {},
    "opencl": {
        "yolov10n-dynint8-e2e.onnx": "the int64 index ops of the end-to-end head (TopK, "
                                     "GatherElements) have no OpenCL kernel yet",
        "yolov5n-fp16-dynbatch.onnx": "float16 values have no OpenCL kernel yet",
    },
}


def check_known_unsupported(yoloc, model, work, target="cpu", extra=()):
    """For a model in UNSUPPORTED[target]: checks that `yoloc compile --target T` refuses it
    cleanly, then exits as skipped; returns for any other model."""
    reason = UNSUPPORTED[target].get(os.path.basename(model))
    if reason is None:
        return
    os.makedirs(work, exist_ok=True)
    p = subprocess.run([yoloc, "compile", model, "-o", os.path.join(work, "x.ycm"), "--force",
                        "--target", target, *extra], capture_output=True, text=True)
    err = p.stderr.strip()
    if p.returncode != 1 or len(err.splitlines()) != 1 or "kernel template takes" not in err:
        print(f"FAIL: compiling {model} should fail with one clear error line, got exit "
              f"{p.returncode}: {err[:2000]}")
        sys.exit(1)
    skip(f"the {target} target cannot compile {os.path.basename(model)}: {reason} ({err})")
