#!/bin/sh
# Oracle test: a real program's lackey trace through 'reticle cachesim' with
# the cachegrind preset must give exactly the counts that valgrind's
# cachegrind reports for the same run (I refs, D reads and writes, and the
# I1/D1/LL misses by kind). Also runs the bank's property test on the real
# trace. usage: cachegrind_oracle.sh RETICLE PROPERTY_TEST CC FIXTURE_SRC WORKDIR
set -eu
RETICLE=$1 PROPTEST=$2 CC=$3 SRC=$4 WORK=$5
mkdir -p "$WORK"
cd "$WORK"
"$CC" -O2 -mfxsr -static -o cgwork "$SRC"
head -c 6000 /usr/share/common-licenses/GPL-3 > input.txt
fail=0

# compare NAME TRACE I1 D1 LL -- COMMAND...: cache specs as SIZE,WAYS,LINE;
# the lackey trace of COMMAND is made once per TRACE name
compare() {
	name=$1 trace=$2 i1=$3 d1=$4 ll=$5
	shift 6
	[ -s "$trace.lackey" ] ||
		valgrind --tool=lackey --trace-mem=yes --log-file="$trace.lackey" "$@" > "$name.out1"
	[ -s "$name.out1" ] || cp "$trace.out1" "$name.out1"
	valgrind --tool=cachegrind --cache-sim=yes --I1="$i1" --D1="$d1" --LL="$ll" \
		--cachegrind-out-file="$name.cg" "$@" > "$name.out2" 2> "$name.cg.log"
	cmp -s "$name.out1" "$name.out2" || { echo "FAIL $name: the two runs differ"; fail=1; }
	spec="cachegrind,l1i=$(echo "$i1" | tr , :),l1d=$(echo "$d1" | tr , :),ll=$(echo "$ll" | tr , :)"
	"$RETICLE" cachesim --format json --cache "$spec" "$trace.lackey" > "$name.json"
	want=$(grep '^summary:' "$name.cg" | cut -d' ' -f2-)
	got=$(python3 -c '
import json, sys
L = json.load(open(sys.argv[1]))["configs"][0]["levels"]
i, d, l = L["l1i"], L["l1d"], L["l2"]
v = [i["ifetch"]["accesses"], i["ifetch"]["misses"], l["ifetch"]["misses"],
     d["load"]["accesses"], d["load"]["misses"], l["load"]["misses"],
     d["store"]["accesses"], d["store"]["misses"], l["store"]["misses"]]
print(" ".join(map(str, v)))' "$name.json")
	echo "$name: cachegrind (Ir I1mr ILmr Dr D1mr DLmr Dw D1mw DLmw) = $want"
	echo "$name: reticle                                       = $got"
	[ "$want" = "$got" ] || { echo "FAIL $name: counts differ"; fail=1; }
}

rm -f ./*.lackey ./*.out1
compare cgwork-small cgwork 4096,2,32 8192,4,64 65536,8,64 -- ./cgwork 3
cp cgwork-small.out1 cgwork.out1
compare cgwork-big cgwork 32768,8,64 32768,8,64 262144,16,64 -- ./cgwork 3
compare bzip2 bzip2 8192,4,64 16384,4,32 131072,8,64 -- bzip2 -1 -c input.txt

# per-function attribution: D1 accesses and misses summed over each
# function's instructions (ranges from nm) must equal cachegrind's per-function
# Dr+Dw and D1mr+D1mw (cachegrind charges a data access to its instruction,
# as lackey's trace does)
"$RETICLE" cachesim --format json --attribute l1d --top 100000000 \
	--cache cachegrind,l1i=4096:2:32,l1d=8192:4:64,ll=65536:8:64 cgwork.lackey > attr.json
nm -S --defined-only cgwork > cgwork.nm
python3 - attr.json cgwork.nm cgwork-small.cg <<'PY' || fail=1
import bisect, json, sys
costs = json.load(open(sys.argv[1]))["attribution"]["instructions"]
ranges = {}
for line in open(sys.argv[2]):
    f = line.split()
    if len(f) == 4 and f[2] in "tTwWi" and int(f[1], 16) > 0:
        ranges.setdefault(f[3], set()).add((int(f[0], 16), int(f[0], 16) + int(f[1], 16)))
cg, fn = {}, None
for line in open(sys.argv[3]):
    if line.startswith("fn="):
        fn = line[3:].strip()
    elif line[:1].isdigit() and fn:
        v = list(map(int, line.split()))
        acc = cg.setdefault(fn, [0, 0])
        acc[0] += v[4] + v[7]          # Dr + Dw
        acc[1] += v[5] + v[8]          # D1mr + D1mw
addrs = sorted(c["iaddr"] for c in costs)
by = {c["iaddr"]: c for c in costs}
checked = bad = 0
for name, (acc, miss) in sorted(cg.items()):
    r = ranges.get(name)
    if not r or len(r) != 1 or acc == 0:
        continue                       # unknown to nm, or ambiguous
    lo, hi = r.pop()
    i, a, m = bisect.bisect_left(addrs, lo), 0, 0
    while i < len(addrs) and addrs[i] < hi:
        a += by[addrs[i]]["accesses"]; m += by[addrs[i]]["misses"]; i += 1
    checked += 1
    if (a, m) != (acc, miss):
        bad += 1
        print("function %s: cachegrind %d accesses %d misses, reticle %d %d" % (name, acc, miss, a, m))
print("attribution: %d functions compared with cachegrind, %d differ" % (checked, bad))
assert checked >= 10 and bad == 0
PY

# the stack-distance bank against plain simulators, on a real stream
"$PROPTEST" cgwork.lackey || fail=1

# the miss-ratio curve (Fenwick-tree reuse distances) against fully-
# associative LRU caches simulated in the same pass by stack engines
"$RETICLE" cachesim --format json --mrc --mrc-max 1m --cache l1=16k:full:64 \
	--cache l1=256k:full:64 bzip2.lackey > mrc.json
python3 - mrc.json <<'PY' || fail=1
import json, sys
d = json.load(open(sys.argv[1]))
curve = {p["size"]: p["misses"] for p in d["reuse"]["mrc"]}
for c in d["configs"]:
    size = int(c["name"].split("=")[1].split("k")[0]) * 1024
    got = c["levels"]["l1"]["misses"]
    print("fully-associative %d KiB: cache %d misses, curve %d" % (size // 1024, got, curve[size]))
    assert got == curve[size]
PY
[ $fail -ne 0 ] || rm -f ./*.lackey   # large; kept only to debug a failure
exit $fail
