#!/usr/bin/env bash
# The cost of sampling: the four workloads of bench/workloads.sh natively,
# under `reticle run -c sample` at 1 kHz and 10 kHz (call stacks unwound by
# CFI while the program runs), and under the peer, `perf record -g
# --call-graph dwarf` at the same rates (stacks copied, unwound later by
# perf report), in alternating rounds (each command once per round, in
# turn, so the host's slow moments fall on all alike). Prints per workload
# the median wall-clock seconds of each, its ratio to native's median, and
# the median CPU seconds (user+sys of the whole process tree: reticle's
# reader thread or perf's writer included) with their ratio. The bars (the
# sampling issue): under 1.02x of native at 1 kHz, under 1.1x at 10 kHz.
# Then, from reticle's last 10 kHz profile: samples taken, lost, truncated.
# usage: bench/sample.sh [ROUNDS] [RETICLE]   (ROUNDS default 5)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
rounds=${1:-5}
RETICLE=$(realpath "${2:-$here/../build/src/reticle}")
command -v perf >/dev/null || { echo "bench/sample.sh: perf is missing (Debian: linux-perf)" >&2; exit 1; }
source "$here/workloads.sh"
setup_workloads
tmp=$(mktemp -d /tmp/reticle-sample-bench.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
export RETICLE_CACHE_DIR="$tmp/cache"

# one run of "$@" with stdin from $STDIN, output discarded: "wall program
# cpu" seconds on stdout: bash's time (elapsed; user+sys of it and its
# children) and the program's own elapsed time (a bash wrapper reads the
# clock around it: without the tool's start and end)
TIMEFORMAT='%3R %3U %3S'
timed() {   # timed TOOL... -- CMD...
	local tool=() c
	while [ "$1" != "--" ]; do tool+=("$1"); shift; done; shift
	rm -f "$tmp/inner"
	{ time "${tool[@]}" bash -c 's=$EPOCHREALTIME; "$@"; r=$?; echo "$s $EPOCHREALTIME" >"$0"; exit $r' \
		"$tmp/inner" "$@" <"$STDIN" >/dev/null 2>"$tmp/err"; } 2>"$tmp/t" ||
		{ echo "failed: ${tool[*]} $*" >&2; cat "$tmp/err" >&2; return 1; }
	awk -v inner="$(awk '{print $2 - $1}' "$tmp/inner")" '{printf "%s %.3f %.3f\n", $1, inner, $2 + $3}' "$tmp/t"
}

kinds=(native sample-1k sample-10k perf-1k perf-10k)
label() {
	case $1 in
	native) echo native ;; sample-1k) echo "reticle 1 kHz" ;; sample-10k) echo "reticle 10 kHz" ;;
	perf-1k) echo "perf dwarf 1 kHz" ;; perf-10k) echo "perf dwarf 10 kHz" ;;
	esac
}
run_kind() {   # run_kind KIND CMD...: one timed run, its files removed
	local k=$1; shift
	case $k in
	native) timed -- "$@" ;;
	sample-1k) timed "$RETICLE" run -c sample --freq 1000 -o "$tmp/s1.db" -- "$@"; rm -f "$tmp/s1.db" ;;
	sample-10k) timed "$RETICLE" run -c sample --freq 10000 -o "$tmp/s10.db" -- "$@" ;;
	perf-1k) timed perf record -q -g --call-graph dwarf -F 1000 -o "$tmp/p1.data" -- "$@"; rm -f "$tmp/p1.data" ;;
	perf-10k) timed perf record -q -g --call-graph dwarf -F 10000 -o "$tmp/p10.data" -- "$@"; rm -f "$tmp/p10.data" ;;
	esac
}

echo "medians of $rounds alternating rounds; ratios to native's median"
printf '%-9s %-18s %14s %17s %14s   %s\n' workload tool "wall s" "program s" "CPU s" \
	"(reticle 10 kHz: samples lost truncated)"
for w in $WORKLOADS; do
	v=${w//./_}; cmd="CMD_$v[@]"; STDIN_VAR="STDIN_$v"; STDIN=${!STDIN_VAR}
	declare -A res=()
	for k in "${kinds[@]}"; do res[$k]=""; done
	# one untimed run of each (page cache, the binaries' first mapping)
	for k in "${kinds[@]}"; do run_kind "$k" "${!cmd}" >/dev/null; done
	for _ in $(seq "$rounds"); do
		for k in "${kinds[@]}"; do res[$k]+="$(run_kind "$k" "${!cmd}");"; done
	done
	meta=$(sqlite3 -separator ' ' "$tmp/s10.db" "select
		(select value from meta where key = 'sample_count'),
		(select value from meta where key = 'sample_lost'),
		(select value from meta where key = 'sample_truncated')")
	rm -f "$tmp/s10.db"
	args=()
	for k in "${kinds[@]}"; do args+=("$(label "$k")" "${res[$k]}"); done
	/usr/bin/python3.11 - "$w" "$meta" "${args[@]}" <<'PY'
import statistics, sys
w, meta, *rest = sys.argv[1:]
rows = []
for name, runs in zip(rest[::2], rest[1::2]):
    v = [tuple(map(float, r.split())) for r in runs.split(";") if r]
    rows.append((name, [statistics.median(x[i] for x in v) for i in range(3)]))
base = rows[0][1]
for name, m in rows:
    cells = [f"{m[i]:.3f} {m[i] / base[i]:.3f}x" for i in range(3)]
    note = f"   ({meta})" if name == "reticle 10 kHz" else ""
    print(f"{w:<9} {name:<18} {cells[0]:>14} {cells[1]:>17} {cells[2]:>14}{note}")
PY
done
