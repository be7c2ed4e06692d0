#!/usr/bin/env bash
# Configures and builds WideLab in ./build (Release, Ninja). Extra arguments go to
# CMake's configure step, e.g. -DWIDELAB_GUI=OFF or -DCMAKE_PREFIX_PATH=/opt/libtorch.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release "$@"
cmake --build build --parallel "$(nproc)"
