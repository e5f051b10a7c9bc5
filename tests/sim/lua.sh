#!/bin/sh
# A real program from a Debian source package: lua5.4 (apt-get source),
# cross-compiled static for riscv64, runs programs/test.lua under reticle sim
# and under qemu-riscv64: same stdout and exit status. Needs a deb-src entry
# for bookworm (apt-get source); skipped (77) without it. The binary is kept
# in the work directory between runs.
#   lua.sh RETICLE WORKDIR TEST.lua
set -u
reticle=$1; work=$2; script=$3
mkdir -p "$work"
bin=$work/lua.rv64
if [ ! -x "$bin" ]; then
	(cd "$work" && apt-get source -q lua5.4 >/dev/null 2>&1) || { echo "skip: apt-get source lua5.4 failed"; exit 77; }
	src=$(ls -d "$work"/lua5.4-*/src | head -1)
	[ -d "$src" ] || exit 77
	echo '#define DEB_HOST_MULTIARCH "riscv64-linux-gnu"' > "$src/lua5.4-deb-multiarch.h"
	files=$(cd "$src" && ls *.c | grep -v -E '^(luac|onelua)\.c$')
	(cd "$src" && riscv64-linux-gnu-gcc -O2 -static -DLUA_USE_POSIX -I. -o "$bin" $files -lm) || exit 1
fi
env -i "$reticle" sim -- "$bin" "$script" A > "$work/sim.out" 2>&1; s=$?
env -i qemu-riscv64 "$bin" "$script" A > "$work/qemu.out" 2>&1; q=$?
[ $s -eq $q ] && cmp -s "$work/sim.out" "$work/qemu.out" || {
	echo "FAIL lua: status $s vs $q"; diff "$work/sim.out" "$work/qemu.out" | head; exit 1; }
echo "ok lua5.4 (Debian source): $(wc -l < "$work/sim.out") lines, status $s"
