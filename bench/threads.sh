#!/usr/bin/env bash
# Counting in multithreaded programs: Debian's sort and zstd on one thread
# and on two, natively and under reticle (fcount, bbcount; warm), in
# alternating rounds (bench/ab.sh). Once a process has a second thread,
# every counter increment goes to the thread's own counter (docs/engine.md,
# "Threads"); with RETICLE_THREAD_COUNTERS=0 (the 'locked' columns) it is a
# locked add on a counter all threads share, as it was: where two threads
# run the same blocks, the counters' cache lines move between the cores at
# each increment.
# usage: bench/threads.sh [ROUNDS] [RETICLE]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
rounds=${1:-5}
R=$(realpath "${2:-$here/../build/src/reticle}")
source "$here/workloads.sh"
setup_workloads
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
export RETICLE_CACHE_DIR="$tmp/cache"
in=$BENCH_DIR/text16m
for prog in "sort --parallel=1 -S 64M $in" "sort --parallel=2 -S 64M $in" \
	    "zstd -q -T1 -8 -c $in" "zstd -q -T2 -8 -c $in"; do
	echo "== $prog"
	for c in fcount bbcount; do   # warm caches first
		"$R" run -c $c -o "$tmp/p.db" -- $prog >/dev/null 2>&1
	done
	bash "$here/ab.sh" "$rounds" native "$prog" \
		fcount "$R run -c fcount -o $tmp/f.db -- $prog" \
		bbcount "$R run -c bbcount -o $tmp/b.db -- $prog" \
		"bbcount locked" "env RETICLE_THREAD_COUNTERS=0 $R run -c bbcount -o $tmp/l.db -- $prog"
done
