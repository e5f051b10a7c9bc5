#!/bin/sh
# Two profiles hold the same rows, ids included, and read the same: their
# SQL dumps and every report format are equal. For a change to the store:
# the same rows written by the old and the new build must pass.
# usage: same_profile.sh RETICLE A.db B.db
set -u
reticle=$1 a=$2 b=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
for side in a b; do
	eval db=\$$side
	sqlite3 "$db" .dump >"$tmp/$side.dump" || fail=1
	"$reticle" report --format json --all "$db" >"$tmp/$side.json" || fail=1
	"$reticle" report --format text --all "$db" >"$tmp/$side.text" || fail=1
	"$reticle" report --format callgrind -o "$tmp/$side.callgrind" "$db" || fail=1
done
for kind in dump json text callgrind; do
	if ! cmp -s "$tmp/a.$kind" "$tmp/b.$kind"; then
		echo "FAIL: $a and $b differ in $kind:" >&2
		diff "$tmp/a.$kind" "$tmp/b.$kind" | head -20 >&2
		fail=1
	fi
done
# an empty dump or report would compare equal too
[ "$(grep -c '^INSERT INTO functions' "$tmp/a.dump")" -gt 0 ] || { echo "FAIL: no functions in $a" >&2; fail=1; }
exit $fail
