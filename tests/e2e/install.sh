#!/bin/sh
# An installed reticle (cmake --install into a fresh prefix): a tool and a
# collector plug-in built with pkg-config alone, against the installed
# headers and libraries (shared, then static), run on a real profile; the
# shared library and the CLI export the public API and nothing else (nm
# -D: every defined symbol is an rtl_ function declared with RTL_API in
# include/reticle/, save the C library's variables an executable holds
# copies of).
# usage: install.sh BUILD_DIR SOURCE_DIR WORKDIR
B=$1 S=$2 W=$3
rm -rf "$W" && mkdir -p "$W" || exit 1
fail=0
cmake --install "$B" --prefix "$W/prefix" >"$W/install.log" 2>&1 || { echo "FAIL: cmake --install: $(tail -3 "$W/install.log")"; exit 1; }
P=$W/prefix
export PKG_CONFIG_PATH="$P/lib/pkgconfig:$P/lib/x86_64-linux-gnu/pkgconfig"
pkg-config --exists reticle || { echo "FAIL: pkg-config does not find reticle"; exit 1; }
for f in reticle/profile.h reticle/collector.h reticle/api.h; do
	[ -f "$P/include/$f" ] || { echo "FAIL: $f not installed"; fail=1; }
done

# a profile to read: the installed CLI runs a program
export RETICLE_CACHE_DIR="$W/cache"
"$P/bin/reticle" run -c fcount,bbcount -o "$W/p.db" -- /bin/true || { echo "FAIL: installed reticle run"; fail=1; }

# the tool, shared (run with the prefix's library) and static
cc "$S/examples/tools/top_functions.c" $(pkg-config --cflags --libs reticle) -o "$W/top_shared" ||
	{ echo "FAIL: the tool does not build against the shared library"; fail=1; }
out=$(LD_LIBRARY_PATH="$(dirname "$(find "$P" -name 'libreticle.so' | head -1)")" "$W/top_shared" "$W/p.db" 3) ||
	{ echo "FAIL: the tool (shared) failed"; fail=1; }
echo "$out" | grep -q "%" || { echo "FAIL: the tool printed no function: $out"; fail=1; }
ldd "$W/top_shared" | grep -q "libreticle.so" || { echo "FAIL: the tool is not linked with libreticle.so"; fail=1; }
cc "$S/examples/tools/top_functions.c" $(pkg-config --cflags reticle) -o "$W/top_static" \
	"$(find "$P" -name 'libreticle.a' | head -1)" $(pkg-config --static --libs reticle | sed 's/-lreticle//') ||
	{ echo "FAIL: the tool does not build against the static library"; fail=1; }
"$W/top_static" "$W/p.db" 3 >/dev/null || { echo "FAIL: the tool (static) failed"; fail=1; }
ldd "$W/top_static" | grep -q "libreticle.so" && { echo "FAIL: the static tool needs libreticle.so"; fail=1; }

# a collector plug-in against the installed headers, loaded by the installed CLI
cc -shared -fPIC $(pkg-config --cflags reticle) "$S/examples/collectors/branch_bias.c" -o "$W/bb.so" ||
	{ echo "FAIL: the plug-in does not build"; fail=1; }
"$P/bin/reticle" run --collector "$W/bb.so" -o "$W/b.db" -- /bin/true >/dev/null 2>"$W/bb.err" ||
	{ echo "FAIL: the plug-in does not run: $(cat "$W/bb.err")"; fail=1; }

# exports: the public API only
api=$(grep -ho 'RTL_API[^(]*\brtl_[a-z0-9_]*(' "$S"/include/reticle/*.h | grep -o 'rtl_[a-z0-9_]*(' | tr -d '(' | sort -u)
for bin in "$(find "$P" -name 'libreticle.so' | head -1)" "$P/bin/reticle"; do
	nm -D --defined-only "$bin" | awk '{print $3}' | grep -v '@' | sort -u >"$W/exports"
	extra=$(echo "$api" | comm -13 - "$W/exports")
	[ -z "$extra" ] || { echo "FAIL: $bin exports more than the API: $(echo $extra | head -c 300)"; fail=1; }
	missing=$(echo "$api" | comm -23 - "$W/exports")
	[ -z "$missing" ] || { echo "FAIL: $bin lacks $(echo $missing | head -c 300)"; fail=1; }
	echo "$(basename "$bin"): $(wc -l <"$W/exports") symbols, the API's $(echo "$api" | wc -l)"
done
[ $fail -eq 0 ] && echo ok
exit $fail
