#!/usr/bin/env bash
# Installs, with apt, the Debian 12 packages memhal needs to build and test, when missing.
# Usage: scripts/deps.sh [extra-package...]
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git   # toolchain
  clang-format                                       # scripts/test.sh checks the format (14 in Debian 12)
  libexpected-dev                                    # tl::expected (Result<T>)
  zlib1g-dev                                         # CRC-32 of recordings
  libhwy-dev                                         # SIMD kernels of the image layer
  libpng-dev libjpeg62-turbo-dev                     # memhal convert reads and writes images
  libyuv-dev libopencv-dev                           # image tests and bench: the peers
  libgtest-dev libgmock-dev                          # tests
  libdrm-dev                                         # DRM uapi headers: vgem PRIME test in the VM
  libegl-dev libgles-dev                             # the GL image backend (EGL + OpenGL ES 3)
  libegl-mesa0 libgl1-mesa-dri                       # Mesa's EGL and llvmpipe: GL tests with no GPU
  libbenchmark-dev                                   # bench/
  python3                                            # test scripts (JSON checks)
  python3-dev pybind11-dev python3-numpy python3-pytest  # the Python module and its pytest suite
  python3-torch                                      # pytest: DLPack into torch 1.13 (skipped without)
  python3-torchvision python3-mypy                   # pytest: the torch example's model; mypy --strict
  python3-setuptools python3-wheel python3-venv python3-pip  # pytest: pip install . / pip wheel .
  libgstreamer1.0-dev libgstreamer-plugins-base1.0-dev   # gst/: the memhal GStreamer plugin
  gstreamer1.0-plugins-base gstreamer1.0-plugins-good gstreamer1.0-plugins-bad gstreamer1.0-tools  # its tests
  "$@"
)

missing=()
for package in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$package")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "deps: installing ${missing[*]}" >&2
sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
