#!/usr/bin/env bash
# The test command of the README (and of .ci/run): install what is missing (the
# PyPI venv of the round-trip tests included), build, and run the whole test
# suite. WIDELAB_LIBTORCH=pip builds and tests against PyPI's LibTorch 2.x
# instead of Debian's 1.13 (see build.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir="$(packaging/build-dir.sh)"
packaging/install-deps.sh
packaging/install-test-venv.sh
packaging/build.sh "$@"
cd "$build_dir"
ctest --output-on-failure --no-tests=error
