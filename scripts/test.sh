#!/usr/bin/env bash
# Configure, build and test one CMake preset (default: dev). Used by CI through .ci/run.
#   scripts/test.sh [dev|release|asan|tsan]
set -euo pipefail
cd "$(dirname "$0")/.."
preset="${1:-dev}"

bash scripts/install-deps.sh
cmake --preset "$preset"
cmake --build --preset "$preset" -j2
ctest --preset "$preset" -j2 --output-on-failure
