#!/bin/sh
# A termination signal sent to reticle alone (kill PID) reaches the target,
# as it would reach the program run natively: the same output (a trap that
# says which signal came) and the same exit status, and soon (not after the
# program would have ended by itself).
# usage: forward_signals.sh RETICLE WORKDIR
R=$1; W=$2; fails=0; passes=0
mkdir -p "$W"
cat >"$W/trap.sh" <<'SH'
trap 'echo got TERM; exit 3' TERM
trap 'echo got HUP; exit 5' HUP
trap 'echo got USR1; exit 6' USR1
echo ready
i=0; while [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done; echo ended by itself
SH

# run_and_kill SIGNAL OUT COMMAND...: starts COMMAND, sends SIGNAL to it
# once its output says ready, prints its exit status and seconds taken.
run_and_kill() {
	sig=$1; out=$2; shift 2
	start=$(date +%s)
	rm -f "$out"
	"$@" >"$out" 2>"$out.err" & pid=$!
	n=0; while ! grep -q ready "$out" 2>/dev/null && [ $n -lt 200 ]; do sleep 0.05; n=$((n+1)); done
	kill -"$sig" $pid
	wait $pid; rc=$?
	echo "$rc $(($(date +%s) - start))"
}

# (not INT: a background job of a non-interactive shell ignores it)
for sig in TERM HUP USR1; do
	for prog in trap sleep; do
		if [ $prog = trap ]; then
			set -- sh "$W/trap.sh"
		else
			set -- sh -c 'echo ready; exec sleep 10'
		fi
		nrun=$(run_and_kill $sig "$W/native.out" "$@")
		rrun=$(run_and_kill $sig "$W/reticle.out" "$R" run -o "$W/p.db" -- "$@")
		nrc=${nrun% *}; rrc=${rrun% *}; secs=${rrun#* }
		label="$sig $prog"
		if [ "$nrc" != "$rrc" ]; then
			echo "FAIL [$label]: exit status $rrc under reticle, $nrc natively"; fails=$((fails+1))
		elif ! cmp -s "$W/native.out" "$W/reticle.out"; then
			echo "FAIL [$label]: output differs: $(tr '\n' ' ' <"$W/reticle.out") against $(tr '\n' ' ' <"$W/native.out")"
			fails=$((fails+1))
		elif [ "$secs" -ge 8 ]; then
			echo "FAIL [$label]: took $secs s: the signal did not end it"; fails=$((fails+1))
		else
			echo "ok [$label]: exit status $rrc, $(tr '\n' ' ' <"$W/reticle.out")"; passes=$((passes+1))
		fi
	done
done
echo "$passes passed, $fails failed"
[ $fails -eq 0 ]
