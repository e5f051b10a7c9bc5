#!/bin/sh
# soft_returns.sh RETICLE WORKDIR PROGRAM: PROGRAM (soft_loop.c) prints the
# same as natively under fcount, and its 200,000 returns through a return
# point where no jump fits do not trap each (a hot one becomes a plain call).
set -e
reticle=$1 work=$2 prog=$3
rm -rf "$work"; mkdir -p "$work"
export RETICLE_CACHE_DIR="$work/cache"
"$prog" > "$work/native.out"
"$reticle" run --stats -c fcount -o "$work/p.db" -- "$prog" > "$work/reticle.out" 2> "$work/err"
cmp "$work/native.out" "$work/reticle.out" || { echo "FAIL: output differs"; cat "$work/err"; exit 1; }
traps=$(sed -n 's/.* \([0-9]*\) traps,.*/\1/p' "$work/err")
echo "traps: $traps"
[ -n "$traps" ] && [ "$traps" -lt 20000 ] || { echo "FAIL: $traps traps (a trap per return)"; exit 1; }
echo ok
