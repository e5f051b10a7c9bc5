#!/bin/sh
# Runs a program under reticle sim and under qemu-user (the oracle) with the
# same arguments and an empty environment; stdout and exit status must match.
#   [SIM_ARCH=rv64|mips32] [SIM_STDIN=FILE] compare.sh RETICLE WORKDIR SOURCE.c ARGS...
set -u
case ${SIM_ARCH:-rv64} in
rv64) cc=riscv64-linux-gnu-gcc qemu=qemu-riscv64 ;;
mips32) cc=mipsel-linux-gnu-gcc qemu=qemu-mipsel ;;
esac
reticle=$1; work=$2; src=$3; shift 3
name=$(basename "$src" .c)
bin=$work/$name.${SIM_ARCH:-rv64}
mkdir -p "$work"
if [ ! -x "$bin" ] || [ "$src" -nt "$bin" ]; then
	$cc -O2 -static -pthread ${SIM_CFLAGS:-} -o "$bin" "$src" || exit 1
fi
in=${SIM_STDIN:-/dev/null}
env -i "$reticle" sim -- "$bin" "$@" < "$in" > "$work/$name.sim.out"; s=$?
env -i $qemu "$bin" "$@" < "$in" > "$work/$name.qemu.out"; q=$?
if ! cmp -s "$work/$name.sim.out" "$work/$name.qemu.out"; then
	echo "FAIL $name: stdout differs"; diff "$work/$name.sim.out" "$work/$name.qemu.out" | head; exit 1
fi
[ $s -eq $q ] || { echo "FAIL $name: exit status $s, qemu $q"; exit 1; }
echo "ok $name: $(wc -c < "$work/$name.sim.out") bytes, status $s"
