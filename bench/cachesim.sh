#!/bin/sh
# Cache-bank throughput on a real trace: references per second for one
# configuration and for a bank of 26 hierarchies (MetaSim's count).
# The trace is valgrind lackey's --trace-mem output of bzip2 compressing a
# text file; it is parsed once, outside the timing (bench_cachesim.c).
# usage: bench/cachesim.sh [BUILD_DIR]   (default build/)
set -eu
cd "$(dirname "$0")/.."
BUILD=${1:-build}
B=$BUILD/tests/analysis/bench_cachesim
OUT=$BUILD/bench
REPEAT=${REPEAT:-7}
mkdir -p "$OUT"
[ -x "$B" ] || cmake --build "$BUILD" --target bench_cachesim
if [ ! -s "$OUT/bzip2.lackey" ]; then
	head -c 40000 /usr/share/common-licenses/GPL-3 > "$OUT/input.txt"
	valgrind --tool=lackey --trace-mem=yes --log-file="$OUT/bzip2.lackey" \
		bzip2 -1 -c "$OUT/input.txt" > /dev/null
fi
T=$OUT/bzip2.lackey

echo "== one cache (L1D 32k 8-way)"
"$B" "$T" "$REPEAT" l1d=32k:8:64
echo "== one unified cache (L1 32k 8-way, all references)"
"$B" "$T" "$REPEAT" l1=32k:8:64
echo "== one hierarchy (L1I + L1D + L2)"
"$B" "$T" "$REPEAT" l1i=32k:8:64,l1d=32k:8:64,l2=512k:8:64
echo "== one hierarchy, cachegrind preset"
"$B" "$T" "$REPEAT" cachegrind,l1i=32k:8:64,l1d=32k:8:64,ll=512k:8:64

# 26 hierarchies: 4 L1D sizes (64 sets: one stack engine) x L2 and L3
# choices, all with the same L1I; the L2s of one L1D share stacks by set count.
BANK=""
for d in 16k:4 32k:8 48k:12 64k:16; do
	for l2 in 256k:4 256k:8 512k:8 512k:16 1m:16 2m:32; do
		BANK="$BANK l1i=32k:8:64,l1d=$d:64,l2=$l2:64"
	done
done
BANK="$BANK l1i=32k:8:64,l1d=32k:8:64,l2=256k:4:64,l3=8m:16:64"
BANK="$BANK l1i=32k:8:64,l1d=48k:12:64,l2=1m:16:64,l3=32m:16:64"
echo "== bank of 26 hierarchies (shared stacks)"
# shellcheck disable=SC2086
"$B" "$T" "$REPEAT" $BANK

# the same 26 with FIFO everywhere: nothing can be shared, MetaSim's case
FIFO=""
for s in $BANK; do
	FIFO="$FIFO $(echo "$s" | sed 's/:64/:64:fifo/g')"
done
echo "== bank of 26 hierarchies, FIFO (no sharing possible)"
# shellcheck disable=SC2086
"$B" "$T" "$REPEAT" $FIFO
