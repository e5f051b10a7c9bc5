#!/bin/sh
# Profile store and report speed: writes a large synthetic profile through
# the API, then times each report format on it.
# usage: bench/store.sh [BUILD_DIR]   (default: build)
set -eu
build=${1:-build}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$build/tests/store/bench_store_write" "$tmp/p.db" 100000 10 3
ls -l "$tmp/p.db" | awk '{ printf "profile size: %.1f MB\n", $5 / 1e6 }'
for fmt in text json callgrind; do
	start=$(date +%s.%N)
	"$build/src/reticle" report --format $fmt -o "$tmp/out.$fmt" "$tmp/p.db"
	end=$(date +%s.%N)
	echo "report --format $fmt: $(echo "$end - $start" | bc) s"
done
