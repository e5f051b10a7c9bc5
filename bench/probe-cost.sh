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
# and the probe language's snippets at the empty function's entry
# (reticle probe, docs/probe.md):
#   count:       a counter of its own
#   guard-false: a predicate on a global that fails (the guard alone)
#   guard-true:  a predicate that holds, and the counter
#   time:        a numbered timer's start/stop pair
#   key:         a count by value of an argument (the arc table)
#   hist-lat:    a timer pair and a histogram of latency
# and, where bpftrace runs, its uprobe (a kernel trap per hit) counting the
# same calls, on N/100 calls, less its run on 1000 calls (its start-up).
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
declare -A probes=(
	[count]='entry:empty { @c = count(); }'
	[guard-false]='entry:empty /never/ { @c = count(); }'
	[guard-true]='entry:empty /always/ { @c = count(); }'
	[time]='entry:empty { @t = time(); }'
	[key]='entry:empty { @k[arg0] = count(); }'
	[hist-lat]='entry:empty { @h = hist(latency); }'
)
for name in count guard-false guard-true time key hist-lat; do
	text=${probes[$name]}
	"$R" probe "$text" -- "$tmp/pc" 1000 >/dev/null 2>&1   # warm
	: >"$tmp/nat"; : >"$tmp/ret"
	for _ in $(seq "$rounds"); do
		secs "$tmp/pc" "$n" >>"$tmp/nat"
		secs "$R" probe "$text" -- "$tmp/pc" "$n" >>"$tmp/ret"
	done
	read -r nb nm < <(stats <"$tmp/nat")
	read -r rb rm < <(stats <"$tmp/ret")
	printf "%-8s %-10s %12s %12s %7.2f/%-7.2f\n" probe "$name" "$rb" "$rm" \
		"$(echo "($rb - $nb) * 1000000000 / $n" | bc -l)" "$(echo "($rm - $nm) * 1000000000 / $n" | bc -l)"
done
if command -v bpftrace >/dev/null && [ "$(id -u)" = 0 ]; then
	m=$((n / 100))
	bt() { bpftrace -e "uprobe:$tmp/pc:empty { @c = count(); }" -c "$tmp/pc $1"; }
	: >"$tmp/nat"; : >"$tmp/ret"; : >"$tmp/base"
	for _ in $(seq "$rounds"); do
		secs "$tmp/pc" "$m" >>"$tmp/nat"
		secs bt "$m" >>"$tmp/ret"
		secs bt 1000 >>"$tmp/base"
	done
	read -r nb nm < <(stats <"$tmp/nat")
	read -r rb rm < <(stats <"$tmp/ret")
	read -r bb bm < <(stats <"$tmp/base")
	printf "%-8s %-10s %12s %12s %7.2f/%-7.2f   (N/100 calls, less its run on 1000)\n" bpftrace uprobe "$rb" "$rm" \
		"$(echo "($rb - $bb - $nb) * 1000000000 / $m" | bc -l)" "$(echo "($rm - $bm - $nm) * 1000000000 / $m" | bc -l)"
else
	echo "bpftrace: not here (or not root): no uprobe row"
fi
