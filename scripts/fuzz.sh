#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/, clang-14, ASan + UBSan) in build/fuzz and runs each for
# SECONDS (default 60), PARALLEL (default 1) at a time. Seed corpora are made at run time from the
# shared models and data (fuzz/make_seeds.py; the artifact seed needs a yoloc of build/release,
# else that target starts empty); what the fuzzers find grows build/fuzz/corpus/<target>, crashes
# land in build/fuzz/crashes/<target>/ (reproduce one: build/fuzz/fuzz/<target> FILE).
# Prints one line per target (execs, coverage, crashes) and writes build/fuzz/summary.json.
#
# Each run also starts from fuzz/regressions/<target>: the inputs of crashes found and fixed.
#
# usage: scripts/fuzz.sh [SECONDS] [TARGET ...]
#        scripts/fuzz.sh --build [TARGET ...]   builds the targets and the seeds only (the `fuzz`
#                                               tests' fixture; exit 77 without clang/libFuzzer)
#   env: PARALLEL, JOBS (build), YOLOC_SHARED_DIR, PYTHON (with onnx and numpy), YOLOC (a release
#        yoloc for the artifact seed), FUZZ_FLAGS (more libFuzzer flags, e.g. "-fork=1
#        -ignore_crashes=1" to go on after a crash), YOLOC_FUZZ_BUILD_DIR (default build/fuzz)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build_only=0
if [ "${1:-}" = "--build" ]; then
  build_only=1
  seconds=0
else
  seconds=${1:-60}
fi
shift || true
all=(onnx_import_fuzzer artifact_reader_fuzzer image_decoder_fuzzer npy_reader_fuzzer
     records_parser_fuzzer)
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=("${all[@]}")
build=${YOLOC_FUZZ_BUILD_DIR:-$root/build/fuzz}
shared=${YOLOC_SHARED_DIR:-$root/../shared}
python=${PYTHON:-$root/build/venv/bin/python}
yoloc=${YOLOC:-$root/build/release/yoloc}

# libFuzzer ships with clang (Debian: clang-14); without it there is nothing to build.
probe=$(mktemp -d)
if ! command -v clang++-14 >/dev/null ||
   ! echo 'extern "C" int LLVMFuzzerTestOneInput(const char*, unsigned long) { return 0; }' |
     clang++-14 -x c++ -fsanitize=fuzzer,address - -o "$probe/probe" 2>/dev/null; then
  rm -rf "$probe"
  echo "skipped: no clang++-14 with libFuzzer (Debian: apt-get install clang-14)"
  exit 77
fi
rm -rf "$probe"

mkdir -p "$build"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 \
  -DCMAKE_CXX_FLAGS_RELEASE="-O1 -gline-tables-only" -DCMAKE_C_FLAGS_RELEASE="-O1" \
  -DCMAKE_UNITY_BUILD=ON -DYOLOC_FUZZ=ON -DYOLOC_CUDA=OFF -DYOLOC_BUILD_TESTS=OFF \
  -DYOLOC_BUILD_BENCH=OFF >"$build.configure.log" 2>&1 || { cat "$build.configure.log"; exit 1; }
cmake --build "$build" -j "${JOBS:-$(nproc)}" --target "${targets[@]}"

seeds=$build/seeds
if [ ! -d "$seeds" ]; then
  artifact_args=()
  if [ -x "$yoloc" ] && [ -f "$shared/models/yolov8n.onnx" ]; then
    mkdir -p "$build/seed-src"
    [ -f "$build/seed-src/yolov8n.ycm" ] ||
      "$yoloc" compile "$shared/models/yolov8n.onnx" -o "$build/seed-src/yolov8n.ycm" --force >/dev/null
    artifact_args=(--artifact "$build/seed-src/yolov8n.ycm")
  fi
  "$python" "$root/fuzz/make_seeds.py" --shared "$shared" --out "$seeds.tmp" \
    --records "$root/records/cuda-sm_90.jsonl" "${artifact_args[@]}"
  mv "$seeds.tmp" "$seeds"
fi
[ "$build_only" = 1 ] && exit 0

run_one() {
  local t=$1
  mkdir -p "$build/corpus/$t" "$build/crashes/$t"
  local dirs=("$build/corpus/$t" "$seeds/$t")
  [ -d "$root/fuzz/regressions/$t" ] && dirs+=("$root/fuzz/regressions/$t")
  # shellcheck disable=SC2086
  "$build/fuzz/$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$build/crashes/$t/" ${FUZZ_FLAGS:-} "${dirs[@]}" \
    >"$build/$t.log" 2>&1 || true
}
pids=()
for t in "${targets[@]}"; do
  run_one "$t" &
  pids+=($!)
  while [ "$(jobs -rp | wc -l)" -ge "${PARALLEL:-1}" ]; do sleep 1; done
done
wait "${pids[@]}" 2>/dev/null || true

"$python" - "$build" "$seconds" "${targets[@]}" <<'PY'
import json, os, re, sys
build, seconds, targets = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
summary = {}
for t in targets:
    log = open(os.path.join(build, t + ".log"), errors="replace").read()
    stats = dict(re.findall(r"stat::(\w+):\s+(\d+)", log))
    cov = re.findall(r"cov: (\d+) ft: (\d+)", log)
    # -fork=N (FUZZ_FLAGS) prints no final stats: its last "#EXECS: cov: ..." line counts.
    forked = re.findall(r"^#(\d+): cov: .* exec/s (\d+)", log, re.M)
    if forked and "number_of_executed_units" not in stats:
        stats["number_of_executed_units"], stats["average_exec_per_sec"] = forked[-1]
    crashes = sorted(os.listdir(os.path.join(build, "crashes", t)))
    summary[t] = {"seconds": seconds,
                  "execs": int(stats.get("number_of_executed_units", 0)),
                  "execs_per_s": int(stats.get("average_exec_per_sec", 0)),
                  "coverage_edges": int(cov[-1][0]) if cov else 0,
                  "features": int(cov[-1][1]) if cov else 0,
                  "corpus": len(os.listdir(os.path.join(build, "corpus", t))),
                  "peak_rss_mb": int(stats.get("peak_rss_mb", 0)),
                  "crash_files": crashes}
    s = summary[t]
    print(f"{t:<24} execs {s['execs']:>9}  cov {s['coverage_edges']:>6}  ft {s['features']:>6}"
          f"  corpus {s['corpus']:>5}  crashes {len(crashes)}")
json.dump(summary, open(os.path.join(build, "summary.json"), "w"), indent=1)
sys.exit(1 if any(s["crash_files"] for s in summary.values()) else 0)
PY
