#!/usr/bin/env bash
# Start-up cost: short-lived programs natively, under reticle (fcount) cold
# and warm, and under callgrind, in alternating rounds (each command once
# per round, in turn, so the host's slow moments fall on all alike).
# Prints best and median seconds and the ratios to native of the medians.
# The goals (issue "every real program"): gcc -O2 -c and python3 -c pass
# under 3x native warm and under 8x cold.
# Programs by absolute path: a python3.11 on PATH may be a pyenv shim (a
# shell script that runs 70 processes).
# usage: bench/startup.sh [--rounds N] [--no-peers] [RETICLE]
set -euo pipefail
rounds=7 peers=1
while [ $# -gt 0 ]; do
	case "$1" in
	--rounds) rounds=$2; shift 2 ;;
	--no-peers) peers=0; shift ;;
	*) break ;;
	esac
done
RETICLE=$(realpath "${1:-build/src/reticle}")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf 'static int sq(int x) { return x * x; }\nint main(void) { return sq(3) - 9; }\n' >"$tmp/x.c"
warm="$tmp/warm"
# workload name -> command
names=(gcc python3 "sh x100")
cmds=("/usr/bin/gcc -O2 -c $tmp/x.c -o $tmp/x.o"
      "/usr/bin/python3.11 -c pass"
      "sh -c 'for i in \$(seq 100); do /bin/true; done'")
now() { date +%s.%N; }
time_of() {   # seconds of one run of "$@" (bash -c), output discarded
	local s e
	s=$(now)
	bash -c "$*" >/dev/null 2>&1 </dev/null || true
	e=$(now)
	echo "$e - $s" | bc
}
stats() {   # best median of the numbers on stdin
	sort -n | awk '{a[NR]=$1} END {printf "%.3f %.3f\n", a[1], a[int((NR+1)/2)]}'
}
cd "$tmp"
for w in "${!names[@]}"; do
	cmd=${cmds[$w]}
	RETICLE_CACHE_DIR="$warm" bash -c "$RETICLE run -c fcount -o $tmp/p.db -- $cmd" >/dev/null 2>&1 </dev/null || true
	declare -a tn=() tc=() tw=() tg=()
	for _ in $(seq "$rounds"); do
		tn+=("$(time_of "$cmd")")
		tc+=("$(time_of "RETICLE_CACHE_DIR=$tmp/cold-\$RANDOM $RETICLE run -c fcount -o $tmp/p.db -- $cmd; rm -rf $tmp/cold-* $tmp/p*.db")")
		tw+=("$(time_of "RETICLE_CACHE_DIR=$warm $RETICLE run -c fcount -o $tmp/p.db -- $cmd; rm -f $tmp/p*.db")")
		if [ "$peers" = 1 ]; then
			tg+=("$(time_of "valgrind --tool=callgrind --trace-children=yes --callgrind-out-file=$tmp/cg.%p $cmd; rm -f $tmp/cg.*")")
		fi
	done
	read -r nb nm < <(printf '%s\n' "${tn[@]}" | stats)
	read -r cb cm < <(printf '%s\n' "${tc[@]}" | stats)
	read -r wb wm < <(printf '%s\n' "${tw[@]}" | stats)
	line=$(printf '%-8s native %s/%s s  cold %s/%s s (%.1fx)  warm %s/%s s (%.1fx)' "${names[$w]}" \
		"$nb" "$nm" "$cb" "$cm" "$(echo "$cm / $nm" | bc -l)" "$wb" "$wm" "$(echo "$wm / $nm" | bc -l)")
	if [ "$peers" = 1 ]; then
		read -r gb gm < <(printf '%s\n' "${tg[@]}" | stats)
		line+=$(printf '  callgrind %s/%s s (%.1fx)' "$gb" "$gm" "$(echo "$gm / $nm" | bc -l)")
	fi
	echo "$line"
done
echo "(best/median of $rounds alternating rounds; ratios of medians; fcount)"
