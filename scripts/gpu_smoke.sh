#!/usr/bin/env bash
# Runs the CUDA GPU tests on a machine with an NVIDIA GPU, from a build made elsewhere:
#
#   scripts/gpu_smoke.sh [DIR]        DIR: the build's cuda_gpu folder (default build/cuda_gpu),
#                                     which holds yoloc_cuda_gpu_tests and the libfmt it needs
#
# The binary needs the NVIDIA driver (libcuda.so.1, opened at run time) and the CUDA toolkit's
# libnvrtc.so.13 (found through its RUNPATH in /usr/local/cuda, else searched for here), nothing
# else. Writes into $OUT (default ./gpu_out): gpu_tests.log (the whole output), gpu_tests.json
# (gtest's report), timings.txt (one line per kernel config: layer, template, dtypes, config, us,
# TFLOP/s). Exit status: the test binary's.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
dir=${1:-$root/build/cuda_gpu}
bin=$dir/yoloc_cuda_gpu_tests
out=${OUT:-$PWD/gpu_out}
mkdir -p "$out"
log=$out/gpu_tests.log
[[ -x "$bin" ]] || { echo "no test binary at $bin (build target yoloc_cuda_gpu_tests)" | tee "$log"; exit 2; }

{
  echo "== machine"
  uname -a
  command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total \
    --format=csv,noheader
} >"$log" 2>&1

# libnvrtc: the RUNPATH covers /usr/local/cuda; otherwise take the first one found.
if ldd "$bin" | grep -q 'libnvrtc.so.13 => not found'; then
  lib=$(find /usr/local /usr/lib /opt -name 'libnvrtc.so.13*' -not -name '*alt*' 2>/dev/null | head -1)
  [[ -n "$lib" ]] && export LD_LIBRARY_PATH=$(dirname "$lib")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi
# libcuda: the loader's path, else the driver's usual folders.
if ! ldconfig -p 2>/dev/null | grep -q 'libcuda.so.1'; then
  for d in /usr/local/nvidia/lib64 /usr/local/nvidia/lib /usr/lib/x86_64-linux-gnu; do
    if [[ -e $d/libcuda.so.1 ]]; then
      export YOLOC_LIBCUDA=$d/libcuda.so.1
      break
    fi
  done
fi
{
  echo "== libraries (LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}, YOLOC_LIBCUDA=${YOLOC_LIBCUDA:-})"
  ldd "$bin"
  echo "== tests"
} >>"$log" 2>&1

"$bin" --gtest_output="json:$out/gpu_tests.json" 2>&1 | tee -a "$log"
rc=${PIPESTATUS[0]}
grep '^\[timing\]' "$log" | sed 's/^\[timing\] //' >"$out/timings.txt"
echo "== exit status $rc; $(wc -l <"$out/timings.txt") timed kernels in $out/timings.txt" | tee -a "$log"
exit "$rc"
