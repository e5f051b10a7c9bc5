#!/bin/sh
# reticle sim -c memtrace on a known access pattern (programs/stride.c: 4
# sweeps of one load per 64-byte line over 64 KiB, in _start), two cache
# configurations in one pass: a 32 KiB LRU L1D misses on all 4096 loads,
# a 128 KiB one on the first sweep's 1024 only; each configuration's
# misses equal those of the sim's own cache tool (a simulator written
# apart from the bank); the profile holds per-instruction loads and
# misses that sum to the meta's, and its cachegrind export is read by
# cg_annotate. A few loads outside the loop may add (MIPS: the GOT).
#   [SIM_ARCH=rv64|mips32] memtrace.sh RETICLE WORKDIR stride.c
set -u
reticle=$1; work=$2; src=$3
case ${SIM_ARCH:-rv64} in
rv64) cc="riscv64-linux-gnu-gcc" ;;
mips32) cc="mipsel-linux-gnu-gcc -mno-abicalls -fno-pic" ;;
esac
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 1
bin=$work/stride.${SIM_ARCH:-rv64}
$cc -O2 -g -static -nostdlib -o "$bin" "$src" || exit 1
fail=0
"$reticle" sim -c memtrace --cache l1d=32k:8:64 --cache l1d=128k:8:64 -o m.db -- "$bin" 2>err.txt
rc=$?
[ $rc -eq 0 ] || { echo "FAIL: exit $rc: $(cat err.txt)"; fail=1; }
meta() { sqlite3 m.db "SELECT value FROM meta WHERE key = '$1'"; }
field() { printf '%s' "$1" | sed -n "s/.*: loads \([0-9]*\) \([0-9]*\) stores.*/\\$2/p"; }
m0=$(meta memtrace_cache_0_l1d); m1=$(meta memtrace_cache_1_l1d)
loads=$(field "$m0" 1); miss0=$(field "$m0" 2); miss1=$(field "$m1" 2)
extra=$((${loads:-0} - 4096))
if [ -z "$loads" ] || [ $extra -lt 0 ] || [ $extra -gt 8 ] || [ "$miss0" -lt 4096 ] ||
   [ "$miss0" -gt $((4096 + extra)) ] || [ "$miss1" -lt 1024 ] || [ "$miss1" -gt $((1024 + extra)) ]; then
	echo "FAIL: loads $loads, misses $miss0 (32 KiB) and $miss1 (128 KiB): $m0 / $m1"; fail=1
fi
# the sim's own cache tool, on the same two caches
for c in "32768:8:64 $miss0" "131072:8:64 $miss1"; do
	set -- $c
	own=$("$reticle" sim -c "cache:$1" -- "$bin" 2>&1 | sed -n 's/.*), \([0-9]*\) misses.*/\1/p')
	[ "$own" = "$2" ] || { echo "FAIL: cache:$1 tool misses $own, memtrace $2"; fail=1; }
done
# per instruction: loads and misses sum to the meta's; the loop's load has 4096
sum() { sqlite3 m.db "SELECT CAST(total(value) AS INTEGER) FROM metrics WHERE name = '$1'"; }
[ "$(sum mem_loads)" = "$loads" ] || { echo "FAIL: mem_loads sum $(sum mem_loads), meta $loads"; fail=1; }
[ "$(sum mem_misses_read)" = "$miss0" ] || { echo "FAIL: mem_misses_read sum $(sum mem_misses_read), meta $miss0"; fail=1; }
top=$(sqlite3 m.db "SELECT CAST(max(value) AS INTEGER) FROM metrics WHERE name = 'mem_loads'")
[ "$top" = 4096 ] || { echo "FAIL: the loop's load counted $top times"; fail=1; }
# the cachegrind export, as cg_annotate reads it
"$reticle" report --format cachegrind -o m.cg m.db || { echo "FAIL: cachegrind export"; fail=1; }
if command -v cg_annotate >/dev/null; then
	tot=$(cg_annotate m.cg 2>&1 | sed -n 's/^ *\([0-9,]*\) ([^)]*) *\([0-9,]*\) .*PROGRAM TOTALS.*/\1 \2/p' | tr -d ,)
	[ "$tot" = "$loads $miss0" ] || { echo "FAIL: cg_annotate's totals '$tot', wanted '$loads $miss0'"; fail=1; }
fi
# bad input: a cache given without the tool, a bad cache
"$reticle" sim --cache l1d=32k:8:64 -- "$bin" >/dev/null 2>e2.txt; rc=$?
[ $rc -eq 2 ] && grep -q "memtrace" e2.txt || { echo "FAIL: --cache without memtrace: $rc $(cat e2.txt)"; fail=1; }
"$reticle" sim -c memtrace --cache l1d=32k:8:48 -- "$bin" >/dev/null 2>e3.txt; rc=$?
[ $rc -eq 2 ] && grep -q "48" e3.txt || { echo "FAIL: a bad --cache: $rc $(cat e3.txt)"; fail=1; }
[ $fail -eq 0 ] && echo "ok: $loads loads; misses $miss0 (32 KiB) and $miss1 (128 KiB), as the cache tool's"
exit $fail
