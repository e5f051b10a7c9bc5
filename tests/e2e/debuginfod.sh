#!/bin/sh
# Debug files from debuginfod (issue 13): a stripped binary whose debug
# file only a debuginfod server has (elfutils' own, serving a folder on
# this machine) gets its names from it when $DEBUGINFOD_URLS names the
# server, in 'reticle functions' and in a run's report; without the
# variable, or with a server that does not answer, the names fall back and
# nothing waits for a network. Skipped (77) without the debuginfod server.
# usage: debuginfod.sh RETICLE FIXTURE WORKDIR
R=$1 B=$2 W=$3
command -v debuginfod >/dev/null || { echo "SKIP: no debuginfod server (apt-get install debuginfod)"; exit 77; }
rm -rf "$W" && mkdir -p "$W/serve" || exit 1
fail=0
objcopy --only-keep-debug "$B" "$W/serve/prog.debug" || exit 1
strip -o "$W/prog" "$B" || exit 1
id=$(readelf -n "$B" | awk '/Build ID/ {print $3}')
names='^(twice|interp|classify)$'
want=$(nm "$B" | awk '$2 == "T" || $2 == "t" {print $3}' | grep -c -E "$names")
[ "$want" -gt 0 ] || { echo "FAIL: the fixture has none of the names"; exit 1; }
export RETICLE_DEBUG_DIR="$W/none" DEBUGINFOD_CACHE_PATH="$W/cache" DEBUGINFOD_TIMEOUT=10

# a free port, then the server on it, indexing the folder
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
debuginfod -F -p "$port" -d "$W/index.sqlite" -t 1 "$W/serve" >"$W/server.log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null' EXIT
url=http://127.0.0.1:$port
for i in $(seq 100); do
	curl -sf "$url/buildid/$id/debuginfo" -o /dev/null 2>/dev/null && break
	[ "$i" -eq 100 ] && { echo "FAIL: the server never served the debug file: $(tail -3 "$W/server.log")"; exit 1; }
	sleep 0.2
done

got=$(DEBUGINFOD_URLS=$url "$R" functions "$W/prog" 2>"$W/err" | sed 's/  at [^ ]*:[0-9]*$//' |
      awk '{print $NF}' | grep -c -E "$names")
[ "$got" = "$want" ] || { echo "FAIL: $got of $want names from debuginfod: $(cat "$W/err")"; fail=1; }
echo "functions with DEBUGINFOD_URLS: $got of $want names"

# a run: the report names the program's functions from the same file
DEBUGINFOD_URLS=$url "$R" run -c fcount -o "$W/p.db" -- "$W/prog" >"$W/run.out" 2>"$W/run.err"; rc=$?
"$W/prog" >"$W/native.out"; nrc=$?
[ $rc -eq $nrc ] && cmp -s "$W/run.out" "$W/native.out" || { echo "FAIL: run exit $rc (native $nrc)"; fail=1; }
n=$("$R" report --all "$W/p.db" | grep -c -E ' (twice|interp|classify) ')
[ "$n" = "$want" ] || { echo "FAIL: the report names $n of $want"; fail=1; }

# without the variable: no names, and no server asked
got=$(env -u DEBUGINFOD_URLS "$R" functions "$W/prog" | awk '{print $NF}' | grep -c -E "$names")
[ "$got" = 0 ] || { echo "FAIL: names without DEBUGINFOD_URLS"; fail=1; }
# a server that does not answer: the run goes on with the names it has
kill $server; wait $server 2>/dev/null
rm -rf "$W/cache"
s=$(date +%s)
out=$(DEBUGINFOD_URLS=$url "$R" functions "$W/prog" 2>"$W/err"); rc=$?
e=$(date +%s)
[ $rc -eq 0 ] || { echo "FAIL: functions with the server gone: exit $rc: $(cat "$W/err")"; fail=1; }
[ $((e - s)) -le 5 ] || { echo "FAIL: $((e - s)) s with the server gone"; fail=1; }
echo "$out" | awk '{print $NF}' | grep -q -E "$names" && { echo "FAIL: names with the server gone"; fail=1; }
[ $fail -eq 0 ] && echo "ok"
exit $fail
