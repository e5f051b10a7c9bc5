#!/bin/sh
# Exceptions that kill a MIPS program, with Linux's signal: division by
# zero (teq ..., 7: SIGFPE, status 136). The oracle is the kernel's rule
# (programs/div0.c explains why not qemu's).
#   signals.sh RETICLE WORKDIR div0.c
set -u
reticle=$1; work=$2; src=$3
mkdir -p "$work"
mipsel-linux-gnu-gcc -O2 -static -o "$work/div0.mips32" "$src" || exit 1
out=$("$reticle" sim -- "$work/div0.mips32" 2>&1); s=$?
[ $s -eq 136 ] && printf '%s' "$out" | grep -q "dividing" && printf '%s' "$out" | grep -q "Floating point exception" || {
	echo "FAIL: status $s: $out"; exit 1; }
echo "ok: $out (status $s)"
