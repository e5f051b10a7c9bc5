#!/bin/sh
# reticle sim -o: the profile of a libc-free program (programs/prof.c) must
# match qemu's exec log mapped to nm's symbols (profile_oracle.py), read back
# through `reticle report --format json`; with and without -o the program's
# stdout and exit status are qemu's. A glibc program killed by SIGABRT still
# gets a profile whose total is the icount tool's.
#   [SIM_ARCH=rv64|mips32] profile.sh RETICLE WORKDIR prof.c abort.c
set -u
arch=${SIM_ARCH:-rv64}
case $arch in
rv64) cc=riscv64-linux-gnu-gcc qemu=qemu-riscv64 tp=riscv64-linux-gnu- ;;
mips32) cc=mipsel-linux-gnu-gcc qemu=qemu-mipsel tp=mipsel-linux-gnu- ;;
esac
reticle=$(realpath "$1"); work=$2; src=$(realpath "$3"); abort_src=$(realpath "$4")
here=$(realpath "$(dirname "$0")")
mkdir -p "$work"
cd "$work" || exit 1
nolibc="-O2 -static -nostdlib"
[ $arch = mips32 ] && nolibc="$nolibc -mno-abicalls -fno-pic"
$cc $nolibc -o prof.$arch "$src" || exit 1
$cc -O2 -static -o abort.$arch "$abort_src" || exit 1
rm -f prof.db abort.db

bin=$PWD/prof.$arch
env -i "$reticle" sim -o prof.db -- "$bin" > sim-o.out 2> sim-o.err; so=$?
env -i "$reticle" sim -- "$bin" > sim.out; s=$?
env -i $qemu -singlestep -d exec,nochain -D qemu.log "$bin" > qemu.out; q=$?
[ $so -eq $q ] && [ $s -eq $q ] || { echo "FAIL: status with -o $so, without $s, qemu $q"; cat sim-o.err; exit 1; }
cmp -s sim-o.out qemu.out && cmp -s sim.out qemu.out || { echo "FAIL: stdout differs"; exit 1; }
sed -n 's/^Trace [0-9]*: 0x[0-9a-f]* \[[0-9a-f]*\/\([0-9a-f]*\)\/.*/\1/p' qemu.log > qemu.pcs
${tp}nm -S --defined-only "$bin" > nm.txt
${tp}objdump -d "$bin" > objdump.txt
"$reticle" report --format json prof.db > prof.json || { echo "FAIL: reticle report"; exit 1; }
grep -q '"exit_status": "'$q'"' prof.json && grep -q '"collectors": "sim"' prof.json ||
	{ echo "FAIL: meta"; grep -A10 '"meta"' prof.json; exit 1; }
python3 "$here/profile_oracle.py" prof.json prof.db qemu.pcs nm.txt objdump.txt || exit 1

# killed by a signal: same stdout and status with -o; a profile is written
bin=$PWD/abort.$arch
env -i "$reticle" sim -c icount -o abort.db -- "$bin" > abort-o.out 2> abort-o.err; so=$?
env -i $qemu "$bin" > abort-q.out; q=$?
[ $so -eq $q ] && cmp -s abort-o.out abort-q.out || { echo "FAIL abort: status $so, qemu $q"; exit 1; }
n=$(sed -n 's/^icount: \([0-9]*\) instructions/\1/p' abort-o.err)
"$reticle" report --format json abort.db > abort.json || { echo "FAIL: report abort.db"; exit 1; }
python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
t = sum(f.get("instrs", 0) for f in d["functions"])
sys.exit(0 if t == int(sys.argv[2]) and d["meta"]["exit_status"] == sys.argv[3] else 1)' abort.json "$n" "$q" ||
	{ echo "FAIL abort: profile total or status differ from icount $n / status $q"; exit 1; }
"$reticle" report --format callgrind abort.db > abort.cg || { echo "FAIL: callgrind export"; exit 1; }
echo "ok: abort profile $n instructions, status $q"
