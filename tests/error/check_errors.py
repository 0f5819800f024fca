#!/usr/bin/env python3
"""Bad inputs must give a user error: exit code 1 and exactly one stderr line `error: ...` that
names the problem. A signal (crash, abort), exit code 3 (internal error) or a multi-line message
fails the case (`yoloc run`'s "warning: skipping ..." lines about unreadable inputs aside: it
goes on with the others and fails at the end).

usage: check_errors.py --yoloc BIN --shared DIR --work DIR --case NAME
"""
import argparse
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
from common import SKIP, has_subcommand  # noqa: E402


def skip(message):
    print(f"skipped: {message}")
    sys.exit(SKIP)


def onnx_modules():
    try:
        import numpy as np
        import onnx
        from onnx import TensorProto, helper
    except ImportError as e:
        skip(f"the Python packages onnx and numpy are needed ({e})")
    return np, onnx, TensorProto, helper


def save_model(path, nodes, inputs, outputs, opset=13, domains=()):
    np, onnx, TensorProto, helper = onnx_modules()
    graph = helper.make_graph(nodes, "g", inputs, outputs)
    opsets = [helper.make_opsetid("", opset)] + [helper.make_opsetid(d, 1) for d in domains]
    model = helper.make_model(graph, opset_imports=opsets, producer_name="yoloc-error-tests")
    onnx.save(model, path)
    return path


def two_input_model(work):
    """Z = X + Y with X, Y float32[1, 3, 4, 4]."""
    np, onnx, TensorProto, helper = onnx_modules()
    t = lambda n: helper.make_tensor_value_info(n, TensorProto.FLOAT, [1, 3, 4, 4])  # noqa: E731
    return save_model(os.path.join(work, "add.onnx"),
                      [helper.make_node("Add", ["X", "Y"], ["Z"], name="add0")],
                      [t("X"), t("Y")], [t("Z")])


def npy(work, name, shape, dtype="float32"):
    np = onnx_modules()[0]
    path = os.path.join(work, name)
    np.save(path, np.zeros(shape, dtype=dtype))
    return path


