#!/usr/bin/env bash
# Alternating A/B timing on a noisy machine: each command runs once per
# round, in turn, so that the host's slow and fast moments fall on all of
# them alike; prints the best and the median wall-clock seconds of each.
# usage: bench/ab.sh ROUNDS LABEL "COMMAND" [LABEL "COMMAND"...]
# (commands run with bash -c, stdin from /dev/null, output discarded)
# AB_PAUSE=SECONDS sleeps before each command: a tool run after the machine
# was idle (a VM may have handed its free memory back to the host, and
# faulting it in again costs more than in back-to-back runs).
set -u
rounds=$1; shift
labels=(); cmds=()
while [ $# -ge 2 ]; do labels+=("$1"); cmds+=("$2"); shift 2; done
declare -A times
for _ in $(seq "$rounds"); do
	for i in "${!cmds[@]}"; do
		[ "${AB_PAUSE:-0}" = 0 ] || sleep "$AB_PAUSE"
		s=$(date +%s.%N)
		bash -c "${cmds[$i]}" >/dev/null 2>&1 </dev/null
		e=$(date +%s.%N)
		times[$i]+="$(echo "$e - $s" | bc) "
	done
done
for i in "${!cmds[@]}"; do
	echo "${times[$i]}" | tr ' ' '\n' | grep . | sort -n |
		awk -v l="${labels[$i]}" '{a[NR]=$1} END {printf "%-16s best %.3f median %.3f\n", l, a[1], a[int((NR+1)/2)]}'
done
