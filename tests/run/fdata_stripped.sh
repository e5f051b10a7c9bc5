#!/bin/sh
# report --format fdata of a stripped program: one line saying it has no
# function symbols, exit 1 (it once said the profile had no counts, which
# it has); the same program with its symbols writes fdata records.
# usage: fdata_stripped.sh RETICLE WORKDIR PROGRAM
R=$1 W=$2 P=$3
rm -rf "$W" && mkdir -p "$W" || exit 1
export RETICLE_CACHE_DIR="$W/cache"
cp "$P" "$W/prog" && strip -o "$W/prog.stripped" "$P" || exit 1
fail=0
for v in prog prog.stripped; do
	# (the program's own exit status passes through: not checked here)
	"$R" run -c edges,bbcount,callgraph -o "$W/$v.db" -- "$W/$v" >/dev/null 2>"$W/$v.run"
	[ -s "$W/$v.db" ] || { cat "$W/$v.run"; fail=1; }
done
"$R" report --format fdata -o "$W/x.fdata" "$W/prog.db" 2>/dev/null && [ -s "$W/x.fdata" ] || { echo "FAIL: no fdata with symbols"; fail=1; }
"$R" report --format fdata -o "$W/y.fdata" "$W/prog.stripped.db" 2>"$W/y.err"
rc=$?
if [ "$rc" != 1 ] || ! grep -q "no function symbols (stripped)" "$W/y.err" || [ "$(wc -l <"$W/y.err")" != 1 ]; then
	echo "FAIL: stripped: exit $rc, $(cat "$W/y.err")"
	fail=1
fi
exit $fail
