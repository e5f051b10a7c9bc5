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
# 26 configurations per workload and one untimed periodic run of them: the
# largest relative difference of an L1D (and of an L2) miss ratio over the 26, SimPoint's
# and the periodic estimate against the full run (the issue's bar: 3%),
# and for how many of the 26 the full run's value lies in the estimate's
# 95% interval. --points N: `reticle simpoint --points N` (several points
# per cluster) instead of one per cluster (N%: that share of the intervals); --warmup N: that warm-up before
# each window of the sampled runs; --warmup-lower N: that warm-up of the
# L2s before it. Bars: SimPoint-guided under 1.5x.
# usage: bench/memtrace-sample.sh [--rounds N] [--interval N] [--points N] [--warmup N] [--warmup-lower N]
#                                 [--accuracy] [RETICLE]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
rounds=3 interval=10000000 accuracy=0 points=() warm=()
while [ $# -gt 0 ]; do
	case $1 in
	--rounds) rounds=$2; shift 2 ;;
	--interval) interval=$2; shift 2 ;;
	--accuracy) accuracy=1; shift ;;
	--points) points=(--points "$2"); shift 2 ;;
	--warmup) warm+=(--warmup "$2"); shift 2 ;;
	--warmup-lower) warm+=(--warmup-lower "$2"); shift 2 ;;
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
	local sp=(--sample "simpoint:$tmp/p.simpoints,$tmp/p.weights" --interval "$interval" "${warm[@]}")
	case $k in
	native) timed "$@" ;;
	periodic) timed "$RETICLE" run -c memtrace "${one[@]}" --sample periodic:1000000:9000000 "${warm[@]}" \
		-o "$tmp/periodic.db" -- "$@" ;;
	sp1) timed "$RETICLE" run -c memtrace "${one[@]}" "${sp[@]}" -o "$tmp/sp1.db" -- "$@" ;;
	sp26) timed "$RETICLE" run -c memtrace "${bank[@]}" "${sp[@]}" -o "$tmp/sp26.db" -- "$@" ;;
	esac
}

# worst FULL SAMPLED: the largest relative error of the L1D estimates of
# the bank's configurations, and how many hold the full value in their interval
worst() {
	local c f e w=0 held=0 n=0 level=${3:-l1d}
	for c in $(seq 0 $((${#bank[@]} / 2 - 1))); do
		f=$(ratio "$1" "$c" "$level")
		[ -n "$f" ] || continue   # no such level in this configuration
		e=$(meta "$2" "memtrace_estimate_${c}_$level")
		[ -n "$e" ] || { echo "no estimate for configuration $c in $2" >&2; exit 1; }
		read -r w held n < <(echo "$f $e $w $held $n" | awk '{
			r = $4; h = ($5 == "+-") ? $6 : -1; d = (r - $1) / $1; d = d < 0 ? -d : d
			print (d > $(NF-2) ? d : $(NF-2)), $(NF-1) + (h >= 0 && (r - $1 <= h && $1 - r <= h)), $NF + 1 }')
	done
	printf '%.1f%% (%d of %d)' "$(echo "100 * $w" | bc -l)" "$held" "$n"
}
median() { tr ';' '\n' | grep . | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
meta() { sqlite3 "$1" "select value from meta where key = '$2'"; }
# L1D miss ratio of configuration N from the counts of a traced run
ratio() { meta "$1" "memtrace_cache_$2_${3:-l1d}" | awk -F': ' '{split($2, w, " "); printf "%.6f", (w[3] + w[6]) / (w[2] + w[5])}'; }

echo "medians of $rounds alternating rounds: wall seconds, and ratio to native; interval $interval"
more=""
[ "$accuracy" = 1 ] && more=", worst miss-ratio error of the L1Ds and of the L2s: simpoint / periodic (full value in the 95% interval)"
printf "%-8s %8s %16s %16s %16s  %s\n" workload native "periodic 1M:9M" "simpoint 1 cfg" "simpoint 26" \
	"points, accesses traced (simpoint)$more"
for w in $WORKLOADS; do
	v=${w//./_}; cmd="CMD_$v[@]"; STDIN_VAR="STDIN_$v"; STDIN=${!STDIN_VAR}
	"$RETICLE" run -c bbv --interval "$interval" --bbv-out "$tmp/p.bb" -o "$tmp/bbv.db" -- "${!cmd}" \
		<"$STDIN" >/dev/null 2>"$tmp/err" || { cat "$tmp/err" >&2; exit 1; }
	pts=("${points[@]}")
	if [ "${#pts[@]}" = 2 ] && [ "${pts[1]%\%}" != "${pts[1]}" ]; then   # N%: of the intervals
		pts[1]=$(( $(grep -c '^T' "$tmp/p.bb") * ${pts[1]%\%} / 100 ))
	fi
	"$RETICLE" simpoint "$tmp/p.bb" -k 30 --seed 1 "${pts[@]}" --simpoints "$tmp/p.simpoints" --weights "$tmp/p.weights" \
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
		"$RETICLE" run -c memtrace "${bank[@]}" --sample periodic:1000000:9000000 "${warm[@]}" -o "$tmp/p26.db" -- "${!cmd}" \
			<"$STDIN" >/dev/null 2>"$tmp/err" || { cat "$tmp/err" >&2; exit 1; }
		extra=", L1D $(worst "$tmp/full.db" "$tmp/sp26.db") / $(worst "$tmp/full.db" "$tmp/p26.db")"
		extra+=", L2 $(worst "$tmp/full.db" "$tmp/sp26.db" l2) / $(worst "$tmp/full.db" "$tmp/p26.db" l2)"
	fi
	printf "%-8s %8.2f %16s %16s %16s  %s, %s%s\n" "$w" "$n" "${cells[0]}" "${cells[1]}" "${cells[2]}" \
		"$npts" "$acc" "$extra"
done
