#!/usr/bin/env bash
# BOLT from reticle's exact counts: bzip2 (Debian's source, built with
# --emit-relocs) is profiled under reticle (edges, bbcount, callgraph) on a
# training input, its fdata ('reticle report --format fdata') given to
# llvm-bolt, and the original and optimized programs timed compressing and
# decompressing another input, in alternating rounds. Prints medians and
# the speed-up; checks the outputs are identical.
# usage: bench/bolt.sh [--rounds N] [RETICLE]
set -euo pipefail
rounds=7
[ "${1:-}" = --rounds ] && { rounds=$2; shift 2; }
RETICLE=$(realpath "${1:-build/src/reticle}")
BOLT=$(command -v llvm-bolt-16 || command -v llvm-bolt) || { echo "no llvm-bolt (apt-get install bolt-16)"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
apt-get source -q bzip2 >/dev/null 2>&1 || { echo "apt-get source bzip2 failed (a deb-src entry is needed)"; exit 1; }
src=$(ls -d bzip2-*/ | head -1)
(cd "$src" && gcc -O2 -g -D_FILE_OFFSET_BITS=64 -Wl,--emit-relocs -o "$tmp/bzip2" blocksort.c huffman.c \
	crctable.c randtable.c compress.c decompress.c bzlib.c bzip2.c)
# inputs: code and data of this machine's largest library, different parts
big=$( (ls -S /usr/lib/x86_64-linux-gnu/*.so* || true) | head -1)
head -c 8000000 "$big" > train
tail -c 24000000 "$big" > test
./bzip2 -c train > train.bz2
"$RETICLE" run -c edges,bbcount,callgraph -o p.db -- ./bzip2 -c train > /dev/null 2>run.log
"$RETICLE" run -c edges,bbcount,callgraph -o pd.db -- ./bzip2 -dc train.bz2 > /dev/null 2>>run.log
"$RETICLE" report -f fdata -o c.fdata p.db
"$RETICLE" report -f fdata -o d.fdata pd.db
cat c.fdata d.fdata | sort | awk '{k=$1" "$2" "$3" "$4" "$5" "$6" "$7; c[k]+=$8} END {for (k in c) print k, c[k]}' \
	| sort > bzip2.fdata
"$BOLT" ./bzip2 -o bzip2.bolt -data=bzip2.fdata -reorder-blocks=ext-tsp -reorder-functions=hfsort \
	-split-functions -split-all-cold -dyno-stats > bolt.log 2>&1
grep -E "non-empty execution profile|stale|ignored|modified layout" bolt.log | sed 's/^/  /'
./bzip2 -c test > want.bz2
./bzip2.bolt -c test | cmp - want.bz2
./bzip2.bolt -dc want.bz2 | cmp - test
now() { date +%s.%N; }
time_of() { local s e; s=$(now); "$@" > /dev/null; e=$(now); echo "$e - $s" | bc; }
med() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
declare -a oc=() bc_=() od=() bd=()
for _ in $(seq "$rounds"); do
	oc+=("$(time_of ./bzip2 -c test)"); bc_+=("$(time_of ./bzip2.bolt -c test)")
	od+=("$(time_of ./bzip2 -dc want.bz2)"); bd+=("$(time_of ./bzip2.bolt -dc want.bz2)")
done
for w in compress decompress; do
	if [ $w = compress ]; then o=$(printf '%s\n' "${oc[@]}" | med); b=$(printf '%s\n' "${bc_[@]}" | med)
	else o=$(printf '%s\n' "${od[@]}" | med); b=$(printf '%s\n' "${bd[@]}" | med); fi
	printf '%-10s original %.3f s  bolted %.3f s  speed-up %.3fx\n' $w "$o" "$b" "$(echo "$o / $b" | bc -l)"
done
