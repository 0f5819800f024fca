#!/usr/bin/env bash
# ctest fuzz_<target>: one libFuzzer target of fuzz/ (built by the fuzz_build fixture, that is
# scripts/fuzz.sh --build) runs each input of fuzz/regressions/<target> once (crashes found and
# fixed must stay fixed), then fuzzes for SECONDS from its seed corpus. Fails on any crash, leak,
# timeout (10 s an input) or out-of-memory (2 GB), leaving the input in BUILD/crashes/<target>/.
# Skips (77) where clang++-14 with libFuzzer is missing.
#
# usage: check_fuzzer.sh BUILD TARGET SECONDS
set -euo pipefail
root=$(cd "${BASH_SOURCE[0]%/*}/../.." && pwd)
build=$1 target=$2 seconds=$3
bin=$build/fuzz/$target
if ! command -v clang++-14 >/dev/null; then
  echo "skipped: no clang++-14 with libFuzzer (Debian: apt-get install clang-14)"
  exit 77
fi
if [ ! -x "$bin" ]; then
  echo "error: $bin is missing (the fuzz_build test builds it: scripts/fuzz.sh --build)" >&2
  exit 1
fi
crashes=$build/crashes/$target
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$crashes" "$work/corpus"
flags=(-timeout=10 -rss_limit_mb=2048 -seed="${YOLOC_FUZZ_SEED:-1}" -artifact_prefix="$crashes/")

shopt -s nullglob
regressions=("$root/fuzz/regressions/$target"/*)
if [ ${#regressions[@]} -gt 0 ]; then
  "$bin" "${flags[@]}" "${regressions[@]}" >"$work/regressions.log" 2>&1 || {
    grep -E "ERROR|runtime error|SUMMARY|Running:" "$work/regressions.log" | tail -5 >&2
    echo "error: $target crashes again on an input of fuzz/regressions/$target" >&2
    exit 1
  }
fi
# The corpus grows in a scratch folder: the seeds stay as made.
status=0
"$bin" "${flags[@]}" -max_total_time="$seconds" -print_final_stats=1 "$work/corpus" \
  "$build/seeds/$target" >"$work/fuzz.log" 2>&1 || status=$?
execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/fuzz.log")
cov=$(grep -o 'cov: [0-9]*' "$work/fuzz.log" | tail -1)
if [ "$status" -ne 0 ]; then
  grep -E "ERROR|runtime error|SUMMARY|Test unit written" "$work/fuzz.log" | tail -6 >&2
  echo "error: $target failed after ${execs:-?} runs (reproduce: $bin FILE, FILE in $crashes)" >&2
  exit 1
fi
echo "$target: ${#regressions[@]} regression inputs pass; ${execs:-0} runs in ${seconds} s, ${cov:-cov: ?}, no crash"
