#!/bin/sh
# Simulator speed: simulated million instructions per second (MIPS) of
# reticle sim on the seed's benchmark programs (static glibc), for each
# built-in description, without tools and with per-block counting
# (-c bbcount), and qemu-user's wall time on the same binaries.
# Least CPU time (user + system, from getrusage) of $REPS runs (default 5),
# so that other load on the machine matters less;
# times include start-up and the tools' static analysis.
#   bench/sim.sh [BUILD_DIR]
set -eu
build=${1:-build}
reticle=$build/src/reticle
src=$(dirname "$0")/../tests/sim/programs
work=${TMPDIR:-/tmp}/reticle-bench-sim
reps=${REPS:-5}
mkdir -p "$work"

# least CPU time (user + system of the child, microsecond resolution) of $reps runs
best() {
	python3 - "$reps" "$@" <<'PY'
import resource, subprocess, sys
best = None
for _ in range(int(sys.argv[1])):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(sys.argv[2:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    best = t if best is None or t < best else best
print('%.4f' % best)
PY
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
