#!/usr/bin/env python3
"""Builds the seed corpora of the fuzz targets from the shared models and data (never kept in
the repository): scripts/fuzz.sh runs it into build/fuzz/seeds/<target>/.

usage: make_seeds.py --shared DIR --out DIR [--records FILE.jsonl] [--artifact FILE.ycm]
"""
import argparse
import glob
import hashlib
import os
import struct
import zlib

import numpy as np
import onnx
from onnx import helper, numpy_helper

MAX_INIT_ELEMENTS = 4096  # larger initializers become graph inputs in the single-node seeds


def write(folder, data):
    os.makedirs(folder, exist_ok=True)
    name = hashlib.sha1(data).hexdigest()[:16]
    with open(os.path.join(folder, name), "wb") as f:
        f.write(data)


def onnx_seeds(shared, out):
    """One small model per distinct (op, attributes) of each shared model: the node alone, its
    small initializers kept, everything else a graph input of the type shape inference gave."""
    seen = set()
    for path in sorted(glob.glob(os.path.join(shared, "models", "*.onnx"))):
        model = onnx.load(path)
        try:
            model = onnx.shape_inference.infer_shapes(model)
        except Exception:  # noqa: BLE001 - seeds are best effort
            pass
        g = model.graph
        types = {v.name: v for v in list(g.input) + list(g.value_info) + list(g.output)}
        inits = {t.name: t for t in g.initializer}
        for node in g.node:
            key = (node.op_type, node.domain, str(sorted((a.name, str(a)) for a in node.attribute)))
            if key in seen:
                continue
            seen.add(key)
            inputs, initializers = [], []
            for name in node.input:
                if not name:
                    continue
                t = inits.get(name)
                if t is not None and np.prod(t.dims) <= MAX_INIT_ELEMENTS:
                    initializers.append(t)
                elif t is not None:
                    inputs.append(helper.make_tensor_value_info(name, t.data_type, list(t.dims)))
                elif name in types:
                    inputs.append(types[name])
                else:
                    inputs.append(helper.make_tensor_value_info(name, onnx.TensorProto.FLOAT, None))
            outputs = [types.get(o) or helper.make_tensor_value_info(o, onnx.TensorProto.FLOAT, None)
                       for o in node.output if o]
            graph = helper.make_graph([node], "seed", inputs, outputs, initializers)
            seed = helper.make_model(graph, opset_imports=model.opset_import,
                                     ir_version=model.ir_version)
            write(out, seed.SerializeToString())


def png(width, height, color_type, pixels):
    def chunk(kind, body):
        return (struct.pack(">I", len(body)) + kind + body +
                struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF))
    channels = {0: 1, 2: 3, 4: 2, 6: 4}[color_type]
    rows = b"".join(b"\x00" + pixels[y * width * channels:(y + 1) * width * channels]
                    for y in range(height))
    return (b"\x89PNG\r\n\x1a\n" +
            chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, color_type, 0, 0, 0)) +
            chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))


def bmp(width, height, bgr):
    row = width * 3
    pad = (4 - row % 4) % 4
    body = b"".join(bgr[y * row:(y + 1) * row] + b"\x00" * pad for y in reversed(range(height)))
    header = struct.pack("<2sIHHI", b"BM", 54 + len(body), 0, 0, 54)
    info = struct.pack("<IiiHHIIiiII", 40, width, height, 1, 24, 0, len(body), 2835, 2835, 0, 0)
    return header + info + body


def image_seeds(shared, out):
    paths = sorted(glob.glob(os.path.join(shared, "data", "images", "*.jpg")))
    paths += sorted(glob.glob(os.path.join(shared, "data", "coco-eval", "images", "*.jpg")),
                    key=os.path.getsize)[:6]
    for p in paths:
        with open(p, "rb") as f:
            write(out, f.read())
    rng = np.random.default_rng(0)
    for w, h in [(1, 1), (7, 5), (16, 16)]:
        for ct, ch in [(0, 1), (2, 3), (4, 2), (6, 4)]:
            write(out, png(w, h, ct, rng.integers(0, 256, w * h * ch, dtype=np.uint8).tobytes()))
        rgb = rng.integers(0, 256, w * h * 3, dtype=np.uint8).tobytes()
        write(out, bmp(w, h, rgb))
        write(out, b"P6\n%d %d\n255\n" % (w, h) + rgb)
        write(out, b"P5\n%d %d\n255\n" % (w, h) + rgb[:w * h])


def npy_seeds(shared, out):
    """Arrays of every dtype the reader takes, in each .npy format version, with the shapes of
    the shared models' small initializers."""
    import io
    shapes = set()
    for path in sorted(glob.glob(os.path.join(shared, "models", "*.onnx"))):
        for t in onnx.load(path).graph.initializer:
            if np.prod(t.dims) <= 64:
                shapes.add(tuple(t.dims))
    shapes = sorted(shapes)[:12] + [(1, 3, 4, 4), (0,), ()]
    dtypes = ["float32", "float16", "float64", "int8", "uint8", "int32", "int64", "bool"]
    for i, shape in enumerate(shapes):
        for version in [(1, 0), (2, 0), (3, 0)]:
            a = (np.arange(int(np.prod(shape))) % 7).astype(dtypes[i % len(dtypes)]).reshape(shape)
            buf = io.BytesIO()
            np.lib.format.write_array(buf, a, version=version)
            write(out, buf.getvalue())
    for dtype in dtypes:
        buf = io.BytesIO()
        np.save(buf, np.ones((2, 3), dtype=dtype))
        write(out, buf.getvalue())


def records_seeds(records, out):
    """Pieces of a records file: its lines one by one and in runs of ten."""
    with open(records, "rb") as f:
        lines = f.read().splitlines(keepends=True)
    for i in range(0, min(len(lines), 200), 10):
        write(out, b"".join(lines[i:i + 10]))
    for line in lines[:40]:
        write(out, line)


def artifact_seeds(artifact, out):
    """The manifest of a compiled artifact with a short blob section (the packed form the fuzz
    target takes), and the file's first bytes whole (its raw form, first byte 0x01)."""
    with open(artifact, "rb") as f:
        data = f.read()
    manifest_offset, manifest_size = struct.unpack_from("<QQ", data, 16)
    manifest = data[manifest_offset:manifest_offset + manifest_size]
    write(out, manifest + b"\x00" + bytes(range(256)) * 4)
    write(out, manifest + b"\x00")
    write(out, b"\x01" + data[:4096])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shared", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--records")
    ap.add_argument("--artifact")
    a = ap.parse_args()
    onnx_seeds(a.shared, os.path.join(a.out, "onnx_import_fuzzer"))
    image_seeds(a.shared, os.path.join(a.out, "image_decoder_fuzzer"))
    npy_seeds(a.shared, os.path.join(a.out, "npy_reader_fuzzer"))
    if a.records:
        records_seeds(a.records, os.path.join(a.out, "records_parser_fuzzer"))
    os.makedirs(os.path.join(a.out, "artifact_reader_fuzzer"), exist_ok=True)
    if a.artifact:
        artifact_seeds(a.artifact, os.path.join(a.out, "artifact_reader_fuzzer"))
    for d in sorted(os.listdir(a.out)):
        print(f"{d}: {len(os.listdir(os.path.join(a.out, d)))} seeds")


if __name__ == "__main__":
    main()
