#!/bin/sh
# Two mechanisms must agree on a glibc program: the bbcount tool (block
# entry counters) and the seed's hook-based block counter (tools/bbhook.c,
# calls after the last instruction of every static block).
#   bbhook.sh RETICLE BBHOOK.so PROGRAM
set -u
out=$("$1" sim -c bbcount --tool "$2" -- "$3" 2>&1 >/dev/null)
a=$(printf '%s\n' "$out" | sed -n 's/^bbcount: \([0-9]*\) blocks traversed/\1/p')
b=$(printf '%s\n' "$out" | sed -n 's/^bbhook: \([0-9]*\) blocks traversed/\1/p')
[ -n "$a" ] && [ "$a" = "$b" ] && [ "$a" -gt 1000 ] || { echo "FAIL: bbcount '$a', hooks '$b'"; exit 1; }
echo "ok: $a blocks both ways"
