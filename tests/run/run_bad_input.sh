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
printf 'just text\n' >"$W/text"; chmod +x "$W/text"
head -c 3000 /bin/true >"$W/truncated"; chmod +x "$W/truncated"
printf '\177ELF\002\001\001\000\000\000\000\000\000\000\000\000\002\000\363\000' >"$W/riscv"
head -c 64 /bin/true | tail -c 44 >>"$W/riscv"; chmod +x "$W/riscv"
expect 127 "No such file" -- run -- "$W/does-not-exist"
expect 1 "not an ELF file" -- run -- "$W/text"
expect 1 "truncated ELF" -- run -- "$W/truncated"
expect 1 "another architecture" -- run -- "$W/riscv"
expect 2 "unknown collector 'nope'" -- run -c nope -- /bin/true
expect 2 "no program" -- run
expect 2 "unknown option" -- run --bogus -- /bin/true
expect 126 "Permission denied\|is a directory\|Is a directory" -- run -- "$W"
[ $fails -eq 0 ] && echo "all bad-input cases passed"
exit $fails
