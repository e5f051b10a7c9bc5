#!/usr/bin/env bash
# The cost of memory tracing (the memtrace collector): the four workloads of
# bench/workloads.sh natively, under `reticle run -c memtrace` with one
# cache configuration (cachegrind's model), with 26 configurations (MetaSim's
# count: L1D 8-64 KiB x 2-8 ways, with and without an L2), and under
# valgrind's cachegrind (the peer), in alternating rounds. Prints per
# workload the median wall seconds and their ratios to native's, and the
# accesses traced, the instructions left untraced, and the L1D miss ratio
# reticle and cachegrind give for the one-configuration run. The issue's
# bars: one configuration under 3x of native, 26 under 5x.
# usage: bench/memtrace.sh [ROUNDS] [RETICLE]   (ROUNDS default 3)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
rounds=${1:-3}
RETICLE=$(realpath "${2:-$here/../build/src/reticle}")
source "$here/workloads.sh"
setup_workloads
tmp=$(mktemp -d /tmp/reticle-memtrace-bench.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
export RETICLE_CACHE_DIR="$tmp/cache"

source "$here/memtrace-caches.sh"   # one, bank

TIMEFORMAT='%3R'
timed() {   # timed CMD...: wall seconds
	{ time "$@" <"$STDIN" >/dev/null 2>"$tmp/err"; } 2>"$tmp/t" ||
		{ echo "failed: $*" >&2; cat "$tmp/err" >&2; return 1; }
	cat "$tmp/t"
}

kinds=(native one bank26 cachegrind)
run_kind() {
	local k=$1; shift
	case $k in
	native) timed "$@" ;;
	one) timed "$RETICLE" run -c memtrace "${one[@]}" -o "$tmp/one.db" -- "$@" ;;
	bank26) timed "$RETICLE" run -c memtrace "${bank[@]}" -o "$tmp/bank.db" -- "$@" ;;
	cachegrind) timed valgrind --tool=cachegrind --cache-sim=yes --I1=32768,8,64 --D1=32768,8,64 \
		--LL=8388608,16,64 --cachegrind-out-file="$tmp/cg.out" "$@" ;;
	esac
}

median() { tr ';' '\n' | grep . | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

echo "medians of $rounds alternating rounds: wall seconds, and ratio to native"
printf "%-8s %8s %16s %16s %16s  %s\n" workload native "memtrace 1 cfg" "memtrace 26" cachegrind \
	"accesses, untraced insns, L1D miss % (reticle / cachegrind)"
for w in $WORKLOADS; do
	v=${w//./_}; cmd="CMD_$v[@]"; STDIN_VAR="STDIN_$v"; STDIN=${!STDIN_VAR}
	declare -A res=()
	for k in "${kinds[@]}"; do res[$k]=""; done
	for _ in $(seq "$rounds"); do
		for k in "${kinds[@]}"; do res[$k]+="$(run_kind "$k" "${!cmd}");"; done
	done
	n=$(echo "${res[native]}" | median)
	cells=()
	for k in one bank26 cachegrind; do
		m=$(echo "${res[$k]}" | median)
		cells+=("$(printf '%7.2f %6.1fx' "$m" "$(echo "$m / $n" | bc -l)")")
	done
	acc=$(sqlite3 "$tmp/one.db" "select value from meta where key = 'memtrace_accesses'")
	unt=$(sqlite3 "$tmp/one.db" "select count(*) from metrics where name = 'mem_untraced_instructions'")
	ours=$(sqlite3 "$tmp/one.db" "select value from meta where key = 'memtrace_cache_0_l1d'" |
		awk '{printf "%.3f", 100 * ($4 + $7) / ($3 + $6)}')
	theirs=$(awk '/^summary:/ {printf "%.3f", 100 * ($6 + $9) / ($5 + $8)}' "$tmp/cg.out")
	printf "%-8s %8.2f %16s %16s %16s  %s, %s, %s / %s\n" "$w" "$n" "${cells[0]}" "${cells[1]}" "${cells[2]}" \
		"$acc" "$unt" "$ours" "$theirs"
done
