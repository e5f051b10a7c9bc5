#!/bin/sh
# kill -STOP / kill -CONT from outside on a running target: it stops for
# real (no output while stopped), reticle does not spin meanwhile (CPU
# time), it resumes on SIGCONT, and its output and exit status equal the
# native run put through the same stop and continue.
# usage: jobctl_kill.sh RETICLE WORKDIR JOBSTOP-PROGRAM
R=$1; W=$2; P=$3; fails=0
mkdir -p "$W"
fail() { echo "FAIL [$1]: $2"; fails=$((fails+1)); }

state() { sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -c1; }
cpu_ticks() { sed 's/.*) //' "/proc/$1/stat" | awk '{ print $12 + $13 }'; }
alive() { kill -0 "$1" 2>/dev/null; }

# wait_until SECONDS COMMAND...: polls COMMAND every 50 ms.
wait_until() {
	n=$(($1 * 20)); shift
	while [ $n -gt 0 ]; do "$@" && return 0; sleep 0.05; n=$((n-1)); done
	return 1
}
has_pid() { [ -s "$1" ]; }
is_stopped() { s=$(state "$1"); [ "$s" = T ] || [ "$s" = t ]; }
is_gone() { ! alive "$1"; }

# stop_and_continue LABEL RUNNER_PID PIDFILE OUT: the stop/continue dance.
stop_and_continue() {
	label=$1; runner=$2; pidfile=$3; out=$4; before=$fails
	wait_until 20 has_pid "$pidfile" || { fail "$label" "no pid file"; return; }
	tp=$(cat "$pidfile")
	sleep 0.2
	alive "$tp" || { fail "$label" "target ended before the stop"; return; }
	kill -STOP "$tp"
	wait_until 10 is_stopped "$tp" || fail "$label" "target never looked stopped"
	sleep 0.1
	lines1=$(wc -l <"$out"); cpu1=$(cpu_ticks "$runner")
	sleep 1
	lines2=$(wc -l <"$out"); cpu2=$(cpu_ticks "$runner")
	[ "$lines1" = "$lines2" ] || fail "$label" "output grew while stopped ($lines1 -> $lines2 lines)"
	is_stopped "$tp" || fail "$label" "target left its stop by itself (state $(state "$tp"))"
	# a spinning tracer would burn ~100 ticks in that second
	[ $((cpu2 - cpu1)) -le 10 ] || fail "$label" "runner used $((cpu2 - cpu1)) ticks of CPU while the target was stopped"
	[ $fails -eq $before ] && echo "ok [$label]: stopped with $lines1 lines out, runner used $((cpu2 - cpu1)) ticks"
	kill -CONT "$tp"
	wait_until 30 is_gone "$runner" || { fail "$label" "did not finish after SIGCONT"; kill -KILL "$runner"; }
}

rm -f "$W"/*.pid
"$P" ticker "$W/native.pid" 1000 >"$W/native.out" & np=$!
stop_and_continue native $np "$W/native.pid" "$W/native.out"
wait $np; nrc=$?

"$R" run -o "$W/t.db" -- "$P" ticker "$W/reticle.pid" 1000 >"$W/reticle.out" 2>"$W/reticle.err" & rp=$!
stop_and_continue reticle $rp "$W/reticle.pid" "$W/reticle.out"
wait $rp; rrc=$?

[ "$nrc" = 7 ] || fail native "exit status $nrc, want 7"
[ "$rrc" = "$nrc" ] || { fail reticle "exit status $rrc, native $nrc"; cat "$W/reticle.err"; }
cmp -s "$W/native.out" "$W/reticle.out" || { fail reticle "output differs from the native run"; diff "$W/native.out" "$W/reticle.out" | tail -5; }
[ -s "$W/t.db" ] || fail reticle "no profile"
[ $fails -eq 0 ] && echo "all job-control cases passed: exit $rrc, $(tail -1 "$W/reticle.out")"
exit $fails
