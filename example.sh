#!/usr/bin/env bash
# Installs dependencies, builds reticle and profiles the bundled example with
# fcount and bbcount, then prints the report.
set -euo pipefail
cd "$(dirname "$0")"
scripts/deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)"
build/examples/primes 20000 >/dev/null
build/src/reticle run -c fcount,bbcount -o build/example.db -- build/examples/primes 20000
build/src/reticle report --top 10 build/example.db
