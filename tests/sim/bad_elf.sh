#!/bin/sh
# Bad programs and arguments: an ELF for an undescribed machine, a
# dynamically linked ELF, a missing file, a directory, a device, empty tool
# names: one clear line, a non-zero exit (2 for usage errors) and, with -o,
# no profile or temporary file left.
set -u
reticle=$1; work=$2; src=$3; fail=0
mkdir -p "$work"
check() { # want, command...
	want=$1; shift
	out=$("$@" 2>&1); rc=$?
	if [ $rc -eq 0 ] || ! printf '%s' "$out" | grep -qF -e "$want"; then
		echo "FAIL: $*: rc=$rc, wanted '$want', got '$out'"; fail=1
	else
		echo "ok: $out"
	fi
}
check "has no description" "$reticle" sim -- /bin/sh -c true
riscv64-linux-gnu-gcc -O2 -o "$work/hello.dyn" "$src" 2>/dev/null &&
	check "dynamically linked" "$reticle" sim -- "$work/hello.dyn"
check "No such file" "$reticle" sim -- "$work/does-not-exist"
riscv64-linux-gnu-gcc -O2 -static -o "$work/hello.static" "$src" &&
	check "unknown tool or bad parameters 'nosuchtool'" "$reticle" sim -c nosuchtool -- "$work/hello.static"
# an undecodable instruction and an unsupported system call, at run time
d=$(dirname "$0")/programs
riscv64-linux-gnu-gcc -O2 -static -nostdlib -o "$work/bad_insn" "$d/bad_insn.c" &&
	check "undecodable instruction at 0x" "$reticle" sim -- "$work/bad_insn"
riscv64-linux-gnu-gcc -O2 -static -nostdlib -o "$work/bad_syscall" "$d/bad_syscall.c" &&
	check "unsupported system call socket (198) at 0x" "$reticle" sim -- "$work/bad_syscall"
# o32 numbers start at 4000: the message gives the program's own number
if command -v mipsel-linux-gnu-gcc >/dev/null; then
	mipsel-linux-gnu-gcc -O2 -static -nostdlib -e _start -o "$work/bad_syscall.mips32" "$d/bad_syscall.c" &&
		check "unsupported system call socket (4183) at 0x" "$reticle" sim -- "$work/bad_syscall.mips32"
fi
check "x86-64, 64-bit) has no description" "$reticle" sim -- /bin/sh -c true
check "$work: is a directory, not a program" "$reticle" sim -- "$work"
check "/dev/null: not a regular file" "$reticle" sim -- /dev/null
check "ELF machine 243 (RISC-V, 64-bit) is not mips32" "$reticle" sim --isa mips32 -- "$work/hello.static"
check "no description named 'nosuchisa'" "$reticle" sim --isa nosuchisa -- "$work/hello.static"
# usage errors: exit status 2, nothing run
usage() { # want, command...
	want=$1; shift
	out=$("$@" 2>&1); rc=$?
	if [ $rc -ne 2 ] || ! printf '%s' "$out" | grep -qF -e "$want"; then
		echo "FAIL: $*: rc=$rc (wanted 2), wanted '$want', got '$out'"; fail=1
	else
		echo "ok: $out"
	fi
}
usage "no shared object named" "$reticle" sim --tool :x -- "$work/hello.static"
usage "no shared object named" "$reticle" sim --tool "" -- "$work/hello.static"
usage "an empty tool name" "$reticle" sim -c "" -- "$work/hello.static"
usage "an empty tool name" "$reticle" sim -c icount,,mix -- "$work/hello.static"
usage "no program given" "$reticle" sim -- ""
# -o: refused at once for a directory; nothing left behind by a failure
mkdir -p "$work/pdir"
check "profile $work/pdir: it is a directory" "$reticle" sim -o "$work/pdir" -- "$work/hello.static"
[ -z "$(ls "$work" | grep '^pdir\.tmp')" ] || { echo "FAIL: -o DIR left $(ls "$work" | grep '^pdir\.tmp')"; fail=1; }
rm -f "$work"/p.db*
check "is a directory" "$reticle" sim -o "$work/p.db" -- "$work"
check "has no description" "$reticle" sim -o "$work/p.db" -- /bin/sh -c true
usage "no shared object named" "$reticle" sim -o "$work/p.db" --tool :x -- "$work/hello.static"
check "unknown tool" "$reticle" sim -o "$work/p.db" -c nosuchtool -- "$work/hello.static"
left=$(ls "$work" | grep '^p\.db')
[ -z "$left" ] || { echo "FAIL: failed runs with -o left $left"; fail=1; }
printf 'not an elf\n' > "$work/text"
check "not an ELF file" "$reticle" sim -- "$work/text"
head -c 100 "$work/hello.static" > "$work/truncated"
check "$work/truncated" "$reticle" sim -- "$work/truncated"
exit $fail
