#!/usr/bin/env bash
# The readers for tests/app/tensorboard_roundtrip.py and
# tests/app/safetensors_roundtrip.py, and the scorer of tests/app/bleu_sacrebleu.py
# (ctest label `python`): the `tensorboard`, `safetensors`, `numpy` and
# `sacrebleu` packages from PyPI in a venv of their own, where
# their protobuf, numpy and packaging cannot shadow what Debian's python3-torch
# imports. CMake finds it as WIDELAB_TENSORBOARD_PYTHON (its default path).
# Idempotent; runs as root, or via sudo, as install-deps.sh does.
set -euo pipefail
venv=/opt/widelab-tb
sudo=""
if [[ $(id -u) -ne 0 ]]; then
  command -v sudo >/dev/null || { echo "install-test-venv: run as root or install sudo" >&2; exit 1; }
  sudo=sudo
fi
if [[ ! -x "$venv/bin/python" ]]; then
  echo "install-test-venv: making $venv"
  $sudo python3 -m venv "$venv"
fi
if ! "$venv/bin/python" -c "import tensorboard, safetensors, numpy, sacrebleu" 2>/dev/null; then
  echo "install-test-venv: installing tensorboard, safetensors, numpy and sacrebleu from PyPI into $venv"
  $sudo "$venv/bin/pip" install --quiet tensorboard safetensors numpy sacrebleu
fi
