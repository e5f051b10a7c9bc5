#!/bin/sh
# reticle functions on bad input: one line on stderr naming the file and
# the problem, exit 1; usage errors exit 2; --help exits 0.
# usage: functions_bad_input.sh RETICLE WORKDIR
R=$1
W=$2
fail=0
mkdir -p "$W" || exit 1

# expect STATUS PATTERN ARGS...: exit status and a one-line stderr matching PATTERN
expect() {
	want=$1 pat=$2
	shift 2
	"$R" functions "$@" >"$W/out" 2>"$W/err"
	got=$?
	lines=$(wc -l <"$W/err")
	if [ "$got" != "$want" ] || ! grep -q -- "$pat" "$W/err" || [ "$lines" != 1 ]; then
		echo "FAIL: functions $*: exit $got (want $want), stderr ($lines lines):"
		cat "$W/err"
		fail=1
	else
		echo "ok: functions $*: $(cat "$W/err")"
	fi
}

printf 'hello\n' >"$W/text.txt"
: >"$W/empty"
head -c 3000 /bin/true >"$W/trunc3000"
head -c 40 /bin/true >"$W/trunc40"
printf '\177ELF' >"$W/magic-only"

# ELF files for other machines: built when a cross compiler exists,
# otherwise crafted from a copy of /bin/true (class or machine changed).
echo 'int main(void){return 0;}' >"$W/m.c"
if ! riscv64-linux-gnu-gcc -o "$W/riscv" "$W/m.c" 2>/dev/null; then
	cp /bin/true "$W/riscv" && printf '\363\000' | dd of="$W/riscv" bs=1 seek=18 conv=notrunc 2>/dev/null
fi
if ! gcc -m32 -c -o "$W/elf32.o" "$W/m.c" 2>/dev/null; then
	cp /bin/true "$W/elf32.o" && printf '\001' | dd of="$W/elf32.o" bs=1 seek=4 conv=notrunc 2>/dev/null
fi

expect 1 "$W/missing: No such file or directory" "$W/missing"
expect 1 "$W/text.txt: not an ELF file" "$W/text.txt"
expect 1 "$W/empty: not an ELF file" "$W/empty"
expect 1 ": Is a directory" "$W"
expect 1 "$W/riscv: ELF file for another architecture" "$W/riscv"
expect 1 "$W/elf32.o: ELF file for another architecture" "$W/elf32.o"
expect 1 "$W/trunc3000: truncated ELF file" "$W/trunc3000"
expect 1 "$W/trunc40: truncated ELF file" "$W/trunc40"
expect 1 "$W/magic-only: truncated ELF file" "$W/magic-only"
expect 2 "expected one PROGRAM"
expect 2 "unknown format 'xml'" --format xml /bin/true
expect 2 "bad option '--bogus'" --bogus /bin/true
expect 2 "expected one PROGRAM" /bin/true /bin/true

if ! "$R" functions --help | grep -q 'usage: reticle functions'; then
	echo "FAIL: --help"
	fail=1
fi
exit $fail
