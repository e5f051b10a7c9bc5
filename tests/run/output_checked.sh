#!/bin/sh
# -o where the profile cannot be written, told before the program runs, by
# doing what the end does (a temporary file beside it, a write), not by
# access(), which root passes: /dev/full (every write fails), /proc/version
# and /sys/x.db (the kernel's file systems: no file can be created there),
# each with its true reason; the program does not run, nothing is left.
# A new file in a writable directory, an existing profile and /dev/null
# are still taken. For run, probe, top, attach, and merge and report's -o.
# A socket is refused; a FIFO is written into when a process reads it.
# usage: output_checked.sh RETICLE WORKDIR
R=$1; W=$2; fails=0
rm -rf "$W"; mkdir -p "$W"
export RETICLE_CACHE_DIR="$W/cache" XDG_RUNTIME_DIR="$W"
# expect STATUS PATTERN ARGS...: reticle ARGS exits with STATUS, its stderr
# matches PATTERN, and the program (which would write $W/ran) did not run
# when STATUS is 1
expect() {
	want=$1; pat=$2; shift 2
	rm -f "$W/ran"
	timeout 60 "$R" "$@" >"$W/out" 2>"$W/err" </dev/null; got=$?
	if [ "$got" != "$want" ] || { [ -n "$pat" ] && ! grep -q -- "$pat" "$W/err"; }; then
		echo "FAIL: reticle $*: status $got (want $want, /$pat/), stderr:"; cat "$W/err"; fails=$((fails+1))
	elif [ "$want" = 1 ] && [ -e "$W/ran" ]; then
		echo "FAIL: reticle $*: the program ran although its profile could not be written"; fails=$((fails+1))
	else
		echo "ok: reticle $*: $(head -1 "$W/err")"
	fi
}
prog="echo ran >$W/ran"
"$R" run -o "$W/p.db" -- /bin/true 2>/dev/null || { echo "FAIL: no profile to start from"; exit 1; }
for o in /dev/full /proc/version /sys/x.db; do
	case $o in
	/dev/full) why="No space left on device" ;;
	/proc/*) why="/proc is on the kernel's proc file system, where no file can be created" ;;
	/sys/*) why="/sys is on the kernel's sysfs file system, where no file can be created" ;;
	esac
	[ -e $o ] || [ -d "${o%/*}" ] || { echo "skip $o: not here"; continue; }
	expect 1 "run: cannot write the profile $o: $why" run -o $o -- sh -c "$prog"
	expect 1 "probe: cannot write the profile $o: $why" probe -o $o 'entry:malloc { @n = count(); }' -- sh -c "$prog"
	expect 1 "top: cannot write the profile $o: $why" top --iterations 1 -o $o -- sh -c "$prog"
	expect 1 "attach: cannot write the profile $o: $why" attach -d 1 -o $o $$
	expect 1 "merge: cannot write the profile $o: $why" merge -o $o "$W/p.db"
	expect 1 "report: cannot write.*$o.*: $why" report -o $o "$W/p.db"
done
# what can be written still is: a new file, a profile overwritten, /dev/null
expect 0 "profile written to $W/new.db" run -o "$W/new.db" -- sh -c "$prog"
expect 0 "profile written to $W/p.db" run -o "$W/p.db" -- sh -c "$prog"
expect 0 "profile written to /dev/null" run -o /dev/null -- sh -c "$prog"
expect 0 "" probe -o "$W/p.db" 'entry:malloc { @n = count(); }' -- sh -c "$prog"
expect 0 "" report -o "$W/report.txt" "$W/new.db"
"$R" report "$W/p.db" >/dev/null 2>&1 || { echo "FAIL: $W/p.db is no profile after probe -o"; fails=$((fails+1)); }
# a profile that could not be written at the end (its directory gone):
# the program succeeded, reticle did not
for c in probe top; do
	mkdir -p "$W/gone"
	case $c in
	probe) set -- probe -o "$W/gone/p.db" 'entry:malloc { @n = count(); }' ;;
	top) set -- top --iterations 1 -o "$W/gone/p.db" ;;
	esac
	expect 1 "profile not written" "$@" -- rmdir "$W/gone"
done
# a socket is refused before the run; a FIFO that no process reads at the
# end is an error, not a wait for ever (reticle blocked in open(), deaf to
# SIGTERM); one with a reader gets the profile, as >(...) does
python3 -c "import socket, time; s = socket.socket(socket.AF_UNIX); s.bind('$W/sock'); time.sleep(60)" &
spid=$!
for i in 1 2 3 4 5 6 7 8 9 10; do [ -S "$W/sock" ] && break; sleep 0.2; done
expect 1 "run: cannot write the profile $W/sock: it is a socket" run -o "$W/sock" -- sh -c "$prog"
kill $spid 2>/dev/null
mkfifo "$W/fifo"
expect 1 "profile not written" run -o "$W/fifo" -- /bin/true
cat "$W/fifo" >"$W/from_fifo.db" &
expect 0 "profile written to $W/fifo" run -o "$W/fifo" -- /bin/true
wait $!
"$R" report "$W/from_fifo.db" >/dev/null 2>&1 || { echo "FAIL: no profile came through the FIFO"; fails=$((fails+1)); }
# nothing half-written left: no temporary file beside any of them
left=$(ls "$W" | grep '\.tmp\.')
[ -z "$left" ] || { echo "FAIL: left behind in $W: $left"; fails=$((fails+1)); }
[ $fails -eq 0 ] && echo "all passed"
exit $fails
