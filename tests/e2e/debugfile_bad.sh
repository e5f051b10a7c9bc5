#!/bin/sh
# Separate debug files, good and bad (issue 13): a stripped binary whose
# debug file sits under $RETICLE_DEBUG_DIR/.build-id/ gets its names from
# it; a debug file cut short, one with bytes overwritten, one of another
# build and an empty file are not used or used as far as they read, and
# nothing crashes: 'reticle functions' exits 0 with the names the stripped
# binary has, and 'reticle run' passes the program's output and status on.
# usage: debugfile_bad.sh RETICLE FIXTURE OTHER_FIXTURE WORKDIR
R=$1 B=$2 OTHER=$3 W=$4
rm -rf "$W" && mkdir -p "$W" || exit 1
fail=0
id=$(readelf -n "$B" | awk '/Build ID/ {print $3}')
[ -n "$id" ] || { echo "FAIL: the fixture has no build-id"; exit 1; }
dir=$W/dbg/.build-id/$(echo "$id" | cut -c1-2)
mkdir -p "$dir"
dbg=$dir/$(echo "$id" | cut -c3-).debug
objcopy --only-keep-debug "$B" "$W/full.debug" || exit 1
strip -o "$W/prog" "$B" || exit 1
export RETICLE_DEBUG_DIR="$W/dbg"

# the names nm gives the unstripped binary
want=$(nm "$B" | awk '$2 == "T" || $2 == "t" {print $3}' | grep -c -E '^(twice|interp|classify)$')

check() {   # LABEL EXPECT_NAMES(1 = the debug file's, 0 = fallback)
	out=$("$R" functions "$W/prog" 2>"$W/err"); rc=$?
	if [ $rc -ne 0 ]; then echo "FAIL [$1]: functions exit $rc: $(cat "$W/err")"; fail=1; return; fi
	got=$(echo "$out" | sed 's/  at [^ ]*:[0-9]*$//' | awk '{print $NF}' | grep -c -E '^(twice|interp|classify)$')
	if [ "$2" = 1 ] && [ "$got" != "$want" ]; then
		echo "FAIL [$1]: $got of $want names from the debug file"; fail=1
	fi
	if [ "$2" = 1 ] && ! echo "$out" | grep -q "debugfile"; then
		echo "FAIL [$1]: no function says 'debugfile'"; fail=1
	fi
	if [ "$2" = 0 ] && echo "$out" | grep -q "debugfile"; then
		echo "FAIL [$1]: a bad debug file was used"; fail=1
	fi
	"$R" run -o "$W/p.db" -- "$W/prog" >"$W/run.out" 2>"$W/run.err"; rrc=$?
	"$W/prog" >"$W/native.out" 2>/dev/null; nrc=$?
	if [ $rrc -ne $nrc ] || ! cmp -s "$W/run.out" "$W/native.out"; then
		echo "FAIL [$1]: run exit $rrc (native $nrc): $(tail -2 "$W/run.err")"; fail=1
	fi
	"$R" report "$W/p.db" >/dev/null 2>"$W/err" || { echo "FAIL [$1]: report: $(cat "$W/err")"; fail=1; }
	echo "ok [$1]: functions and run"
}

cp "$W/full.debug" "$dbg"; check good 1
# the same directory given by --debug-dir instead of the environment
n=$(env -u RETICLE_DEBUG_DIR "$R" functions --debug-dir "$W/dbg" "$W/prog" | grep -c debugfile)
[ "$n" -gt 0 ] || { echo "FAIL: --debug-dir: no name from the debug file"; fail=1; }
n=$(env -u RETICLE_DEBUG_DIR "$R" functions "$W/prog" | grep -c debugfile)
[ "$n" -eq 0 ] || { echo "FAIL: a debug file found without --debug-dir"; fail=1; }
size=$(stat -c %s "$W/full.debug")
for cut in 64 1000 $((size / 2)) $((size - 100)); do
	head -c $cut "$W/full.debug" >"$dbg"; check "cut at $cut" x
done
for at in 64 200 $((size / 3)) $((size / 2)) $((size - 300)); do
	cp "$W/full.debug" "$dbg"
	head -c 256 /dev/urandom | dd of="$dbg" bs=1 seek=$at conv=notrunc 2>/dev/null
	check "256 random bytes at $at" x
done
objcopy --only-keep-debug "$OTHER" "$dbg"; check "another build" 0
: >"$dbg"; check empty 0
exit $fail