class Case:
    def __init__(self, args):
        self.yoloc, self.shared, self.work = args.yoloc, args.shared, args.work

    def model_commands(self, model):
        """Every command that loads a model file."""
        x = npy(self.work, "x.npy", [1, 3, 4, 4])
        out = os.path.join(self.work, "out")
        return [[self.yoloc, "inspect", model],
                [self.yoloc, "exec", model, "--input", f"X={x}", "--output-dir", out]]

    def exec_add(self, *inputs):
        model = two_input_model(self.work)
        args = [self.yoloc, "exec", model, "--output-dir", os.path.join(self.work, "out")]
        for spec in inputs:
            args += ["--input", spec]
        return [args]

    def shared_model(self):
        path = os.path.join(self.shared, "models", "yolov8n.onnx")
        if not os.path.isfile(path):
            skip(f"{path} not found")
        return path

    def write(self, name, data):
        path = os.path.join(self.work, name)
        with open(path, "wb") as f:
            f.write(data)
        return path

    # Each case returns (commands, substrings every message must contain).
    def missing_model(self):
        return self.model_commands(os.path.join(self.work, "no-such-model.onnx")), [
            "no-such-model.onnx", "does not exist"]

    def model_is_directory(self):
        return self.model_commands(self.work), ["directory"]

    def empty_model(self):
        return self.model_commands(self.write("empty.onnx", b"")), ["empty.onnx", "empty"]

    def truncated_model(self):
        with open(self.shared_model(), "rb") as f:
            data = f.read()
        return self.model_commands(self.write("truncated.onnx", data[:len(data) // 2])), [
            "truncated.onnx"]

    def garbage_model(self):
        np = onnx_modules()[0]
        data = np.random.default_rng(1234).integers(0, 256, 4096, dtype=np.uint8).tobytes()
        return self.model_commands(self.write("garbage.onnx", data)), ["garbage.onnx"]

    def not_a_model(self):
        np, onnx, TensorProto, helper = onnx_modules()
        tensor = onnx.numpy_helper.from_array(np.arange(12, dtype=np.float32), "weights")
        return self.model_commands(self.write("tensor.onnx", tensor.SerializeToString())), [
            "tensor.onnx"]

    def unsupported_op(self):
        np, onnx, TensorProto, helper = onnx_modules()
        t = lambda n: helper.make_tensor_value_info(n, TensorProto.FLOAT, [1, 3, 4, 4])  # noqa
        model = save_model(os.path.join(self.work, "einsum.onnx"),
                           [helper.make_node("Einsum", ["X"], ["Z"], name="my_einsum",
                                             equation="bchw->bchw")],
                           [t("X")], [t("Z")], opset=13)
        # The message names the op, the node and the opset, and lists what is supported.
        return self.model_commands(model), ["Einsum", "my_einsum", "13", "supports", "Add"]

    def custom_domain_op(self):
        np, onnx, TensorProto, helper = onnx_modules()
        t = lambda n: helper.make_tensor_value_info(n, TensorProto.FLOAT, [1, 3, 4, 4])  # noqa
        model = save_model(os.path.join(self.work, "custom.onnx"),
                           [helper.make_node("FancyOp", ["X"], ["Z"], name="fancy",
                                             domain="com.example")],
                           [t("X")], [t("Z")], domains=["com.example"])
        return self.model_commands(model), ["FancyOp", "com.example", "fancy"]

    def wrong_input_shape(self):
        x = npy(self.work, "x.npy", [1, 3, 5, 5])
        y = npy(self.work, "y.npy", [1, 3, 4, 4])
        return self.exec_add(f"X={x}", f"Y={y}"), ["'X'", "[1, 3, 4, 4]", "[1, 3, 5, 5]"]

    def wrong_input_dtype(self):
        x = npy(self.work, "x.npy", [1, 3, 4, 4], "int32")
        y = npy(self.work, "y.npy", [1, 3, 4, 4])
        return self.exec_add(f"X={x}", f"Y={y}"), ["'X'", "float32", "int32"]

    def missing_model_input(self):
        x = npy(self.work, "x.npy", [1, 3, 4, 4])
        return self.exec_add(f"X={x}"), ["'Y'"]

    def unknown_input_name(self):
        x = npy(self.work, "x.npy", [1, 3, 4, 4])
        return self.exec_add(f"X={x}", f"Y={x}", f"W={x}"), ["'W'"]

    def no_input_option(self):
        return self.exec_add(), ["--input"]

    def malformed_input_option(self):
        x = npy(self.work, "x.npy", [1, 3, 4, 4])
        return self.exec_add(x), ["--input", "NAME=FILE.npy"]

    def bad_npy(self):
        x = self.write("bad.npy", b"\x93NUMPY\x01\x00garbage")
        y = npy(self.work, "y.npy", [1, 3, 4, 4])
        return self.exec_add(f"X={x}", f"Y={y}"), ["bad.npy"]

    def missing_npy(self):
        y = npy(self.work, "y.npy", [1, 3, 4, 4])
        return self.exec_add(f"X={os.path.join(self.work, 'nothing.npy')}", f"Y={y}"), [
            "nothing.npy"]

    def unreadable_image(self):
        if not has_subcommand(self.yoloc, "run"):
            skip("`yoloc run` is not available in this build")
        image = self.write("not-an-image.jpg", b"this is not a JPEG\n")
        out = os.path.join(self.work, "out")
        return [[self.yoloc, "run", self.shared_model(), image, "--json", out + ".json"]], [
            "not-an-image.jpg", "cannot decode"]

    # --- command lines: each command's own help, flags that cannot apply ---

    def run_unknown_flag(self):
        return [[self.yoloc, "run", "--no-such-flag", "x.ycm", "x.jpg"]], [
            "--no-such-flag", "'yoloc run --help'"]

    def eval_without_data(self):
        return [[self.yoloc, "eval", "x.ycm"]], ["--data", "'yoloc eval --help'"]

    def inspect_dot_artifact(self):
        path = self.write("compiled.ycm", self._artifact())
        svg = os.path.join(self.work, "graph.svg")
        self._checks_after = lambda: not os.path.exists(svg) or "a file was written at " + svg
        return [[self.yoloc, "inspect", path, "--dot", svg]], ["--dot", "ONNX model"]

    def bench_family_for_artifact(self):
        path = self.write("compiled.ycm", self._artifact())
        return [[self.yoloc, "bench", path, "--family", "yolov8", "--iters", "1"],
                [self.yoloc, "profile", path, "--imgsz", "320", "--iters", "1"]], [
            "--family", "compiled.ycm"]

    def run_save_conf_without_save_txt(self):
        return [[self.yoloc, "run", self.shared_model(),
                 os.path.join(self.shared, "data", "images", "bus.jpg"), "--save-conf"]], [
            "--save-conf", "--save-txt"]

    def run_class_out_of_range(self):
        path = self.write("compiled.ycm", self._artifact())
        return [[self.yoloc, "run", path, os.path.join(self.shared, "data", "images", "bus.jpg"),
                 "--classes", "0", "80"]], ["--classes 80", "0 to 79"]

    def run_folder_without_images(self):
        empty = os.path.join(self.work, "empty")
        os.makedirs(empty, exist_ok=True)
        self.write(os.path.join("empty", "readme.txt"), b"no images here\n")
        return [[self.yoloc, "run", self.shared_model(), empty]], ["empty", "no image"]

    # --- compiled artifacts: made once (yoloc compile of yolov8n), then damaged copies ---

    def _artifact(self):
        cache = os.path.join(os.path.dirname(os.path.abspath(self.work)), "artifact-cache")
        os.makedirs(cache, exist_ok=True)
        path = os.path.join(cache, "yolov8n.ycm")
        if not os.path.isfile(path):
            p = subprocess.run([self.yoloc, "compile", self.shared_model(), "-o", path, "--force"],
                               capture_output=True, text=True)
            if p.returncode != 0:
                print(p.stdout, p.stderr)
                raise SystemExit("FAIL: yoloc compile of the shared model failed")
        with open(path, "rb") as f:
            return f.read()

    def _artifact_commands(self, path):
        image = os.path.join(self.shared, "data", "images", "bus.jpg")
        x = npy(self.work, "x.npy", [1, 3, 640, 640])
        return [[self.yoloc, "run", path, image],
                [self.yoloc, "inspect", path],
                [self.yoloc, "bench", path, "--iters", "1", "--warmup", "0"],
                [self.yoloc, "exec", path, "--input", f"images={x}", "--output-dir",
                 os.path.join(self.work, "out")]]

    def artifact_truncated(self):
        data = self._artifact()
        path = self.write("truncated.ycm", data[:len(data) // 2])
        return self._artifact_commands(path), ["truncated.ycm", "truncated"]

    def artifact_corrupt(self):
        data = bytearray(self._artifact())
        data[len(data) // 2] ^= 0xFF  # one bit flip in the weights
        path = self.write("corrupt.ycm", bytes(data))
        return self._artifact_commands(path), ["corrupt.ycm", "digest"]

    def artifact_tampered(self):
        data = self._artifact()
        i = data.find(b'"yolov8"')
        if i < 0:
            raise SystemExit("FAIL: the manifest has no family to tamper with")
        path = self.write("tampered.ycm", data[:i] + b'"yolov5"' + data[i + 8:])
        return self._artifact_commands(path), ["tampered.ycm", "digest"]

    def artifact_newer_version(self):
        data = bytearray(self._artifact())
        data[8:12] = (999).to_bytes(4, "little")  # the format version after the 8-byte magic
        path = self.write("newer.ycm", bytes(data))
        return self._artifact_commands(path), ["newer.ycm", "999"]

    def artifact_not_an_artifact(self):
        np = onnx_modules()[0]
        data = np.random.default_rng(7).integers(0, 256, 4096, dtype=np.uint8).tobytes()
        return self._artifact_commands(self.write("random.ycm", data)), ["random.ycm"]

    # --- images that are not regular files, or too large, refused at once ---

    def _run_artifact_on(self, image):
        path = self.write("model.ycm", self._artifact())
        return [[self.yoloc, "run", path, image, "--json", os.path.join(self.work, "d.json")]]

    def image_fifo(self):
        fifo = os.path.join(self.work, "pipe.jpg")
        if os.path.exists(fifo):
            os.remove(fifo)
        os.mkfifo(fifo)
        return self._run_artifact_on(fifo), ["pipe.jpg", "FIFO"]

    def image_device(self):
        return self._run_artifact_on("/dev/zero"), ["/dev/zero", "character device"]

    def image_directory(self):
        return self._run_artifact_on(self.work), ["directory"]

    def image_too_many_pixels(self):
        """An 18000x18000 grey-zero PNG of about 1 MB: 324 megapixels, refused by its header."""
        import struct
        import zlib
        path = os.path.join(self.work, "huge.png")
        if not os.path.isfile(path):
            def chunk(kind, body):
                return (struct.pack(">I", len(body)) + kind + body +
                        struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF))
            z = zlib.compressobj(9)
            row = bytes(1 + 18000 * 3)
            idat = b"".join(z.compress(row) for _ in range(18000)) + z.flush()
            with open(path, "wb") as f:
                f.write(b"\x89PNG\r\n\x1a\n" +
                        chunk(b"IHDR", struct.pack(">IIBBBBB", 18000, 18000, 8, 2, 0, 0, 0)) +
                        chunk(b"IDAT", idat) + chunk(b"IEND", b""))
        return self._run_artifact_on(path), ["huge.png", "18000x18000", "YOLOC_MAX_IMAGE_PIXELS"]

    def bench_too_many_threads(self):
        path = self.write("model.ycm", self._artifact())
        return [[self.yoloc, "bench", path, "--threads", "3000", "--iters", "1"]], ["3000", "1024"]

    def compile_output_exists(self):
        existing = self.write("precious.ycm", b"user data")
        self._checks_after = lambda: open(existing, "rb").read() == b"user data" or \
            "the existing output file was overwritten"
        return [[self.yoloc, "compile", self.shared_model(), "-o", existing]], [
            "precious.ycm", "--force"]

    def tune_artifact(self):
        path = self.write("compiled.ycm", self._artifact())
        return [[self.yoloc, "tune", path, "--records", os.path.join(self.work, "r.jsonl"),
                 "--trials", "1"]], ["compiled.ycm", "ONNX"]

    def profile_in_graph_cpu(self):
        path = self.write("cpu.ycm", self._artifact())
        return [[self.yoloc, "profile", path, "--in-graph", "--iters", "1"]], [
            "--in-graph", "no such graph", "cpu.ycm"]

    def compile_cuda_option_for_cpu(self):
        out = os.path.join(self.work, "x.ycm")
        return [[self.yoloc, "compile", self.shared_model(), "-o", out, "--target", "cpu",
                 "--b2b", "on"]], ["--b2b", "--target cuda"]

    def compile_io_precision_for_cpu(self):
        out = os.path.join(self.work, "x.ycm")
        return [[self.yoloc, "compile", self.shared_model(), "-o", out, "--target", "cpu",
                 "--io-precision", "fp16"]], ["--io-precision", "--target cuda"]

    def compile_lanes_for_cpu(self):
        out = os.path.join(self.work, "x.ycm")
        return [[self.yoloc, "compile", self.shared_model(), "-o", out, "--target", "cpu",
                 "--lanes", "2"]], ["--lanes", "--target cuda"]

    def compile_lanes_not_dividing_batch(self):
        out = os.path.join(self.work, "x.ycm")
        return [[self.yoloc, "compile", self.shared_model(), "-o", out, "--target", "cuda",
                 "--batch", "4", "--lanes", "3"]], ["--lanes 3", "batch (4)", "divides"]

    def compile_unknown_target(self):
        out = os.path.join(self.work, "x.ycm")
        return [[self.yoloc, "compile", self.shared_model(), "-o", out, "--target", "tpu"]], [
            "tpu", "cpu"]


def check(cmd, needles):
    """Returns a list of problems with the command's behaviour (empty when it is right)."""
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    except subprocess.TimeoutExpired:
        return ["did not finish in 300 s (a hang)"]
    err = "\n".join(line for line in p.stderr.strip().splitlines()
                    if not line.startswith("warning: skipping "))
    shown = " ".join(os.path.basename(c) if i == 0 else c for i, c in enumerate(cmd))
    print(f"$ {shown}\n  exit {p.returncode}: {err}")
    problems = []
    if p.returncode < 0:
        problems.append(f"killed by signal {-p.returncode} (a crash)")
    elif p.returncode == 3:
        problems.append("exit code 3: reported as an internal error, not a user error")
    elif p.returncode != 1:
        problems.append(f"exit code {p.returncode}, expected 1")
    if len(err.splitlines()) != 1:
        problems.append(f"stderr has {len(err.splitlines())} lines, expected one")
    if not err.startswith("error: "):
        problems.append("stderr does not start with 'error: '")
    for n in needles:
        if n not in err:
            problems.append(f"the message does not mention {n!r}")
    return problems


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--yoloc", required=True)
    ap.add_argument("--shared", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--case", required=True)
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    case = Case(args)
    fn = getattr(case, args.case, None)
    if fn is None or args.case.startswith("_"):
        print(f"error: unknown case '{args.case}'")
        return 2
    commands, needles = fn()
    failed = False
    for cmd in commands:
        for problem in check(cmd, needles):
            print(f"  FAIL: {problem}")
            failed = True
    after = getattr(case, "_checks_after", None)
    if after and after() is not True:
        print(f"  FAIL: {after()}")
        failed = True
    print("FAIL" if failed else "ok", args.case)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
