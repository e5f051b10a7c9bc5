#!/usr/bin/env bash
# Installs dependencies, builds reticle from scratch in build/, runs the test suite.
set -euo pipefail
cd "$(dirname "$0")"
scripts/deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)"
# the tests' warm-start lists stay in the build tree, apart from the user's
export RETICLE_CACHE_DIR="$PWD/build/test-cache"
rm -rf "$RETICLE_CACHE_DIR"
cd build && ctest --output-on-failure -j"$(nproc)" --timeout 900
