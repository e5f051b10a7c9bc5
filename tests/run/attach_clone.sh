#!/usr/bin/env bash
# Attaches ROUNDS x 5 times to a program whose main thread spends its time
# making threads: some attaches find it inside its clone's event, where
# reticle's system calls in the target once read the clone's end as their
# result (the program then jumped to 0, or freed twice). Every run of the
# program must end as it does alone: "ok", status 0.
# usage: attach_clone.sh RETICLE WORKDIR PROGRAM [ROUNDS]
set -u
R=$1; work=$2; prog=$3; rounds=${4:-8}
mkdir -p "$work"
grep -qs '^[12]$' /proc/sys/kernel/yama/ptrace_scope 2>/dev/null && [ "$(id -u)" != 0 ] && exit 77
fails=0
for i in $(seq "$rounds"); do
	"$prog" 2 > "$work/out" 2>&1 & pid=$!
	sleep 0.2
	for k in 1 2 3 4 5; do
		timeout -s KILL 60 "$R" attach -c fcount -d 0.05 -o "$work/p.db" "$pid" > "$work/attach$k" 2>&1
	done
	wait "$pid"; rc=$?
	if [ "$rc" != 0 ] || ! grep -q '^ok' "$work/out"; then
		fails=$((fails + 1))
		echo "FAIL round $i: status $rc, output: $(head -c 200 "$work/out")"
		for k in 1 2 3 4 5; do grep -v '^reticle: debug' "$work/attach$k" | head -5; done
	fi
done
echo "$((rounds - fails)) passed, $fails failed"
[ "$fails" = 0 ]
