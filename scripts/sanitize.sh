#!/usr/bin/env bash
# Builds the unit tests with AddressSanitizer + UndefinedBehaviorSanitizer (the asan preset, in
# build/asan, a unity build) and runs them. Run it before a change lands that touches memory
# handling; CI leaves it out to stay well under 30 minutes on two cores (it takes about 8 more).
# Expects scripts/setup.sh to have run (the packages and build/venv).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
cmake --preset asan -DCMAKE_UNITY_BUILD=ON -DPython3_EXECUTABLE="$root/build/venv/bin/python" \
  -DYOLOC_SHARED_DIR="${YOLOC_SHARED_DIR:-$root/../shared}"
cmake --build --preset asan -j "${JOBS:-$(nproc)}" --target yoloc_unit_tests
ctest --preset asan -j "${JOBS:-$(nproc)}" "$@"
