#!/bin/sh
# Instruction-level oracle: the addresses of all executed instructions of a
# libc-free program, from a user tool (--tool, hooks by name) and from qemu's
# one-instruction-per-block exec log, must be the same sequence; the icount
# tool must report its length.
#   [SIM_ARCH=rv64|mips32] trace.sh RETICLE WORKDIR SOURCE.c TOOL.so
# On rv64 the mix, bbcount and branch reports are also checked (oracle.py).
set -eu
case ${SIM_ARCH:-rv64} in
rv64) cc="riscv64-linux-gnu-gcc" qemu=qemu-riscv64 ;;
mips32) cc="mipsel-linux-gnu-gcc -mno-abicalls -fno-pic" qemu=qemu-mipsel ;;
esac
reticle=$1; work=$2; src=$3; tool=$4
mkdir -p "$work"
bin=$work/tiny.${SIM_ARCH:-rv64}
$cc -O2 -static -nostdlib -o "$bin" "$src"
set +e
"$reticle" sim -c icount,mix,bbcount,branch,cache --tool "$tool:$work/sim.pcs" -- "$bin" 2> "$work/sim.err"; s=$?
$qemu -singlestep -d exec,nochain -D "$work/qemu.log" "$bin"; q=$?
set -e
[ $s -eq $q ] || { echo "FAIL: status $s, qemu $q"; exit 1; }
sed -n 's/^Trace [0-9]*: 0x[0-9a-f]* \[[0-9a-f]*\/\([0-9a-f]*\)\/.*/\1/p' "$work/qemu.log" | sed 's/^0*//' > "$work/qemu.pcs"
cmp "$work/sim.pcs" "$work/qemu.pcs" || { echo "FAIL: executed addresses differ"; exit 1; }
n=$(wc -l < "$work/qemu.pcs")
grep -q "icount: $n instructions" "$work/sim.err" || { echo "FAIL: icount != $n"; cat "$work/sim.err"; exit 1; }
if [ "${SIM_ARCH:-rv64}" = rv64 ]; then
	riscv64-linux-gnu-objdump -d -M no-aliases "$bin" > "$work/objdump.txt"
	python3 "$(dirname "$0")/oracle.py" "$work/objdump.txt" "$work/qemu.pcs" "$work/sim.err"
fi
echo "ok: $n instructions, identical sequence"
