#!/usr/bin/env bash
# Attach and detach latency of `reticle attach -c fcount` on a running
# python3.11 -m http.server (10,310 functions in python3.11, 37,000 with its
# libraries), and the cost of being attached on the requests it serves.
# - attach: from starting reticle to its "instrumenting" line (every thread
#   stopped, modules armed; they run on right after);
# - detach: `reticle detach PID` until it returns (the profile written, the
#   patches undone, the code cache unmapped);
# - requests: 200 GETs natively, then attached, alternating, per round.
# Prints best and median of ROUNDS. The bars (issue "dynamic
# instrumentation"): attach under 100 ms, detach under 50 ms.
# usage: bench/attach.sh [--rounds N] [RETICLE]
set -euo pipefail
rounds=7
if [ "${1:-}" = --rounds ]; then rounds=$2; shift 2; fi
RETICLE=$(realpath "${1:-build/src/reticle}")
PY=/usr/bin/python3.11
tmp=$(mktemp -d)
port=$((20000 + RANDOM % 20000))
mkdir "$tmp/www" && echo hello >"$tmp/www/index.html"
(cd "$tmp/www" && exec $PY -m http.server --bind 127.0.0.1 $port >/dev/null 2>&1) &
srv=$!
trap 'kill $srv 2>/dev/null; rm -rf "$tmp"' EXIT
sleep 1
now() { date +%s.%N; }
gets() {   # seconds for N GETs
	$PY - "$port" "$1" <<'EOF'
import sys, time, urllib.request
port, n = sys.argv[1], int(sys.argv[2])
t = time.monotonic()
for _ in range(n):
    urllib.request.urlopen(f"http://127.0.0.1:{port}/index.html").read()
print(f"{time.monotonic() - t:.4f}")
EOF
}
stats() { sort -n | awk '{a[NR]=$1} END {printf "%.4f %.4f\n", a[1], a[int((NR+1)/2)]}'; }
declare -a ta=() td=() tn=() tr=()
gets 50 >/dev/null
for _ in $(seq "$rounds"); do
	tn+=("$(gets 200)")
	: >"$tmp/att.err"
	s=$(now)
	RETICLE_CACHE_DIR="$tmp/cache" "$RETICLE" attach -c fcount -o "$tmp/a.db" $srv 2>"$tmp/att.err" &
	att=$!
	until grep -q instrumenting "$tmp/att.err"; do
		kill -0 $att 2>/dev/null || { echo "attach failed: $(cat "$tmp/att.err")" >&2; exit 1; }
		sleep 0.001
	done
	e=$(now)
	ta+=("$(echo "$e - $s" | bc)")
	tr+=("$(gets 200)")
	s=$(now)
	"$RETICLE" detach $srv
	e=$(now)
	td+=("$(echo "$e - $s" | bc)")
	wait $att
	rm -f "$tmp/a.db"
done
read -r ab am < <(printf '%s\n' "${ta[@]}" | stats)
read -r db dm < <(printf '%s\n' "${td[@]}" | stats)
read -r nb nm < <(printf '%s\n' "${tn[@]}" | stats)
read -r rb rm_ < <(printf '%s\n' "${tr[@]}" | stats)
printf 'attach  %s / %s s (best / median of %d)\n' "$ab" "$am" "$rounds"
printf 'detach  %s / %s s\n' "$db" "$dm"
printf '200 GETs native %s / %s s, attached %s / %s s (%.2fx of medians; each round a new session, warm from the earlier ones)\n' \
	"$nb" "$nm" "$rb" "$rm_" "$(echo "$rm_ / $nm" | bc -l)"
