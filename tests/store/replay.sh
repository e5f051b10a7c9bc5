#!/bin/sh
# A real profile (reticle run -c fcount,bbcount of PROGRAM) written again
# through the store API in the engine's order (bench_store_replay): the
# copy must hold the same rows and read the same (same_profile.sh).
# usage: replay.sh RETICLE BENCH_STORE_REPLAY PROGRAM WORKDIR
set -u
reticle=$1 replay=$2 program=$3 work=$4
mkdir -p "$work"
rm -f "$work/run.db" "$work/replayed.db"
"$reticle" run -c fcount,bbcount -o "$work/run.db" -- "$program" >/dev/null 2>"$work/run.err" ||
	{ echo "FAIL: reticle run:" >&2; cat "$work/run.err" >&2; exit 1; }
"$replay" "$work/run.db" "$work/replayed.db" >/dev/null || { echo "FAIL: replay" >&2; exit 1; }
exec sh "$(dirname "$0")/same_profile.sh" "$reticle" "$work/run.db" "$work/replayed.db"
