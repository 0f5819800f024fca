#!/usr/bin/env bash
# Sets up a fresh Debian 12 machine for yoloc and builds it (Release, in build/release):
#   - the Debian packages it builds with (apt-get; sudo when not root), the aarch64 cross
#     compiler and qemu-user the `cross` tests use, and PoCL (OpenCL on the CPU) the `opencl`
#     tests run on,
#   - a Python virtual environment in build/venv with the test oracles (ONNX Runtime, onnx,
#     numpy, pycocotools),
#   - the build itself.
# Idempotent: a second run only rebuilds what changed.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
export DEBIAN_FRONTEND=noninteractive
sudo=()
[[ $(id -u) -eq 0 ]] || sudo=(sudo)

packages=(build-essential cmake ninja-build pkg-config
  libprotobuf-dev protobuf-compiler libonnx-dev libonnx-testdata
  nlohmann-json3-dev libcli11-dev libfmt-dev libstb-dev libjpeg62-turbo-dev libpng-dev libgtest-dev
  libsodium-dev libxgboost-dev graphviz python3 python3-venv
  libopencv-videoio-dev g++-aarch64-linux-gnu qemu-user
  opencl-headers ocl-icd-opencl-dev ocl-icd-libopencl1 pocl-opencl-icd clinfo)
if ! dpkg -s "${packages[@]}" >/dev/null 2>&1; then
  "${sudo[@]}" apt-get update -q
  "${sudo[@]}" apt-get install -y -q --no-install-recommends "${packages[@]}"
fi

# The oracles the tests compare against. A virtual environment: Debian's Python refuses
# system-wide pip installs (PEP 668).
venv=${YOLOC_VENV:-$root/build/venv}
if [[ ! -x "$venv/bin/python" ]]; then
  mkdir -p "$(dirname "$venv")"
  python3 -m venv "$venv"
fi
"$venv/bin/python" -m pip install -q --disable-pip-version-check \
  onnxruntime==1.32.0 onnx==1.23.2 numpy==2.4.6 pycocotools==2.0.11 \
  nanobind==2.9.2 scikit-build-core==0.11.6 pytest==8.4.2

build=${YOLOC_BUILD_DIR:-$root/build/release}
# The Python package the build makes (<build>/python) is importable from the virtual environment.
site=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
echo "$build/python" > "$site/yoloc-build.pth"
# A fresh build directory is a unity build (several sources per compiler run: half the time of a
# fresh build on two cores); an existing one keeps its settings.
fresh=()
[[ -f "$build/CMakeCache.txt" ]] || fresh=(-G Ninja -DCMAKE_UNITY_BUILD=ON)
cmake -S "$root" -B "$build" "${fresh[@]}" -DCMAKE_BUILD_TYPE=Release \
  -DYOLOC_SHARED_DIR="${YOLOC_SHARED_DIR:-$root/../shared}" \
  -DPython3_EXECUTABLE="$venv/bin/python"
cmake --build "$build" -j "${JOBS:-$(nproc)}"
echo "yoloc is built: $build/yoloc"
