#!/usr/bin/env bash
# The first command of the README: install what is missing, build, and train a
# preset (default: widenet) into runs/PRESET with the command-line trainer.
# Ctrl-C saves a checkpoint; running the command again resumes the run.
set -euo pipefail
cd "$(dirname "$0")/.."
preset="${1:-widenet}"
packaging/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build build --parallel "$(nproc)" --target widelab-cli
build/app/cli/widelab-cli params "$preset"
resume=()
if compgen -G "runs/$preset/checkpoints/step-*.pt" >/dev/null; then
  resume=(--resume)
fi
exec build/app/cli/widelab-cli train "$preset" --out "runs/$preset" "${resume[@]}"
