#!/usr/bin/env bash
# Packs what a GPU machine needs to run yoloc's CUDA checks and benchmarks into one folder to
# carry there (the device machine has the NVIDIA driver, CUDA 13 with libnvrtc, python3 with
# torch, onnx and onnxruntime, but none of Debian's libraries and no access to ../shared):
#
#   scripts/gpu_bundle.sh [BUILD] [SHARED]    BUILD default build, SHARED default ../shared
#
# Makes BUILD/gpu_bundle with bin/ (yoloc and the image decoder of the e2e checks, stripped),
# lib/ (the Debian libraries yoloc links that Ubuntu's base system lacks), shared/ (the models,
# images and peers the GPU checks use), share/yoloc/records/ (the shipped tuning records).
# scripts/gpu_checks.sh runs there.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-$root/build}
shared=${2:-$root/../shared}
out=$build/gpu_bundle
ninja -C "$build" yoloc yoloc_test_decode_image yoloc_cuda_gpu_tests >/dev/null
rm -rf "$out"
mkdir -p "$out/bin" "$out/lib" "$out/shared/models" "$out/shared/data/images" "$out/shared/peers"
cp "$build/yoloc" "$build/tests/yoloc_test_decode_image" "$out/bin/"
strip "$out/bin/"*
# Libraries outside glibc and the compiler runtime (the GPU machine's are newer).
ldd "$build/yoloc" | awk '/=> \//{print $3}' | while read -r lib; do
  case $(basename "$lib") in
    libc.so*|libm.so*|libpthread.so*|libdl.so*|librt.so*|libstdc++.so*|libgcc_s.so*|libnvrtc*) ;;
    *) cp -L "$lib" "$out/lib/" ;;
  esac
done
cp "$shared"/models/{yolov8n,yolox-nano-facemask,yolov5n-fp16-dynbatch,yolo11n-dynint8-320,yolov10n-dynint8-e2e,yolov8n-dynint8,yolov8n-dynint8-dynshape}.onnx \
  "$out/shared/models/"
cp "$shared"/data/images/*.jpg "$out/shared/data/images/"
cp -r "$shared"/data/coco-eval "$out/shared/data/"
cp "$shared"/peers/*.py "$out/shared/peers/"
# The shipped tuning records where yoloc looks beside its binary (BIN/../share/yoloc/records), so
# that compile applies them there as it does here (the source tree's records/ stays behind).
mkdir -p "$out/share/yoloc/records"
cp "$root"/records/*.jsonl "$out/share/yoloc/records/"
# The GPU tests' data (tests/cuda/cuda_detect_gpu_test.cpp): images and real head outputs.
if [[ ! -f "$build/cuda_gpu/data/yolox_zidane_head.npy" ]]; then
  # Run with the test oracles' environment first on PATH (build/venv/bin); it decodes with Pillow.
  python3 -c "import PIL" 2>/dev/null || python3 -m pip install -q --disable-pip-version-check pillow
  python3 "$root/tests/cuda/make_detect_heads.py" --shared "$shared" --out "$build/cuda_gpu/data"
  cp "$shared"/data/images/{bus,zidane}.jpg "$build/cuda_gpu/data/"
fi
# One compressed file travels (the carry limit is 64 MiB).
tar -C "$build" -cJf "$build/gpu_bundle.tar.xz" gpu_bundle cuda_gpu
du -sh "$out" "$build/cuda_gpu" "$build/gpu_bundle.tar.xz"
