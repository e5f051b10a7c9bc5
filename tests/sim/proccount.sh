#!/bin/sh
# Per-procedure calls: the entries of 'visit' counted by a tool
# (tools/proccount.c) equal the count the program itself prints (-DCOUNT),
# natively and simulated; every entry also runs the first block to its end.
# No sibling-call optimization: GCC would turn recursion into loops.
#   [SIM_ARCH=rv64|mips32] proccount.sh RETICLE WORKDIR calls.c TOOL.so
set -u
reticle=$1; work=$2; src=$3; tool=$4
case ${SIM_ARCH:-rv64} in
rv64) cc=riscv64-linux-gnu-gcc ;;
mips32) cc=mipsel-linux-gnu-gcc ;;
esac
mkdir -p "$work"
flags="-O2 -DCOUNT -fno-optimize-sibling-calls"
cc $flags -o "$work/calls.native" "$src" || exit 1
want=$("$work/calls.native" | sed -n 's/^visit //p')
$cc $flags -static -o "$work/calls.${SIM_ARCH:-rv64}" "$src" || exit 1
"$reticle" sim --tool "$tool:visit" -- "$work/calls.${SIM_ARCH:-rv64}" > "$work/out" 2> "$work/err" || {
	echo "FAIL: $(cat "$work/err")"; exit 1; }
got=$(sed -n 's/^visit //p' "$work/err")
ends=$(sed -n 's/^first block ends //p' "$work/err")
printed=$(sed -n 's/^visit //p' "$work/out")
[ -n "$want" ] && [ "$got" = "$want" ] && [ "$ends" = "$want" ] && [ "$printed" = "$want" ] || {
	echo "FAIL: visit entered $got times, first block ended $ends times, native count $want"; exit 1; }
echo "ok: visit entered $got times (native: $want)"
