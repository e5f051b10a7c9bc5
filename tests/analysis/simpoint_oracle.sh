#!/bin/sh
# SimPoint oracle: real BBVs from valgrind exp-bbv, cache counts from a
# lackey trace of the same run through the bank; the weighted estimate from
# the chosen points must be within 3% of the full run, both through the C
# API (test_simpoint_oracle) and through the commands ('reticle simpoint'
# points and weights, 'reticle cachesim --interval' counts per interval).
# usage: simpoint_oracle.sh RETICLE DRIVER CC FIXTURE_SRC WORKDIR
set -eu
RETICLE=$1 DRIVER=$2 CC=$3 SRC=$4 WORK=$5
SPEC=cachegrind,l1i=4096:2:32,l1d=8192:4:64,ll=65536:8:64
mkdir -p "$WORK"
cd "$WORK"
"$CC" -O2 -static -o phases "$SRC"
valgrind --tool=exp-bbv --interval-size=100000 --bb-out-file=phases.bb ./phases > /dev/null 2>&1
rm -f trace.fifo intervals.csv
mkfifo trace.fifo
"$RETICLE" cachesim --cache "$SPEC" --interval 100000 --interval-out intervals.csv \
	trace.fifo > cachesim.txt &
cli=$!
valgrind --tool=lackey --trace-mem=yes --log-fd=3 ./phases 3>&1 1>/dev/null 2>/dev/null |
	tee trace.fifo | "$DRIVER" phases.bb - "$SPEC"
wait $cli
"$RETICLE" simpoint --seed 3 phases.bb > a.txt
"$RETICLE" simpoint --seed 3 --simpoints points.txt --weights weights.txt phases.bb > b.txt
cmp a.txt b.txt
cat a.txt
k=$(sed -n 's/.*k = \([0-9]*\)$/\1/p' a.txt)
rows=$(awk 'NR > 3' a.txt | wc -l)
[ "$k" -ge 1 ] && [ "$rows" -eq "$k" ]
python3 - points.txt weights.txt intervals.csv phases.bb <<'PY'
import csv, sys
points = dict((int(c), int(i)) for i, c in (l.split() for l in open(sys.argv[1])))
weights = dict((int(c), float(w)) for w, c in (l.split() for l in open(sys.argv[2])))
rows = [r for r in csv.DictReader(open(sys.argv[3])) if r["config"] == "0"]
R = sum(1 for l in open(sys.argv[4]) if l.startswith("T"))
for level in ("l1d", "l2"):
    per = {int(r["interval"]): int(r["misses"]) for r in rows if r["level"] == level}
    full = sum(per.values())
    est = sum(weights[c] * R * per[i] for c, i in points.items())
    err = abs(est - full) / full * 100
    print("commands: %s misses full %d estimate %.0f error %.2f%%" % (level, full, est, err))
    assert err <= 3.0
PY
