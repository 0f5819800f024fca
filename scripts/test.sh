#!/usr/bin/env bash
# Builds yoloc (Release) and runs every test with the shared models and the ONNX test data:
#
#   scripts/test.sh [ctest arguments...]      e.g. scripts/test.sh -L conformance
#
# Environment: YOLOC_BUILD_DIR (default build/release), YOLOC_SHARED_DIR (default ../shared),
# PYTHON (the interpreter with onnx, onnxruntime and numpy; default: the build/venv that
# scripts/setup.sh makes, else python3), JOBS (default: the number of cores).
# The last line counts the tests passed, failed and skipped (scripts/test_summary.py, from ctest's
# JUnit report in $build/ctest-results.xml); the exit status is ctest's.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${YOLOC_BUILD_DIR:-$root/build/release}
shared=${YOLOC_SHARED_DIR:-$root/../shared}
default_python=python3
[[ -x "$root/build/venv/bin/python" ]] && default_python=$root/build/venv/bin/python
python=$(command -v "${PYTHON:-$default_python}")
jobs=${JOBS:-$(nproc)}

generator=()
[[ -f "$build/CMakeCache.txt" ]] || generator=(-G Ninja)
cmake -S "$root" -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
  -DYOLOC_SHARED_DIR="$shared" -DPython3_EXECUTABLE="$python"
cmake --build "$build" -j "$jobs"
results=$build/ctest-results.xml
rm -f "$results"
status=0
ctest --test-dir "$build" --output-on-failure -j "$jobs" --output-junit "$results" "$@" || status=$?
if [[ -f "$results" ]]; then
  "$python" "$root/scripts/test_summary.py" "$results"
fi
exit "$status"
