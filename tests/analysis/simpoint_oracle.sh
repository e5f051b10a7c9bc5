#!/bin/sh
# SimPoint oracle: real BBVs from valgrind exp-bbv, cache counts from a
# lackey trace of the same run through the bank; the weighted estimate from
# the chosen points must be within 3% of the full run (test_simpoint_oracle).
# Also checks that 'reticle simpoint' reads the same file and is deterministic.
# usage: simpoint_oracle.sh RETICLE DRIVER CC FIXTURE_SRC WORKDIR
set -eu
RETICLE=$1 DRIVER=$2 CC=$3 SRC=$4 WORK=$5
mkdir -p "$WORK"
cd "$WORK"
"$CC" -O2 -static -o phases "$SRC"
valgrind --tool=exp-bbv --interval-size=100000 --bb-out-file=phases.bb ./phases > /dev/null 2>&1
valgrind --tool=lackey --trace-mem=yes --log-fd=3 ./phases 3>&1 1>/dev/null 2>/dev/null |
	"$DRIVER" phases.bb - cachegrind,l1i=4096:2:32,l1d=8192:4:64,ll=65536:8:64
"$RETICLE" simpoint --seed 3 phases.bb > a.txt
"$RETICLE" simpoint --seed 3 phases.bb > b.txt
cmp a.txt b.txt
cat a.txt
k=$(sed -n 's/.*k = \([0-9]*\)$/\1/p' a.txt)
rows=$(awk 'NR > 3' a.txt | wc -l)
[ "$k" -ge 1 ] && [ "$rows" -eq "$k" ]
