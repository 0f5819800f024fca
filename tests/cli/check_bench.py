#!/usr/bin/env python3
"""`yoloc bench` and `yoloc profile` on an artifact whose input is float16 (the shared
yolov5n-fp16 export compiled for the CPU, which keeps its fp16 image input): both feed random
inputs of the input's own type (as they must for CUDA artifacts of --io-precision fp16), and
bench's JSON holds a positive median and the batch.

usage: check_bench.py --yoloc BIN --model yolov5n-fp16-dynbatch.onnx --work DIR
"""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
import common  # noqa: E402


def run(cmd):
    return common.run(cmd, cmd[1]).stdout


def main():
    a = common.model_args()
    os.makedirs(a.work, exist_ok=True)
    art = os.path.join(a.work, "v5n-fp16.ycm")
    run([a.yoloc, "compile", a.model, "--family", "yolov5", "-o", art, "--force"])
    dtype = json.loads(run([a.yoloc, "inspect", art, "--json", "-"]))["inputs"][0]["dtype"]
    if dtype != "float16":
        print(f"FAIL: the artifact's input is {dtype}, the test needs a float16 one")
        return 1
    out = os.path.join(a.work, "bench.json")
    run([a.yoloc, "bench", art, "--iters", "3", "--warmup", "1", "--json", out])
    r = json.load(open(out))
    if not r.get("median_ms", 0) > 0 or r.get("batch") != 1:
        print(f"FAIL: bench JSON {r}")
        return 1
    prof = run([a.yoloc, "profile", art, "--iters", "1"])
    print(f"bench on a float16 input: median {r['median_ms']:.2f} ms; profile:\n" +
          "\n".join(prof.splitlines()[:3]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
