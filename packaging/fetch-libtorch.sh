#!/usr/bin/env bash
# Fetches LibTorch 2.x from PyPI, once: the official torch wheel (a CUDA build
# whose torch/ folder is a complete LibTorch, headers and CMake files included),
# installed with what it needs at run time (the CUDA libraries of NVIDIA's
# wheels, which its libraries find through their RPATH) into .deps/torch-VERSION
# of this checkout, which git ignores. Prints the folder to hand CMake as
# CMAKE_PREFIX_PATH. Reused when present; WIDELAB_TORCH_VERSION picks another.
set -euo pipefail
cd "$(dirname "$0")/.."

# The version the GPU machines we measure on run (docs/gpu.md); CUDA 13 wheels.
version="${WIDELAB_TORCH_VERSION:-2.11.0}"
target=".deps/torch-$version"
prefix="$PWD/$target/torch"

if [[ -f "$target/.complete" ]]; then
  echo "$prefix"
  exit 0
fi

python=""
for candidate in python3 /usr/bin/python3; do
  if command -v "$candidate" >/dev/null && "$candidate" -m pip --version >/dev/null 2>&1; then
    python="$candidate"
    break
  fi
done
if [[ -z "$python" ]]; then
  echo "fetch-libtorch: installing pip (python3-pip)" >&2
  sudo=""
  [[ $(id -u) -ne 0 ]] && sudo=sudo
  $sudo apt-get update -q >&2
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends python3-pip >&2
  python=/usr/bin/python3
fi

echo "fetch-libtorch: torch $version from PyPI into $target (about 4.5 GB, once)" >&2
rm -rf "$target"
# --target installs into a folder of ours, never into the system's Python, so
# Debian's externally-managed marker does not apply to it.
PIP_BREAK_SYSTEM_PACKAGES=1 "$python" -m pip install --quiet --no-compile --disable-pip-version-check --root-user-action=ignore \
  --target "$target" "torch==$version" >&2
if [[ ! -f "$prefix/share/cmake/Torch/TorchConfig.cmake" ]]; then
  echo "fetch-libtorch: $target has no torch/share/cmake/Torch/TorchConfig.cmake; is torch==$version a LibTorch 2.x wheel?" >&2
  exit 1
fi
touch "$target/.complete"
echo "$prefix"
