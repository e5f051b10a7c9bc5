#!/usr/bin/env bash
# What names from separate debug files cost a run: python3.11 under
# `reticle run` (warm) with libc6-dbg's files visible, and with an empty
# folder mounted over /usr/lib/debug (a private mount namespace: needs
# root), alternating (bench/ab.sh); natively for scale. With them visible,
# libc and ld.so are named from their debug files' .symtab; hidden, the
# search costs a few failed access() calls.
# usage: bench/debug-names.sh [ROUNDS] [RETICLE]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
rounds=${1:-11}
R=$(realpath "${2:-$here/../build/src/reticle}")
[ "$(id -u)" -eq 0 ] || { echo "debug-names.sh: needs root (unshare -m, mount --bind)" >&2; exit 1; }
ls /usr/lib/debug/.build-id >/dev/null 2>&1 || { echo "debug-names.sh: no debug files (apt-get install libc6-dbg)" >&2; exit 1; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/empty"
export RETICLE_CACHE_DIR="$tmp/cache"
for prog in "/usr/bin/python3.11 -c pass" \
	    "/usr/bin/python3.11 -c 'import json; json.dumps(list(range(200000)))'"; do
	echo "== $prog"
	echo "exec $R run -o \"\$1\" -- $prog" >"$tmp/run.sh"
	# warm (the warm-start lists do not depend on names)
	bash "$tmp/run.sh" "$tmp/p.db" >/dev/null 2>&1
	# both runs in a namespace of their own, the mount their only difference
	bash "$here/ab.sh" "$rounds" \
		native "$prog" \
		"debug files" "unshare -m bash $tmp/run.sh $tmp/a.db" \
		"hidden" "unshare -m sh -c 'mount --bind $tmp/empty /usr/lib/debug && bash $tmp/run.sh $tmp/b.db'"
	n=$("$R" report --all "$tmp/a.db" | grep -c -E ' (_int_malloc|_dl_relocate_object) ' || true)
	echo "(named from debug files in the run with them: $n of _int_malloc, _dl_relocate_object)"
done
