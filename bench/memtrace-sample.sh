#!/usr/bin/env bash
# Sampled memory tracing (memtrace --sample, the engine's untraced twins):
# the four workloads of bench/workloads.sh natively and under
#   periodic   reticle run -c memtrace --sample periodic:1M:9M (one configuration)
#   sp 1       reticle run -c memtrace --sample simpoint:... (one configuration)
#   sp 26      the same with the 26-configuration bank of bench/memtrace.sh
# in alternating rounds; the SimPoint points come from one untimed
# `reticle run -c bbv --interval N` and `reticle simpoint` per workload.
# Prints median wall seconds and ratios to native, the share of accesses
# the points traced, and with --accuracy one untimed full traced run of the
# 26 configurations per workload: the largest relative difference of an
# L1D miss ratio, SimPoint estimate against the full run (the issue's bar:
# 3%), and of the periodic run's. Bars: SimPoint-guided under 1.5x.
# usage: bench/memtrace-sample.sh [--rounds N] [--interval N] [--accuracy] [RETICLE]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
rounds=3 interval=10000000 accuracy=0
while [ $# -gt 0 ]; do
	case $1 in
	--rounds) rounds=$2; shift 2 ;;
	--interval) interval=$2; shift 2 ;;
	--accuracy) accuracy=1; shift ;;
	*) break ;;
	esac
done
RETICLE=$(realpath "${1:-$here/../build/src/reticle}")
source "$here/workloads.sh"
setup_workloads
tmp=$(mktemp -d /tmp/reticle-memtrace-sample.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
export RETICLE_CACHE_DIR="$tmp/cache"

source "$here/memtrace-caches.sh"   # one, bank

TIMEFORMAT='%3R'
timed() {   # timed CMD...: wall seconds
	{ time "$@" <"$STDIN" >/dev/null 2>"$tmp/err"; } 2>"$tmp/t" ||
		{ echo "failed: $*" >&2; cat "$tmp/err" >&2; return 1; }
	cat "$tmp/t"
}

kinds=(native periodic sp1 sp26)
run_kind() {
	local k=$1; shift
	local sp=(--sample "simpoint:$tmp/p.simpoints,$tmp/p.weights" --interval "$interval")
	case $k in
	native) timed "$@" ;;
	periodic) timed "$RETICLE" run -c memtrace "${one[@]}" --sample periodic:1000000:9000000 \
		-o "$tmp/periodic.db" -- "$@" ;;
	sp1) timed "$RETICLE" run -c memtrace "${one[@]}" "${sp[@]}" -o "$tmp/sp1.db" -- "$@" ;;
	sp26) timed "$RETICLE" run -c memtrace "${bank[@]}" "${sp[@]}" -o "$tmp/sp26.db" -- "$@" ;;
	esac
}

median() { tr ';' '\n' | grep . | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
meta() { sqlite3 "$1" "select value from meta where key = '$2'"; }
# L1D miss ratio of configuration N from the counts of a traced run
ratio() { meta "$1" "memtrace_cache_$2_l1d" | awk -F': ' '{split($2, w, " "); printf "%.6f", (w[3] + w[6]) / (w[2] + w[5])}'; }

echo "medians of $rounds alternating rounds: wall seconds, and ratio to native; interval $interval"
more=""
[ "$accuracy" = 1 ] && more=", worst L1D miss-ratio error: simpoint / periodic"
printf "%-8s %8s %16s %16s %16s  %s\n" workload native "periodic 1M:9M" "simpoint 1 cfg" "simpoint 26" \
	"points, accesses traced (simpoint)$more"
for w in $WORKLOADS; do
	v=${w//./_}; cmd="CMD_$v[@]"; STDIN_VAR="STDIN_$v"; STDIN=${!STDIN_VAR}
	"$RETICLE" run -c bbv --interval "$interval" --bbv-out "$tmp/p.bb" -o "$tmp/bbv.db" -- "${!cmd}" \
		<"$STDIN" >/dev/null 2>"$tmp/err" || { cat "$tmp/err" >&2; exit 1; }
	"$RETICLE" simpoint "$tmp/p.bb" -k 30 --seed 1 --simpoints "$tmp/p.simpoints" --weights "$tmp/p.weights" \
		>/dev/null
	declare -A res=()
	for k in "${kinds[@]}"; do res[$k]=""; done
	for _ in $(seq "$rounds"); do
		for k in "${kinds[@]}"; do res[$k]+="$(run_kind "$k" "${!cmd}");"; done
	done
	n=$(echo "${res[native]}" | median)
	cells=()
	for k in periodic sp1 sp26; do
		m=$(echo "${res[$k]}" | median)
		cells+=("$(printf '%7.2f %6.2fx' "$m" "$(echo "$m / $n" | bc -l)")")
	done
	npts=$(wc -l <"$tmp/p.simpoints")
	acc=$(meta "$tmp/sp1.db" memtrace_accesses)
	extra=""
	if [ "$accuracy" = 1 ]; then
		"$RETICLE" run -c memtrace "${bank[@]}" -o "$tmp/full.db" -- "${!cmd}" <"$STDIN" >/dev/null 2>"$tmp/err" ||
			{ cat "$tmp/err" >&2; exit 1; }
		full_acc=$(meta "$tmp/full.db" memtrace_accesses)
		acc="$acc of $full_acc ($(echo "100 * $acc / $full_acc" | bc -l | xargs printf '%.1f')%)"
		worst_sp=0 worst_p=0
		for c in $(seq 0 $((${#bank[@]} / 2 - 1))); do
			f=$(ratio "$tmp/full.db" "$c")
			e=$(meta "$tmp/sp26.db" "memtrace_estimate_${c}_l1d" | awk '{print $3}')
			[ -n "$e" ] || { echo "no estimate for configuration $c" >&2; exit 1; }
			worst_sp=$(echo "$f $e $worst_sp" | awk '{d = ($2 - $1) / $1; d = d < 0 ? -d : d; print (d > $3 ? d : $3)}')
		done
		# the periodic run's L1D is cachegrind's, 32k:8:64: the bank's 17th
		pp=$(ratio "$tmp/periodic.db" 0)
		f16=$(ratio "$tmp/full.db" 16)
		worst_p=$(echo "$f16 $pp" | awk '{d = ($2 - $1) / $1; print (d < 0 ? -d : d)}')
		extra=$(printf ', %.1f%% / %.1f%%' "$(echo "100 * $worst_sp" | bc -l)" "$(echo "100 * $worst_p" | bc -l)")
	fi
	printf "%-8s %8.2f %16s %16s %16s  %s, %s%s\n" "$w" "$n" "${cells[0]}" "${cells[1]}" "${cells[2]}" \
		"$npts" "$acc" "$extra"
done
