#!/bin/sh
# The bbv collector without -o: the vectors go beside the default profile
# (reticle.PID.db and reticle.PID.bb, PID the program's), and the run
# succeeds (it crashed on the missing profile name).
# usage: bbv_default_name.sh RETICLE WORKDIR
R=$1; W=$2
rm -rf "$W"; mkdir -p "$W" && cd "$W" || exit 1
"$R" run -c bbv --interval 10000 -- /bin/true 2>err.txt; rc=$?
db=$(ls reticle.*.db 2>/dev/null); bb=$(ls reticle.*.bb 2>/dev/null)
if [ $rc -ne 0 ] || [ -z "$db" ] || [ "${db%.db}.bb" != "$bb" ] || [ ! -s "$bb" ]; then
	echo "FAIL: exit $rc, profile '$db', vectors '$bb'"; cat err.txt
	echo "0 passed, 1 failed"; exit 1
fi
echo "ok: $db and $bb ($(wc -l <"$bb") intervals)"
echo "1 passed, 0 failed"
