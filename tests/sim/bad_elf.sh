#!/bin/sh
# Bad programs: an ELF for an undescribed machine, a dynamically linked ELF,
# a missing file: one clear line and a non-zero exit.
set -u
reticle=$1; work=$2; src=$3; fail=0
mkdir -p "$work"
check() { # want, command...
	want=$1; shift
	out=$("$@" 2>&1); rc=$?
	if [ $rc -eq 0 ] || ! printf '%s' "$out" | grep -qF "$want"; then
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
printf 'not an elf\n' > "$work/text"
check "not an ELF file" "$reticle" sim -- "$work/text"
head -c 100 "$work/hello.static" > "$work/truncated"
check "$work/truncated" "$reticle" sim -- "$work/truncated"
exit $fail
