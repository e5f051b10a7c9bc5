#!/usr/bin/env bash
# Slowdown of `reticle run` (fcount, bbcount; each cold, with an empty
# warm-start cache, and warm; edges, callgraph, calltime, cover and loops warm) against native runs and the peer tools
# (valgrind callgrind, uftrace), measured in the same run.
# usage: bench/run.sh [--quick] [--rounds N] [--no-peers] [RETICLE]
#   --quick     one round instead of three (a round runs native, fcount and
#               bbcount one after the other; reticle's cells show the best and
#               the median of the rounds as ratios, best/median)
#   --rounds N  N rounds (more rounds, less noise from a shared machine)
#   --no-peers  skip callgrind and uftrace (they take minutes)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
reps=3; peers=1
while [ $# -gt 0 ]; do
	case $1 in
	--quick) reps=1; shift ;;
	--rounds) reps=$2; shift 2 ;;
	--no-peers) peers=0; shift ;;
	*) break ;;
	esac
done
RETICLE=${1:-$here/../build/src/reticle}
source "$here/workloads.sh"
setup_workloads
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

# best wall-clock seconds of $reps runs of "$@" with stdin from $STDIN
best() {
	local b=
	for _ in $(seq "$reps"); do
		local s e
		s=$(date +%s.%N)
		"$@" <"$STDIN" >/dev/null 2>"$tmp/err" || { echo "failed: $*" >&2; cat "$tmp/err" >&2; return 1; }
		e=$(date +%s.%N)
		b=$(python3 -c "t=$e-$s; b='$b'; print(t if not b or t < float(b) else b)")
	done
	echo "$b"
}


# cold: an empty warm-start cache before every run; warm: a cache primed by
# one untimed run (what a second run of the same binaries sees)
cold() { rm -rf "$tmp/cold"; RETICLE_CACHE_DIR="$tmp/cold" "$@"; }
warm() { RETICLE_CACHE_DIR="$tmp/warm-$key" "$@"; }

printf '%-9s %8s %11s %11s %11s %11s %11s %11s %11s %11s %11s %10s %10s\n' workload native fcount fc-warm bbcount \
	bb-warm ed-warm cg-warm ct-warm cv-warm lp-warm callgrind uftrace
