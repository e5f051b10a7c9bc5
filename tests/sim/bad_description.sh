#!/bin/sh
# Malformed descriptions: reticle-nmlgen must exit non-zero with the
# message written on the file's first line ("// expect: ...").
set -u
gen=$1; dir=$2; fail=0
for f in "$dir"/*.nml; do
	want=$(sed -n '1s,^// expect: ,,p' "$f")
	got=$(cd "$dir" && "$gen" --check "$(basename "$f")" 2>&1)
	rc=$?
	if [ $rc -eq 0 ] || ! printf '%s' "$got" | grep -qF "$want"; then
		echo "FAIL $f: rc=$rc, wanted '$want', got: $got"; fail=1
	else
		echo "ok $f: $got"
	fi
done
exit $fail
