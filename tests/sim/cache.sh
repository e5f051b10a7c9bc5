#!/bin/sh
# The cache tool on a known access pattern (programs/stride.c: 4 sweeps of
# one load per 64-byte line over 64 KiB): an LRU cache smaller than the
# array misses on all 4096 loads, a larger one only on the first sweep's
# 1024. Loads outside the loop (MIPS loads the array's address from the GOT)
# may add a few accesses, and at most that many misses.
#   [SIM_ARCH=rv64|mips32] cache.sh RETICLE WORKDIR stride.c
set -u
reticle=$1; work=$2; src=$3
case ${SIM_ARCH:-rv64} in
rv64) cc="riscv64-linux-gnu-gcc" ;;
mips32) cc="mipsel-linux-gnu-gcc -mno-abicalls -fno-pic" ;;
esac
mkdir -p "$work"
bin=$work/stride.${SIM_ARCH:-rv64}
$cc -O2 -static -nostdlib -o "$bin" "$src" || exit 1
fail=0
expect() { # cache-spec loop-accesses loop-misses
	out=$("$reticle" sim -c "cache:$1" -- "$bin" 2>&1)
	a=$(printf '%s' "$out" | sed -n 's/.*: \([0-9]*\) accesses.*/\1/p')
	m=$(printf '%s' "$out" | sed -n 's/.*), \([0-9]*\) misses.*/\1/p')
	if [ -z "$a" ] || [ "$a" -lt "$2" ] || [ "$a" -gt $(($2 + 8)) ] ||
	   [ "$m" -lt "$3" ] || [ "$m" -gt $(($3 + a - $2)) ]; then
		echo "FAIL cache:$1: wanted $2 (+8) accesses, $3 (+extra) misses: $out"; fail=1
	else
		echo "ok: $out"
	fi
}
expect 32768:8:64 4096 4096
expect 131072:8:64 4096 1024
expect 65536:1:64 4096 1024
expect 4096:4:32 4096 4096
out=$("$reticle" sim -c cache:1000:3:7 -- "$bin" 2>&1); rc=$?
[ $rc -eq 2 ] || { echo "FAIL: bad cache parameters accepted ($rc): $out"; fail=1; }
exit $fail
