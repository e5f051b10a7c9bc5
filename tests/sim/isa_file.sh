#!/bin/sh
# --isa FILE: a description turned into a simulator at run time must run the
# libc-free program like the built-in one (same status and icount), and a
# malformed description must be reported as file:line:column.
#   isa_file.sh RETICLE WORKDIR DESCRIPTION PROGRAM.c BAD.nml
set -u
reticle=$1; work=$2; desc=$3; src=$4; bad=$5
mkdir -p "$work"
bin=$work/tiny.mips32
mipsel-linux-gnu-gcc -O2 -static -nostdlib -mno-abicalls -fno-pic -o "$bin" "$src" || exit 1
"$reticle" sim -c icount -- "$bin" 2> "$work/builtin.err"; s1=$?
"$reticle" sim --isa "$desc" -c icount -- "$bin" 2> "$work/file.err"; s2=$?
[ $s1 -eq $s2 ] && cmp -s "$work/builtin.err" "$work/file.err" || {
	echo "FAIL: built-in $s1 $(cat "$work/builtin.err"), from file $s2 $(cat "$work/file.err")"; exit 1; }
out=$("$reticle" sim --isa "$bad" -- "$bin" 2>&1); rc=$?
[ $rc -ne 0 ] && printf '%s' "$out" | grep -q "unknown.nml:6:24: error: unknown name 'Q'" || {
	echo "FAIL: bad description: rc=$rc $out"; exit 1; }
echo "ok: $(cat "$work/file.err"), status $s2; $out"