for w in $WORKLOADS; do
	v=${w//./_}; cmd="CMD_$v[@]"; STDIN_VAR="STDIN_$v"; STDIN=${!STDIN_VAR}
	for c in fcount bbcount edges callgraph calltime cover loops; do
		key=$w-$c; warm "$RETICLE" run -c $c -o "$tmp/p.db" -- "${!cmd}" <"$STDIN" >/dev/null 2>&1
	done
	# rounds of native, fcount, bbcount (cold and warm): a machine whose
	# speed drifts between runs (shared VMs) affects them alike
	n=; f=; fw=; b=; bw=; ew=; gw=; tw=; vw=; lw=
	reps_saved=$reps; reps=1
	for _ in $(seq "$reps_saved"); do
		n="$n $(best "${!cmd}")"
		f="$f $(best cold "$RETICLE" run -c fcount -o "$tmp/f.db" -- "${!cmd}")"
		key=$w-fcount; fw="$fw $(best warm "$RETICLE" run -c fcount -o "$tmp/f.db" -- "${!cmd}")"
		b="$b $(best cold "$RETICLE" run -c bbcount -o "$tmp/b.db" -- "${!cmd}")"
		key=$w-bbcount; bw="$bw $(best warm "$RETICLE" run -c bbcount -o "$tmp/b.db" -- "${!cmd}")"
		key=$w-edges; ew="$ew $(best warm "$RETICLE" run -c edges -o "$tmp/e.db" -- "${!cmd}")"
		key=$w-callgraph; gw="$gw $(best warm "$RETICLE" run -c callgraph -o "$tmp/c.db" -- "${!cmd}")"
		key=$w-calltime; tw="$tw $(best warm "$RETICLE" run -c calltime -o "$tmp/t.db" -- "${!cmd}")"
		key=$w-cover; vw="$vw $(best warm "$RETICLE" run -c cover -o "$tmp/v.db" -- "${!cmd}")"
		key=$w-loops; lw="$lw $(best warm "$RETICLE" run -c loops -o "$tmp/l.db" -- "${!cmd}")"
	done
	reps=$reps_saved
	cg=-; uf=-
	if [ $peers = 1 ]; then
		reps_saved=$reps; reps=1
		cg=$(best valgrind --tool=callgrind --callgrind-out-file="$tmp/cg.out" "${!cmd}")
		uf=$(best uftrace record -P . -d "$tmp/uftrace.data" "${!cmd}" 2>/dev/null || echo -)
		reps=$reps_saved
	fi
	python3 - "$w" "$n" "$f" "$fw" "$b" "$bw" "$ew" "$gw" "$tw" "$vw" "$lw" "$cg" "$uf" <<'PY'
import statistics, sys
# reticle's cells: best / median of the rounds, each against native's best /
# median (the median tells a lucky native run from a real difference)
w, n, *rest = sys.argv[1:]
n = [float(x) for x in n.split()]
def cell(x):
    if x in ("-", ""):
        return "-"
    v = [float(t) for t in x.split()]
    if len(v) == 1:
        return f"{v[0] / min(n):.2f}x"
    return f"{min(v) / min(n):.2f}/{statistics.median(v) / statistics.median(n):.2f}x"
c = [cell(x) for x in rest]
print(f"{w:<9} {min(n):7.2f}s {c[0]:>11} {c[1]:>11} {c[2]:>11} {c[3]:>11} {c[4]:>11} {c[5]:>11} {c[6]:>11} {c[7]:>11} {c[8]:>11} {c[9]:>10} {c[10]:>10}")
PY
done

# start-up cost: gcc compiling a small file (cc1 is a large stripped binary)
STDIN=/dev/null
echo 'int main(void) { return 0; }' >"$tmp/x.c"
n=$(best gcc -O2 -c "$tmp/x.c" -o "$tmp/x.o")
f=$(best cold "$RETICLE" run -c fcount -o "$tmp/g.db" -- gcc -O2 -c "$tmp/x.c" -o "$tmp/x.o")
b=$(best cold "$RETICLE" run -c fcount,bbcount -o "$tmp/g.db" -- gcc -O2 -c "$tmp/x.c" -o "$tmp/x.o")
key=gcc; warm "$RETICLE" run -c fcount -o "$tmp/g.db" -- gcc -O2 -c "$tmp/x.c" -o "$tmp/x.o" </dev/null >/dev/null 2>&1
fw=$(best warm "$RETICLE" run -c fcount -o "$tmp/g.db" -- gcc -O2 -c "$tmp/x.c" -o "$tmp/x.o")
python3 -c "print(f'gcc -c x.c: native {$n:.3f}s, fcount {$f:.3f}s (warm {$fw:.3f}s), fcount+bbcount {$b:.3f}s (start-up cost of cc1, as, gcc)')"
# relocation speed: functions instrumented and the time spent relocating
# them (from --stats) when gcc compiles the small file: gcc, cc1 and as
cold "$RETICLE" run --stats -c fcount,bbcount -o "$tmp/g.db" -- gcc -O2 -c "$tmp/x.c" -o "$tmp/x.o" 2>"$tmp/stats" >/dev/null
python3 - "$tmp/stats" <<'PY'
import re, sys
t = open(sys.argv[1]).read()
m = re.search(r"(\d+) functions instrumented.*?, (\d+) skipped, (\d+) traps, ([\d.]+) s instrumenting", t)
if m:
    n, s = int(m.group(1)), float(m.group(4))
    print(f"relocation: {n} functions in {s:.3f} s ({1e6 * s / max(n, 1):.0f} us a function, {1e4 * s / max(n, 1):.2f} s per 10,000)")
PY
