#!/bin/sh
# Bad input must give one clear line naming the file line or the parameter,
# and a non-zero exit. usage: errors.sh RETICLE WORKDIR
set -u
R=$1 W=$2
mkdir -p "$W" && cd "$W" || exit 1
fail=0

# expect STATUS PATTERN -- COMMAND...: exit status and the message on stderr
expect() {
	want=$1 pat=$2
	shift 3
	"$@" > out.txt 2> err.txt
	got=$?
	lines=$(wc -l < err.txt)
	if [ "$got" -ne "$want" ] || ! grep -q -- "$pat" err.txt || [ "$lines" -ne 1 ]; then
		echo "FAIL: $* -> status $got (want $want), stderr:"; cat err.txt
		fail=1
	else
		echo "ok: $(cat err.txt)"
	fi
}

printf 'I  0400d7d4,8\n S 0421c7f0,8\n L zz,4\n' > bad.lackey
printf 'I  0400d7d4,8\n S 0421c7f0\n' > nosize.lackey
printf 'r 1000 4\nw 2000 8\nq 10 4\n' > bad.din
printf '0 1000\n7 2000\n' > bad.classic
: > empty.bb
printf 'T:1:5 :2:10\nT:1:x\n' > bad.bb
printf 'r 1000 4\n' > good.din

expect 1 "bad.lackey: line 3: bad address" -- "$R" cachesim --cache l1d=32k:8:64 bad.lackey
expect 1 "nosize.lackey: line 2: expected ADDRESS,SIZE" -- "$R" cachesim --cache l1d=32k:8:64 nosize.lackey
expect 1 "bad.din: line 3: unknown access type" -- "$R" cachesim --cache l1d=32k:8:64 bad.din
expect 1 "line 2: expected LABEL" -- "$R" cachesim --input-format din-classic --cache l1=4k:1:32 bad.classic
expect 2 "l1d: size 1000 is not a multiple of line size x ways (64 x 8)" -- "$R" cachesim --cache l1d=1000:8:64 good.din
expect 2 "l2: line size 48 is not a power of two" -- "$R" cachesim --cache l1=32k:8:64,l2=96k:2:48 good.din
expect 2 "l1d: plru needs a power-of-two number of ways" -- "$R" cachesim --cache l1d=24k:3:64:plru good.din
expect 2 "l1d: bad number of ways '0'" -- "$R" cachesim --cache l1d=32k:0:64 good.din
expect 2 "unknown parameter 'l4'" -- "$R" cachesim --cache l1=32k:8:64,l4=1m:8:64 good.din
expect 2 "l3: given without l2" -- "$R" cachesim --cache l1=32k:8:64,l3=1m:8:64 good.din
expect 1 "empty.bb: no basic-block vector" -- "$R" simpoint empty.bb
expect 1 "bad.bb: line 2: expected" -- "$R" simpoint bad.bb
expect 1 "missing.bb: No such file" -- "$R" simpoint missing.bb
expect 2 "--max-k: expected a number from 1 to 64" -- "$R" simpoint -k 0 bad.bb
exit $fail
