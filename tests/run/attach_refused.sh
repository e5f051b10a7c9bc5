#!/bin/sh
# A process the kernel will not let reticle attach: the message tells the
# true reason, not "another user's process needs root" when reticle is
# root. A kernel thread (nothing to measure); process 1 when this system's
# policy protects it from root too (a sandbox's init): attach (sampled and
# instrumented), probe -p and top; as another user, a process of root's.
# usage: attach_refused.sh RETICLE WORKDIR
R=$1; W=$2; fails=0; checked=0; AS=
rm -rf "$W"; mkdir -p "$W"
export RETICLE_CACHE_DIR="$W/cache" XDG_RUNTIME_DIR="$W"
cd "$W" || exit 1
# refused PATTERN ARGS...: reticle ARGS (run by $AS) fails at once with
# status 1 and one line matching PATTERN, which does not say "needs root"
# when reticle is root
refused() {
	pat=$1; shift
	timeout 30 $AS "$R" "$@" >"$W/out" 2>"$W/err" </dev/null; got=$?
	if [ $got != 1 ] || ! grep -q -- "$pat" "$W/err" || [ "$(wc -l <"$W/err")" != 1 ] ||
	   { [ -z "$AS" ] && [ "$(id -u)" = 0 ] && grep -q "needs root" "$W/err"; }; then
		echo "FAIL: reticle $*: status $got (want 1, /$pat/), stderr:"; cat "$W/err"; fails=$((fails+1))
	else
		echo "ok: reticle $*: $(cat "$W/err")"
	fi
	checked=$((checked+1))
}
# a kernel thread (PF_KTHREAD; none is visible in a container's pid namespace)
kthread=
for d in /proc/[0-9]*; do
	f=$(sed 's/.*) //' "$d/stat" 2>/dev/null | cut -d' ' -f7)
	[ -n "$f" ] && [ $((f & 0x200000)) -ne 0 ] && { kthread=${d#/proc/}; break; }
done
if [ -n "$kthread" ]; then
	for c in sample fcount; do
		refused "process $kthread (.*): not allowed to .* it: it is a kernel thread" \
			attach -c $c -d 1 -o "$W/p.db" "$kthread"
	done
else
	echo "skip: no kernel thread visible"
fi
# process 1 as root: attached, or refused with the reason
if [ "$(id -u)" = 0 ]; then
	if timeout 30 "$R" attach -d 0.2 -o "$W/p.db" 1 >/dev/null 2>&1; then
		echo "skip: process 1 can be attached here"
	else
		why="the kernel refuses it although reticle runs as root with CAP_SYS_PTRACE: a security policy protects"
		refused "attach: process 1 (.*): not allowed to read it: $why" attach -d 1 -o "$W/p.db" 1
		refused "attach: process 1 (.*): not allowed to trace it: $why" attach -c fcount -d 1 -o "$W/p.db" 1
		refused "probe: process 1 (.*): not allowed to trace it: $why" probe -p 1 'entry:malloc { @n = count(); }'
		refused "top: process 1 (.*): not allowed to trace it: $why" top 1
	fi
fi
# another user's process: as nobody, a sleep of root's
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
	sleep 30 & s=$!
	chmod 777 "$W"
	AS="setpriv --reuid=65534 --regid=65534 --clear-groups"
	for c in sample fcount; do
		refused "process $s (sleep): not allowed to .* it: it runs as another user" \
			attach -c $c -d 1 -o "$W/n.db" "$s"
	done
	kill $s
fi
echo "$checked checked, $fails failed"
exit $fails
