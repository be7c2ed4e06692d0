#!/usr/bin/env bash
# Prints the build folder for WIDELAB_LIBTORCH (see build.sh): build for Debian's
# LibTorch, build-pip for PyPI's. Fails naming the variable for any other value.
set -euo pipefail
case "${WIDELAB_LIBTORCH:-debian}" in
  debian) echo build ;;
  pip) echo build-pip ;;
  *) echo "WIDELAB_LIBTORCH=${WIDELAB_LIBTORCH}: expected debian (Debian's LibTorch 1.13) or pip (PyPI's torch)" >&2
     exit 2 ;;
esac
