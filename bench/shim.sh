#!/usr/bin/env bash
# The cost of SHIM's observer (the shim collector): the four workloads of
# bench/workloads.sh natively, under `reticle run -c fcount` (the engine's
# baseline: a counter at every entry), under `-c shim:100000000` (the
# signal stores, with the observer spinning on its core but reading about
# never: the stores' own cost) and under shim at 5,000, 2,000 and 1,000
# cycles, in alternating rounds. Prints per workload the median seconds
# of the program's own run (without reticle's start and end) and wall, with
# their ratios to native's and to the stores-only run's (the observer's
# own effect: the bar is under 2% at a period at or below 1,000 cycles),
# and, from the last profile of each period: reads, the share DTE kept,
# the mean cost of a read in cycles and the gaps' p10/p50/p90.
# usage: bench/shim.sh [ROUNDS] [RETICLE]   (ROUNDS default 5)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
rounds=${1:-5}
RETICLE=$(realpath "${2:-$here/../build/src/reticle}")
source "$here/workloads.sh"
setup_workloads
tmp=$(mktemp -d /tmp/reticle-shim-bench.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
export RETICLE_CACHE_DIR="$tmp/cache"

TIMEFORMAT='%3R'
timed() {   # timed TOOL... -- CMD...: "wall program" seconds
	local tool=()
	while [ "$1" != "--" ]; do tool+=("$1"); shift; done; shift
	rm -f "$tmp/inner"
	{ time "${tool[@]}" bash -c 's=$EPOCHREALTIME; "$@"; r=$?; echo "$s $EPOCHREALTIME" >"$0"; exit $r' \
		"$tmp/inner" "$@" <"$STDIN" >/dev/null 2>"$tmp/err"; } 2>"$tmp/t" ||
		{ echo "failed: ${tool[*]} $*" >&2; cat "$tmp/err" >&2; return 1; }
	echo "$(cat "$tmp/t") $(awk '{print $2 - $1}' "$tmp/inner")"
}

kinds=(native fcount stores shim-5000 shim-2000 shim-1000)
run_kind() {
	local k=$1; shift
	case $k in
	native) timed -- "$@" ;;
	fcount) timed "$RETICLE" run -c fcount -o "$tmp/f.db" -- "$@"; rm -f "$tmp/f.db" ;;
	stores) timed "$RETICLE" run -c shim:100000000 -o "$tmp/s0.db" -- "$@"; rm -f "$tmp/s0.db" ;;
	shim-*) timed "$RETICLE" run -c "shim:${k#shim-}" -o "$tmp/$k.db" -- "$@" ;;
	esac
}

echo "medians of $rounds alternating rounds: program seconds (wall) and ratios to native and to the stores-only run"
for w in $WORKLOADS; do
	v=${w//./_}; cmd="CMD_$v[@]"; STDIN_VAR="STDIN_$v"; STDIN=${!STDIN_VAR}
	declare -A res=()
	for k in "${kinds[@]}"; do res[$k]=""; done
	for k in "${kinds[@]}"; do run_kind "$k" "${!cmd}" >/dev/null; done   # warm start, page cache
	for _ in $(seq "$rounds"); do
		for k in "${kinds[@]}"; do res[$k]+="$(run_kind "$k" "${!cmd}");"; done
	done
	args=()
	for k in "${kinds[@]}"; do
		m=""
		[ -f "$tmp/$k.db" ] && m=$(sqlite3 -separator ' ' "$tmp/$k.db" "select
			(select value from meta where key = 'shim_reads'),
			(select value from meta where key = 'shim_kept'),
			(select value from meta where key = 'shim_read_cycles'),
			(select value from meta where key = 'shim_gap_p10_p50_p90')")
		args+=("$k" "${res[$k]}" "$m")
	done
	/usr/bin/python3.11 - "$w" "${args[@]}" <<'PY'
import statistics, sys
w, *rest = sys.argv[1:]
rows = []
for k, runs, meta in zip(rest[::3], rest[1::3], rest[2::3]):
    v = [tuple(map(float, r.split())) for r in runs.split(";") if r]
    rows.append((k, statistics.median(x[1] for x in v), statistics.median(x[0] for x in v), meta))
native = rows[0][1]
stores = [r for r in rows if r[0] == "stores"][0][1]
for k, prog, wall, meta in rows:
    note = ""
    if meta:
        reads, kept, cost, p10, p50, p90 = meta.split()
        note = (f"  reads {int(reads):,}, DTE kept {100 * int(kept) / max(1, int(reads)):.1f}%, "
                f"read {float(cost):.0f} cycles, gaps {p10}/{p50}/{p90}")
    print(f"{w:<9} {k:<10} {prog:7.3f} ({wall:6.3f})  {prog / native:6.3f}x native  "
          f"{prog / stores:6.3f}x stores{note}")
PY
done
