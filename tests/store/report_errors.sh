#!/bin/sh
# Bad input for 'reticle report': one clear line on stderr naming the
# problem, a non-zero exit, nothing on stdout; and --help tells the truth.
# usage: report_errors.sh RETICLE MKPROFILE WORKDIR
set -u
reticle=$1 mkprofile=$2 work=$3
mkdir -p "$work"
fail=0

# expect STATUS PATTERN ARGS...: exit status, a stderr pattern, one line.
expect() {
	want=$1 pattern=$2
	shift 2
	"$reticle" report "$@" >"$work/out" 2>"$work/err"
	rc=$?
	lines=$(wc -l <"$work/err")
	if [ "$rc" -ne "$want" ] || ! grep -q -- "$pattern" "$work/err" || [ "$lines" -ne 1 ] ||
	   [ -s "$work/out" ]; then
		echo "FAIL: report $*: rc $rc (want $want), stderr:" >&2
		cat "$work/err" >&2
		fail=1
	fi
}

printf 'meta command true\nmodule m /bin/true 0\nfunction f m 0x10 4 calls=1\n' >"$work/ok.spec"
rm -f "$work/ok.db"
"$mkprofile" "$work/ok.spec" "$work/ok.db" || fail=1
printf 'not a profile\n' >"$work/text.db"
: >"$work/empty.db"
sqlite3 "$work/other.db" 'CREATE TABLE IF NOT EXISTS t(x);' || fail=1
head -c 1000 "$work/ok.db" >"$work/truncated.db"

expect 1 "cannot read profile '$work/missing.db': No such file or directory" "$work/missing.db"
expect 1 "'$work/text.db': not a reticle profile" "$work/text.db"
expect 1 "'$work/empty.db': not a reticle profile" "$work/empty.db"
expect 1 "'$work/other.db': not a reticle profile" "$work/other.db"
expect 1 "'$work/truncated.db': damaged profile (truncated or corrupt)" "$work/truncated.db"
expect 1 "'$work': Is a directory" "$work"
expect 2 "unknown format 'xml'" --format xml "$work/ok.db"
expect 2 "unknown format ''" --format= "$work/ok.db"
expect 2 "top expects a non-negative integer, not 'ten'" --top ten "$work/ok.db"
expect 2 "top expects a non-negative integer, not '-3'" --top -3 "$work/ok.db"
expect 2 "top expects a non-negative integer, not '5x'" --top 5x "$work/ok.db"
expect 2 "top expects a non-negative integer, not '99999999999999999999999'" \
	--top 99999999999999999999999 "$work/ok.db"
expect 2 "option '--top' needs a value" "$work/ok.db" --top
expect 2 "unknown option '--bogus'" --bogus "$work/ok.db"
expect 2 "no PROFILE given" --top 3
expect 2 "more than one PROFILE" "$work/ok.db" "$work/ok.db"
expect 1 "cannot write '$work/nodir/x.txt'" -o "$work/nodir/x.txt" "$work/ok.db"

# A report that cannot be written completely (file size limit) fails with
# one line and leaves OUT as it was: absent, or with its old contents.
rm -f "$work/big.txt"
# (stderr through a pipe: the size limit applies to files only)
msg=$( (trap '' XFSZ; ulimit -f 0; exec "$reticle" report -o "$work/big.txt" "$work/ok.db" 2>&1) )
rc=$?
echo "$msg" >"$work/err"
if [ $rc -ne 1 ] || [ "$msg" != "reticle: report: cannot write the report to $work/big.txt: File too large" ] ||
   [ -e "$work/big.txt" ] || ls "$work" | grep -q 'big.txt.tmp'; then
	echo "FAIL: report to a full file: rc $rc" >&2; cat "$work/err" >&2; ls "$work" >&2; fail=1
fi
echo "old contents" >"$work/big.txt"
(trap '' XFSZ; ulimit -f 0; "$reticle" report -o "$work/big.txt" "$work/ok.db") 2>/dev/null
[ "$(cat "$work/big.txt")" = "old contents" ] || { echo "FAIL: a failed report replaced OUT" >&2; fail=1; }

# --help: exit 0, on stdout, and it names every option the parser accepts.
"$reticle" report --help >"$work/help" 2>&1 || { echo "FAIL: --help exits non-zero" >&2; fail=1; }
for word in --format text json callgrind --top --all -o PROFILE estimate; do
	grep -q -- "$word" "$work/help" || { echo "FAIL: --help lacks $word" >&2; fail=1; }
done
# The options it documents work.
for args in "-f json" "--format=callgrind" "-n 1" "--top=0" "--all" "--output=$work/o.txt"; do
	# shellcheck disable=SC2086
	"$reticle" report $args "$work/ok.db" >/dev/null 2>"$work/err" ||
		{ echo "FAIL: report $args" >&2; cat "$work/err" >&2; fail=1; }
done
grep -q "^command  *true$" "$work/o.txt" || { echo "FAIL: --output wrote no report" >&2; fail=1; }
[ $fail -eq 0 ] && echo ok
exit $fail
