#!/bin/sh
# Debian's busybox-static:mipsel under reticle sim and under qemu-mipsel:
# several applets, same stdout and exit status. The package is fetched with
# apt-get download (needs 'dpkg --add-architecture mipsel' and apt-get
# update) into the work directory; without it the test is skipped (77).
#   busybox.sh RETICLE WORKDIR
set -u
reticle=$(realpath "$1"); work=$2
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
# more applets, as a user would run them (each against qemu-mipsel)
printf 'a\na\nb\nb\nb\nc\n' > "$work/dup.txt"
printf 'dos\r\nline\r\n' > "$work/dos.txt"
printf 'x 1\ny 2\nz 3\n' > "$work/cols.txt"
run uniq "$work/dup.txt"
run uniq -c "$work/dup.txt"
run sh -c "cp $work/dos.txt $work/dos2.txt; dos2unix $work/dos2.txt; od -c $work/dos2.txt; rm $work/dos2.txt"
run basename "$work/d/f1"
run dirname "$work/d/f1"
run expr 6 \* 7
run seq 3 2 11
run sh -c "tr a-y b-z < $work/in.txt"
run cut -d' ' -f2 "$work/cols.txt"
run head -n 2 "$work/in.txt"
run tail -n 2 "$work/in.txt"
run tac "$work/in.txt"
run rev "$work/in.txt"
run od -A x -t x1z "$work/in.txt"
run hexdump -C "$work/in.txt"
run base64 "$work/in.txt"
run cksum "$work/in.txt"
run sha1sum "$work/in.txt"
run sha512sum "$work/in.txt"
run fold -w 3 "$work/in.txt"
run nl "$work/in.txt"
run paste "$work/in.txt" "$work/dup.txt"
run comm -12 "$work/dup.txt" "$work/dup.txt"
run printf '%05d %s %x\n' 42 word 255
run date -u -d @1000000000 '+%Y-%m-%d %H:%M:%S'
run grep -n an "$work/in.txt"
run grep -c -v a "$work/in.txt"
run diff "$work/in.txt" "$work/dup.txt"
run cmp "$work/in.txt" "$work/in.txt"
run sh -c "xargs -n 2 echo < $work/in.txt"
run expand "$work/cols.txt"
run strings "$bb" -n 40
run sh -c "bzip2 -c $work/in.txt | bunzip2 -c"
run sh -c "gzip -c $work/in.txt | gunzip -c | wc -c"
run sh -c "cd $work && tar cf - d | tar tf - | sort"
run sh -c "rm -rf $work/t && mkdir -p $work/t/u && echo q > $work/t/u/f && mv $work/t/u/f $work/t/g && ln -s g $work/t/l && readlink $work/t/l && cat $work/t/l && rmdir $work/t/u && ls $work/t && rm -r $work/t"
run stat -c '%s %F' "$work/in.txt"
run realpath "$work/d/../d/f1"
run test -d "$work/d"
run test -f "$work/nope"
run sh -c 'yes | head -n 3'
run sh -c "echo tee-me | tee $work/tee.txt; cat $work/tee.txt"
run sort -u "$work/dup.txt"
run wc "$work/in.txt"
# system calls of everyday tools: file times and modes, fifos, sizes, sleeping,
# groups, memory and processors (sysinfo, sched_getaffinity), poll
run sh -c "rm -f $work/tm && touch -d '2001-09-09 01:46:40' $work/tm && stat -c '%Y %s' $work/tm && truncate -s 5000 $work/tm && chmod 640 $work/tm && stat -c '%a %s' $work/tm && rm $work/tm"
run sh -c "rm -f $work/ff && mkfifo -m 600 $work/ff && stat -c '%F %a' $work/ff && rm $work/ff"
run sh -c 'sleep 0.01; sync; echo slept'
run sh -c 'id -u; id -g; id -G | wc -w'
run sh -c 'test $(nproc) -ge 1 && echo cpus'
run sh -c "free | head -1"
run sh -c "echo typed | (read x; echo got \$x)"
# a static glibc program started by a relative path: /proc/self/exe must
# read as an absolute path (glibc's start-up asserts it)
rel_s=$(cd "$work/bbx/bin" && env -i "$reticle" sim -- ./busybox echo relative 2>&1; echo "status $?")
rel_q=$(cd "$work/bbx/bin" && env -i qemu-mipsel ./busybox echo relative 2>&1; echo "status $?")
if [ "$rel_s" != "$rel_q" ]; then echo "FAIL busybox by a relative path: $rel_s vs $rel_q"; fail=1; else echo "ok busybox by a relative path"; fi
exit $fail
