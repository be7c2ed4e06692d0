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
# As many tests at once as there are cores: most are one process on one thread (Qt
# Test, Python, the CLI), and on 2 cores the suite then takes about half the time.
ctest --output-on-failure --no-tests=error --parallel "$(nproc)"
