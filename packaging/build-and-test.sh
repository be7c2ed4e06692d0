#!/usr/bin/env bash
# The test command of the README (and of .ci/run): install what is missing,
# build, and run the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
packaging/install-deps.sh
packaging/build.sh "$@"
cd build
ctest --output-on-failure --no-tests=error
