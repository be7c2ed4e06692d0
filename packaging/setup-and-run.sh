#!/usr/bin/env bash
# The first command of the README: install what is missing, build, and run
# WideLab's main job on a preset (default: widenet). Until the trainer and the
# desktop app land, that job is the model itself: its parameter and FLOP
# accounting, then one timed forward and backward pass.
set -euo pipefail
cd "$(dirname "$0")/.."
preset="${1:-widenet}"
packaging/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build build --parallel "$(nproc)" --target widelab-cli
build/app/cli/widelab-cli params "$preset"
echo
build/app/cli/widelab-cli forward "$preset"
