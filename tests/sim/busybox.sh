#!/bin/sh
# Debian's busybox-static:mipsel under reticle sim and under qemu-mipsel:
# several applets, same stdout and exit status. The package is fetched with
# apt-get download (needs 'dpkg --add-architecture mipsel' and apt-get
# update) into the work directory; without it the test is skipped (77).
#   busybox.sh RETICLE WORKDIR
set -u
reticle=$1; work=$2
mkdir -p "$work"
bb=$work/bbx/bin/busybox
if [ ! -x "$bb" ]; then
	(cd "$work" && apt-get download busybox-static:mipsel >/dev/null 2>&1) || { echo "skip: busybox-static:mipsel unavailable"; exit 77; }
	dpkg-deb -x "$work"/busybox-static_*_mipsel.deb "$work/bbx" || exit 77
fi
printf 'pear\napple\nfig\nbanana\n10\n9\n' > "$work/in.txt"
fail=0
run() {
	env -i "$reticle" sim -- "$bb" "$@" > "$work/sim.out" 2>&1; s=$?
	env -i qemu-mipsel "$bb" "$@" > "$work/qemu.out" 2>&1; q=$?
	if [ $s -ne $q ] || ! cmp -s "$work/sim.out" "$work/qemu.out"; then
		echo "FAIL busybox $*: status $s vs $q"; diff "$work/sim.out" "$work/qemu.out" | head -5; fail=1
	else
		echo "ok busybox $*"
	fi
}
run sort "$work/in.txt"
run sort -n -r "$work/in.txt"
run md5sum "$work/in.txt"
run sh -c 'x=0; for i in 1 2 3 4; do x=$((x + i * i)); done; echo sum $x; exit 3'
gzip_out=$work/in.txt.gz
run gzip -c "$work/in.txt"
run wc -l "$work/in.txt"
run sha256sum "$work/in.txt"
mkdir -p "$work/d/e" && echo x > "$work/d/f1" && echo yy > "$work/d/e/f2"
run ls "$work/d"
run find "$work/d"
run cat "$work/in.txt"
run awk '{ n += length($0) } END { print n, NR }' "$work/in.txt"
run sed -e 's/a/A/g' -e '2d' "$work/in.txt"
# files written with O_CREAT/O_APPEND (MIPS open flags differ from the host's)
run sh -c "rm -f $work/new.txt; echo hello > $work/new.txt; echo more >> $work/new.txt; cat $work/new.txt; rm $work/new.txt"
# pipelines: fork, pipe2, wait4, and execve of busybox itself (/proc/self/exe)
run sh -c "sort $work/in.txt | head -3 | tr a-z A-Z; echo \$(ls $work/d | wc -l) entries; exit 4"
exit $fail
