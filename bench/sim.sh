#!/bin/sh
# Simulator speed: simulated million instructions per second (MIPS) of
# reticle sim on the seed's benchmark programs (static glibc), for each
# built-in description, without tools and with per-block counting
# (-c bbcount), and qemu-user's wall time on the same binaries.
# Best of $REPS runs (default 5); times include start-up and the tools'
# static analysis.
#   bench/sim.sh [BUILD_DIR]
set -eu
build=${1:-build}
reticle=$build/src/reticle
src=$(dirname "$0")/../tests/sim/programs
work=${TMPDIR:-/tmp}/reticle-bench-sim
reps=${REPS:-5}
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

hook=$build/tests/sim/sim_bbhook.so
printf '%-7s %-8s %12s %8s %6s %9s %7s %8s %7s %8s %6s\n' isa program instructions sim_s MIPS bbcount_s extra bbhook_s extra qemu_s MIPS
for isa in rv64 mips32; do
	case $isa in
	rv64) cc=riscv64-linux-gnu-gcc qemu=qemu-riscv64 ;;
	mips32) cc=mipsel-linux-gnu-gcc qemu=qemu-mipsel ;;
	esac
	for p in mmul bsort qs fmmul nqueen; do
		bin=$work/$p.$isa
		[ -x "$bin" ] || $cc -O2 -static -o "$bin" "$src/$p.c"
		n=$("$reticle" sim -c icount -- "$bin" 2>&1 >/dev/null | sed -n 's/^icount: \([0-9]*\) .*/\1/p')
		t=$(best "$reticle" sim -- "$bin")
		tb=$(best "$reticle" sim -c bbcount -- "$bin")
		th=$(best "$reticle" sim --tool "$hook" -- "$bin")
		tq=$(best $qemu "$bin")
		printf '%-7s %-8s %12s %8.3f %6.0f %9.3f %6.1f%% %8.3f %6.1f%% %8.3f %6.0f\n' "$isa" "$p" "$n" "$t" \
			"$(echo "$n / $t / 1000000" | bc -l)" "$tb" "$(echo "($tb - $t) * 100 / $t" | bc -l)" \
			"$th" "$(echo "($th - $t) * 100 / $t" | bc -l)" "$tq" "$(echo "$n / $tq / 1000000" | bc -l)"
	done
done
