#!/usr/bin/env bash
# What one probe costs (the probe issue's bars: a counter under 2 ns, a
# timer start/stop pair under 20 ns): bench/probe_cost.c calls an empty
# function N times, or runs N iterations of a one-block loop; each
# collector's run (warm) less the native run, divided by N, is the cost
# per iteration of what it adds there:
#   calls, fcount:    one entry counter (the empty function's)
#   calls, bbcount:   two block counters (the loop's block, the function's)
#   calls, calltime:  one timer start/stop pair (and the call counter)
#   calls, callgraph: one call-site counter
#   block, bbcount:   one block counter
# Rounds alternate native and reticle runs; best and median of each.
# usage: bench/probe-cost.sh [ROUNDS] [N] [RETICLE]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
rounds=${1:-7}
n=${2:-100000000}
R=$(realpath "${3:-$here/../build/src/reticle}")
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
export RETICLE_CACHE_DIR="$tmp/cache"
cc -O2 -o "$tmp/pc" "$here/probe_cost.c"

secs() {   # wall-clock seconds of "$@"
	local s e
	s=$(date +%s.%N)
	"$@" >/dev/null 2>&1
	e=$(date +%s.%N)
	echo "$e - $s" | bc
}
stats() {  # best and median of the numbers on stdin
	sort -n | awk '{a[NR]=$1} END {printf "%.4f %.4f\n", a[1], a[int((NR+1)/2)]}'
}
printf "%-8s %-10s %12s %12s %16s\n" mode collector "best s" "median s" "ns/iter (b/m)"
for mode in calls block; do
	arg=""; [ $mode = block ] && arg=block
	cols=(fcount bbcount calltime callgraph); [ $mode = block ] && cols=(bbcount)
	for c in "${cols[@]}"; do
		"$R" run -c "$c" -o "$tmp/w.db" -- "$tmp/pc" 1000 $arg >/dev/null 2>&1   # warm
		: >"$tmp/nat"; : >"$tmp/ret"
		for _ in $(seq "$rounds"); do
			secs "$tmp/pc" "$n" $arg >>"$tmp/nat"
			secs "$R" run -c "$c" -o "$tmp/p.db" -- "$tmp/pc" "$n" $arg >>"$tmp/ret"
		done
		read -r nb nm < <(stats <"$tmp/nat")
		read -r rb rm < <(stats <"$tmp/ret")
		printf "%-8s %-10s %12s %12s %7.2f/%-7.2f\n" $mode native "$nb" "$nm" 0 0
		printf "%-8s %-10s %12s %12s %7.2f/%-7.2f\n" $mode "$c" "$rb" "$rm" \
			"$(echo "($rb - $nb) * 1000000000 / $n" | bc -l)" "$(echo "($rm - $nm) * 1000000000 / $n" | bc -l)"
	done
done
