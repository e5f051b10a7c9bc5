#!/bin/sh
# Bad input to `reticle run`: one clear line on stderr and the right exit
# status for each case. usage: run_bad_input.sh RETICLE WORKDIR
R=$1; W=$2; fails=0
mkdir -p "$W"
expect() {  # expect STATUS PATTERN -- ARGS...
	want=$1; pat=$2; shift 3
	"$R" "$@" >"$W/out" 2>"$W/err" </dev/null; got=$?
	if [ "$got" != "$want" ] || ! grep -q -- "$pat" "$W/err" || [ "$(wc -l <"$W/err")" -gt 2 ]; then
		echo "FAIL: reticle $*: status $got (want $want), stderr:"; cat "$W/err"; fails=$((fails+1))
	else
		echo "ok: reticle $*: $(head -1 "$W/err")"
	fi
}
rm -f "$W/ran"
printf 'just text\n' >"$W/text"; chmod +x "$W/text"
head -c 3000 /bin/true >"$W/truncated"; chmod +x "$W/truncated"
printf '\177ELF\002\001\001\000\000\000\000\000\000\000\000\000\002\000\363\000' >"$W/riscv"
head -c 64 /bin/true | tail -c 44 >>"$W/riscv"; chmod +x "$W/riscv"
printf 'echo from a script without #!\n' >"$W/noshebang"; chmod +x "$W/noshebang"
printf 'echo not executable\n' >"$W/noexec"; chmod -x "$W/noexec"
expect 127 "No such file" -- run -- "$W/does-not-exist"
# an executable file that is neither ELF nor '#!': /bin/sh runs it, as
# execvp has it run (here 'just: not found', status 127, as natively)
expect 127 "just: not found" -- run -o "$W/p.db" -- "$W/text"
expect 126 "Permission denied" -- run -o "$W/p.db" -- "$W/noexec"
expect 126 "truncated ELF" -- run -- "$W/truncated"
expect 126 "another architecture.*reticle sim" -- run -- "$W/riscv"
expect 2 "unknown collector 'nope'" -- run -c nope -- /bin/true
expect 2 "no collector given" -- run -c '' -- /bin/true
expect 2 "an empty name in the collector list" -- run -c 'fcount,' -- /bin/true
expect 2 "an empty name in the collector list" -- run -c 'fcount,,bbcount' -- /bin/true
expect 2 "no program" -- run
expect 2 "unknown option" -- run --bogus -- /bin/true
expect 126 "Permission denied\|is a directory\|Is a directory" -- run -- "$W"
# a profile that cannot be written: said before the program runs (it
# would write "ran" into the work directory)
expect 1 "cannot write the profile.*No such file" -- run -o "$W/no/such/dir/p.db" -- sh -c "echo ran >$W/ran"
[ ! -e "$W/ran" ] || { echo "FAIL: the program ran although its profile could not be written"; fails=$((fails+1)); }
expect 1 "cannot write the profile.*directory" -- run -o "$W" -- /bin/true
# a profile that could not be written at the end (its directory gone):
# the program succeeded, reticle did not
mkdir -p "$W/gone"
expect 1 "profile not written" -- run -o "$W/gone/p.db" -- rmdir "$W/gone"
# the script without '#!' runs, and its output passes through
"$R" run -o "$W/p.db" -- "$W/noshebang" >"$W/out" 2>/dev/null
grep -q "from a script without" "$W/out" || { echo "FAIL: a script without #! did not run"; fails=$((fails+1)); }
# a profile into a FIFO (or /dev/null): the finished file's bytes are
# copied into it; a rename would have replaced the FIFO by a file
rm -f "$W/fifo" "$W/from-fifo.db"
mkfifo "$W/fifo"
timeout 30 cat "$W/fifo" >"$W/from-fifo.db" &
reader=$!
"$R" run -o "$W/fifo" -- /bin/true 2>/dev/null
wait $reader
if [ ! -p "$W/fifo" ] || ! "$R" report "$W/from-fifo.db" 2>/dev/null | grep -q "exit status"; then
	echo "FAIL: a profile written into a FIFO"; fails=$((fails+1))
else
	echo "ok: a profile written into a FIFO, the FIFO left as it was"
fi
[ $fails -eq 0 ] && echo "all bad-input cases passed"
exit $fails
