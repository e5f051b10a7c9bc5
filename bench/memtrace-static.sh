#!/usr/bin/env bash
# MetaSim's static analysis (accesses chained within blocks) on the four
# workloads: each under `reticle run -c memtrace --sample periodic:ON:OFF`
# with the analysis and with RETICLE_MEMTRACE_CHAIN=0, one run each; prints
# the memory instructions left with a record (MetaSim's Table 7), records
# and accesses over the traced windows, and wall seconds.
# usage: bench/memtrace-static.sh [RETICLE]
set -u
here=$(cd "$(dirname "$0")" && pwd)
R=${1:-$here/../build/src/reticle}
source "$here/workloads.sh"
setup_workloads
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
echo "| workload | chained | instructions with a record | records | accesses | seconds |"
echo "| --- | --- | --- | --- | --- | --- |"
for w in $WORKLOADS; do
	v=${w//./_}
	eval "cmd=(\"\${CMD_$v[@]}\")"
	eval "in=\$STDIN_$v"
	for chain in 1 0; do
		s=$(date +%s.%N)
		RETICLE_MEMTRACE_CHAIN=$chain RETICLE_CACHE_DIR=$out/cache$chain "$R" run -c memtrace \
			--sample periodic:1000000:9000000 -o "$out/$v$chain.db" -- "${cmd[@]}" <"$in" >/dev/null 2>&1
		e=$(date +%s.%N)
		meta() { sqlite3 "$out/$v$chain.db" "select value from meta where key = '$1'"; }
		echo "| $w | $([ $chain = 1 ] && echo yes || echo no) | $(meta memtrace_instrumented) |" \
			"$(meta memtrace_records) | $(meta memtrace_accesses) | $(echo "$e - $s" | bc) |"
	done
done
