#!/bin/sh
# Simulator speed: simulated million instructions per second (MIPS) of
# reticle sim on the seed's benchmark programs (RV64, static glibc), without
# tools and with per-block counting (-c bbcount), and qemu-user's wall time
# on the same binaries. Best of $REPS runs (default 3).
#   bench/sim.sh [BUILD_DIR]
set -eu
build=${1:-build}
reticle=$build/src/reticle
src=$(dirname "$0")/../tests/sim/programs
work=${TMPDIR:-/tmp}/reticle-bench-sim
reps=${REPS:-3}
mkdir -p "$work"

best() { # command... -> best wall time in seconds
	b=
	for _ in $(seq "$reps"); do
		s=$(date +%s.%N); "$@" >/dev/null 2>&1 || true; e=$(date +%s.%N)
		t=$(echo "$e - $s" | bc -l)
		if [ -z "$b" ] || [ "$(echo "$t < $b" | bc -l)" = 1 ]; then b=$t; fi
	done
	echo "$b"
}

printf '%-8s %12s %9s %9s %9s %10s %9s\n' program instructions sim_s MIPS bbcnt_s overhead qemu_s
for p in mmul bsort qs fmmul nqueen; do
	bin=$work/$p.rv64
	[ -x "$bin" ] || riscv64-linux-gnu-gcc -O2 -static -o "$bin" "$src/$p.c"
	n=$("$reticle" sim -c icount -- "$bin" 2>&1 >/dev/null | sed -n 's/^icount: \([0-9]*\) .*/\1/p')
	t=$(best "$reticle" sim -- "$bin")
	tb=$(best "$reticle" sim -c bbcount -- "$bin")
	tq=$(best qemu-riscv64 "$bin")
	printf '%-8s %12s %9.3f %9.0f %9.3f %9.1f%% %9.3f\n' "$p" "$n" "$t" "$(echo "$n / $t / 1000000" | bc -l)" \
		"$tb" "$(echo "($tb - $t) * 100 / $t" | bc -l)" "$tq"
done
