#!/bin/sh
# Cost of the binary analyzer: rtl_binary_open (all discovery) and the
# instrumentability check, best of 5, on Debian programs.
# usage: bench/binary-open.sh [BUILD_DIR]   (default build)
B=${1:-build}
cc -O2 -I include bench/binary_open.c "$B/src/libreticle.a" $(pkg-config --libs libelf libdw) -lZydis -o "$B/binary_open" || exit 1
"$B/binary_open" /usr/bin/bzip2 /usr/bin/sqlite3 /usr/bin/lua5.4 /usr/bin/python3.11 \
	/usr/lib/gcc/x86_64-linux-gnu/12/cc1 /lib/x86_64-linux-gnu/libc.so.6
