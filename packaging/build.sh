#!/usr/bin/env bash
# Configures and builds WideLab (Release, Ninja). Extra arguments go to CMake's
# configure step, e.g. -DWIDELAB_GUI=OFF.
#
# WIDELAB_LIBTORCH picks the LibTorch to build against:
#   debian (default)  Debian's LibTorch 1.13 (CPU), into ./build
#   pip               PyPI's torch (LibTorch 2.x, CUDA), fetched once into
#                     .deps/ by packaging/fetch-libtorch.sh, into ./build-pip
# Prints nothing of its own on success but CMake's and Ninja's output; the
# build folder is packaging/build-dir.sh's answer.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir="$(packaging/build-dir.sh)"
torch=()
if [[ "${WIDELAB_LIBTORCH:-debian}" == pip ]]; then
  torch=(-DCMAKE_PREFIX_PATH="$(packaging/fetch-libtorch.sh)")
fi
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release "${torch[@]}" "$@"
# WIDELAB_TARGETS="a b" builds only those targets (setup-and-run.sh).
cmake --build "$build_dir" --parallel "$(nproc)" ${WIDELAB_TARGETS:+--target $WIDELAB_TARGETS}
