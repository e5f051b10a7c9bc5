#!/bin/sh
# cover against gcov on a real program: bzip2 from its Debian source package
# (apt-get source, kept in WORKDIR between runs), compressing a file read
# from stdin (tests/run/cover_gcov.py). Skipped (77) without a deb-src entry.
#   cover_bzip2.sh PYTHON RETICLE WORKDIR
set -u
here=$(cd "$(dirname "$0")" && pwd)
python=$1; reticle=$2; work=$3
mkdir -p "$work"
src=$(ls -d "$work"/bzip2-*/ 2>/dev/null | head -1)
if [ -z "$src" ]; then
	(cd "$work" && apt-get source -q bzip2 >/dev/null 2>&1) || { echo "skip: apt-get source bzip2 failed"; exit 77; }
	src=$(ls -d "$work"/bzip2-*/ | head -1)
fi
[ -f "$src/bzip2.c" ] || exit 77
head -c 300000 "$reticle" > "$work/input"
cd "$src" && exec "$python" "$here/cover_gcov.py" "$reticle" "$work/run" \
	blocksort.c huffman.c crctable.c randtable.c compress.c decompress.c bzlib.c bzip2.c \
	--stdin "$work/input" --plain-only -- -c
