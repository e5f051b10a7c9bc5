#!/usr/bin/env bash
# Coverage whose probes remove themselves (`-c cover` alone: engine/sweep.c)
# against native runs, the same probes kept counting (RETICLE_COVER_KEEP=1)
# and bbcount, warm, in alternating rounds on the four workloads. Prints
# median seconds and the ratios of medians to native. The bar (issue
# "dynamic instrumentation"): cover under 1.05x on runs of a second or more.
# usage: bench/cover.sh [--rounds N] [RETICLE]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
rounds=5
if [ "${1:-}" = --rounds ]; then rounds=$2; shift 2; fi
RETICLE=$(realpath "${1:-$here/../build/src/reticle}")
source "$here/workloads.sh"
setup_workloads
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export RETICLE_CACHE_DIR="$tmp/cache"
secs() {   # seconds of one run of "$@" with stdin from $STDIN
	local s e
	s=$(date +%s.%N)
	"$@" <"$STDIN" >/dev/null 2>"$tmp/err" || { echo "failed: $*" >&2; cat "$tmp/err" >&2; exit 1; }
	e=$(date +%s.%N)
	echo "$e - $s" | bc
}
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
printf '| workload | native | cover | cover, probes kept | bbcount |\n| --- | --- | --- | --- | --- |\n'
for w in $WORKLOADS; do
	v=${w//./_}
	eval "cmd=(\"\${CMD_$v[@]}\")"
	eval "STDIN=\$STDIN_$v"
	r() { "$RETICLE" run -o "$tmp/p.db" "$@" -- "${cmd[@]}"; }
	# warm the copy cache of each configuration first
	secs r -c cover >/dev/null
	RETICLE_COVER_KEEP=1 secs r -c cover >/dev/null
	secs r -c bbcount >/dev/null
	declare -a n=() c=() k=() b=()
	for _ in $(seq "$rounds"); do
		n+=("$(secs "${cmd[@]}")")
		c+=("$(secs r -c cover)")
		k+=("$(RETICLE_COVER_KEEP=1 secs r -c cover)")
		b+=("$(secs r -c bbcount)")
	done
	nm=$(printf '%s\n' "${n[@]}" | median)
	cell() { local m; m=$(printf '%s\n' "$@" | median); printf '%.2f s (%.2fx)' "$m" "$(echo "$m / $nm" | bc -l)"; }
	printf '| %s | %.2f s | %s | %s | %s |\n' "$w" "$nm" "$(cell "${c[@]}")" "$(cell "${k[@]}")" "$(cell "${b[@]}")"
	unset n c k b
done
