#!/usr/bin/env python3
"""A whole shared model cross-compiled for aarch64 runs under qemu-user and matches.

`yoloc compile MODEL --cc aarch64-linux-gnu-g++` makes an artifact whose kernels are NEON code
for ARMv8-A. The runtime library itself is not cross-built here (its dependencies are Debian
amd64 packages), so the artifact's program is run by a small harness generated from the
manifest: it includes the artifact's kernel source (--emit-source), reads the artifact's weights
blob, binds every call exactly as the manifest says and calls the kernels in order. The harness
is linked statically for aarch64 and run under qemu-aarch64; its output is compared with the
reference executor on the same input (1e-4 relative, each part of the output to its own scale:
tests/e2e/compare.py).

usage: check_aarch64_model.py --yoloc BIN --model M.onnx --work DIR [--cxx CXX] [--qemu QEMU]
"""
import argparse
import os
import shutil
import struct
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
import common  # noqa: E402
import compare  # noqa: E402

HARNESS = r"""
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

static std::vector<char> read_file(const char* path) {
  FILE* f = std::fopen(path, "rb");
  if (!f) { std::perror(path); std::exit(2); }
  std::fseek(f, 0, SEEK_END);
  std::vector<char> data(std::ftell(f));
  std::fseek(f, 0, SEEK_SET);
  if (std::fread(data.data(), 1, data.size(), f) != data.size()) std::exit(2);
  std::fclose(f);
  return data;
}

int main(int argc, char** argv) {
  if (argc != 4) return 2;
  std::vector<char> weights_file = read_file(argv[1]), input = read_file(argv[2]);
  char* weights = static_cast<char*>(std::aligned_alloc(64, (weights_file.size() + 63) / 64 * 64));
  std::memcpy(weights, weights_file.data(), weights_file.size());
  char* arena = static_cast<char*>(std::aligned_alloc(64, ARENA_BYTES));
  std::memset(arena, 0, ARENA_BYTES);
  std::memcpy(arena + INPUT_OFFSET, input.data(), input.size());
CALLS
  FILE* f = std::fopen(argv[3], "wb");
  std::fwrite(arena + OUTPUT_OFFSET, 1, OUTPUT_BYTES, f);
  std::fclose(f);
  return 0;
}
"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--yoloc", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--cxx", default="aarch64-linux-gnu-g++")
    ap.add_argument("--qemu", default="qemu-aarch64")
    a = ap.parse_args()
    if not os.path.isfile(a.model):
        common.skip(f"{a.model} not found")
    for tool in (a.cxx, a.qemu):
        if not shutil.which(tool):
            common.skip(f"{tool} is not installed (apt-get install g++-aarch64-linux-gnu qemu-user)")
    os.makedirs(a.work, exist_ok=True)
    artifact = os.path.join(a.work, "model-aarch64.ycm")
    source = os.path.join(a.work, "kernels.cpp")
    t0 = time.time()
    common.run([a.yoloc, "compile", a.model, "-o", artifact, "--force", "--cc", a.cxx,
                "--emit-source", source], "yoloc compile --cc")
    print(f"cross-compiled in {time.time() - t0:.1f} s")
    manifest, blobs = common.read_artifact(artifact)
    if not manifest["target"].endswith("neon"):
        print(f"FAIL: target is {manifest['target']}, expected cpu-neon")
        return 1
    if blobs["kernels.so"][18:20] != struct.pack("<H", 183):  # ELF e_machine EM_AARCH64
        print("FAIL: the artifact's kernel library is not an aarch64 ELF object")
        return 1
    prog = manifest["program"]
    calls = []
    for c in prog["calls"]:
        args = ", ".join(
            f"(void*)({'arena' if b['buffer'] == 'arena' else 'weights'} + {b['offset']})"
            for b in c["args"])
        params = ", ".join(str(p) for p in c["params"]) or "0"
        calls.append(f"  {{ void* a[] = {{{args or 'nullptr'}}}; const int64_t p[] = {{{params}}};"
                     f" {c['symbol']}(a, p, 0, {c['work_items']}); }}")
    spec_in, spec_out = manifest["inputs"][0], manifest["outputs"][0]
    out_bytes = 4 * int(np.prod(spec_out["shape"]))
    harness = HARNESS.replace("CALLS", "\n".join(calls))
    for k, v in {"ARENA_BYTES": prog["arena_bytes"], "INPUT_OFFSET": prog["inputs"][0]["offset"],
                 "OUTPUT_OFFSET": prog["outputs"][0]["offset"], "OUTPUT_BYTES": out_bytes}.items():
        harness = harness.replace(k, f"{v}ull")
    main_cpp = os.path.join(a.work, "harness.cpp")
    with open(main_cpp, "w") as f:
        f.write(f'#include "{os.path.abspath(source)}"\n' + harness)
    exe = os.path.join(a.work, "harness")
    t0 = time.time()
    common.run([a.cxx, "-O2", "-march=armv8-a", "-fno-trapping-math", "-fno-math-errno",
                "-ffp-contract=fast", "-std=c++17", "-static", main_cpp, "-o", exe],
               "aarch64 harness build")
    print(f"harness built in {time.time() - t0:.1f} s")
    x = np.random.default_rng(3).random(spec_in["shape"], dtype=np.float32)
    x.tofile(os.path.join(a.work, "input.bin"))
    with open(os.path.join(a.work, "weights.bin"), "wb") as f:
        f.write(blobs["weights"])
    t0 = time.time()
    common.run([a.qemu, exe, os.path.join(a.work, "weights.bin"),
                os.path.join(a.work, "input.bin"), os.path.join(a.work, "output.bin")],
               "qemu-aarch64 harness")
    print(f"ran under qemu-aarch64 in {time.time() - t0:.1f} s")
    got = np.fromfile(os.path.join(a.work, "output.bin"), dtype=np.float32)
    got = got.reshape(spec_out["shape"])
    ref = common.yoloc_exec(a.yoloc, a.model, {spec_in["name"]: x},
                            os.path.join(a.work, "reference"), ["--precision", "fp32"])
    want = ref[spec_out["name"]]
    ok, text = compare.judge(compare.part_errors(got, want, a.model, 1e-5), 1e-4)
    print(f"{'ok' if ok else 'FAIL'}: aarch64 {os.path.basename(a.model)} vs reference executor: "
          f"relative error {text}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
