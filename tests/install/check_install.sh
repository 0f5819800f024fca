#!/usr/bin/env bash
# Installs the build into a fresh prefix, builds the C and C++ examples against it (the CMake
# package, and pkg-config) and runs them: each must print the detections `yoloc run` gives.
#   check_install.sh BUILD_DIR SOURCE_DIR WORK_DIR MODEL.onnx IMAGE
set -euo pipefail
build=$1 src=$2 work=$3 model=$4 image=$5
[[ -f $model && -f $image ]] || { echo "skipped: no $model or $image"; exit 77; }
rm -rf "$work" && mkdir -p "$work"
prefix=$work/prefix
cmake --install "$build" --prefix "$prefix" >/dev/null
"$prefix/bin/yoloc" compile "$model" -o "$work/model.ycm" >/dev/null
"$prefix/bin/yoloc" run "$work/model.ycm" "$image" --json "$work/expected.json" >/dev/null

# CMake package.
cmake -S "$src/examples" -B "$work/examples" -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$work/examples" >/dev/null
# pkg-config.
export PKG_CONFIG_PATH=$(dirname "$(find "$prefix" -name yoloc.pc)")
cc -o "$work/detect_c_pc" "$src/examples/detect.c" $(pkg-config --cflags --libs yoloc)
c++ -std=c++17 -o "$work/detect_cpp_pc" "$src/examples/detect.cpp" $(pkg-config --cflags --libs yoloc)

compare() {
  python3 - "$work/expected.json" "$1" <<'PY'
import json, sys
expected = json.load(open(sys.argv[1]))[0]["detections"]
got = json.loads(open(sys.argv[2]).read())
assert len(got) == len(expected) > 0, (len(got), len(expected))
for e, g in zip(expected, got):
    assert e["class_name"] == g["class_name"] and abs(e["score"] - g["score"]) < 1e-3, (e, g)
    assert all(abs(a - b) < 0.1 for a, b in zip(e["box"], g["box"])), (e, g)
print(f"{sys.argv[2]}: {len(got)} detections as yoloc run")
PY
}
for exe in "$work/examples/detect_c" "$work/detect_c_pc" "$work/examples/detect_cpp" \
  "$work/detect_cpp_pc"; do
  "$exe" "$work/model.ycm" "$image" > "$work/$(basename "$exe").json"
  compare "$work/$(basename "$exe").json"
done
echo "installed package and examples: ok"
