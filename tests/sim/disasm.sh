#!/bin/sh
# --disasm against objdump (-M no-aliases): the same mnemonic at every
# address both list. On MIPS objdump keeps two aliases even so (negu for
# subu $0, ror for rotr) and names FP conditions: those are mapped first.
#   [SIM_ARCH=rv64|mips32] disasm.sh RETICLE WORKDIR SOURCE.c
set -eu
reticle=$1; work=$2; src=$3
mkdir -p "$work"
case ${SIM_ARCH:-rv64} in
rv64) cc="riscv64-linux-gnu-gcc -nostdlib -ffreestanding -fno-math-errno" od=riscv64-linux-gnu-objdump ;;
mips32) cc=mipsel-linux-gnu-gcc od=mipsel-linux-gnu-objdump ;;
esac
bin=$work/dis.${SIM_ARCH:-rv64}
$cc -O2 -static -o "$bin" "$src"
"$reticle" sim --disasm "$bin" | awk -F'\t' '/^ *[0-9a-f]+:/ { a=$1; gsub(/[ :]/, "", a); split($2, w, " "); print a, w[1] }' | sort > "$work/ours.dis"
$od -d -M no-aliases "$bin" | awk -F'\t' '/^ *[0-9a-f]+:\t/ { a=$1; gsub(/[ :]/, "", a); split($3, w, " "); print a, w[1] }' |
	sed 's/ negu$/ subu/; s/ ror$/ rotr/; s/ rorv$/ rotrv/; s/ c\.f\./ c.0./; s/ c\.un\./ c.1./; s/ c\.eq\./ c.2./; s/ c\.ueq\./ c.3./; s/ c\.olt\./ c.4./; s/ c\.ult\./ c.5./; s/ c\.ole\./ c.6./; s/ c\.ule\./ c.7./; s/ c\.lt\./ c.12./; s/ c\.le\./ c.14./' | sort > "$work/objdump.dis"
n=$(join "$work/ours.dis" "$work/objdump.dis" | wc -l)
[ "$n" -gt 20 ] || { echo "FAIL: only $n common addresses"; exit 1; }
bad=$(join "$work/ours.dis" "$work/objdump.dis" | awk '$2 != $3' | head -5)
[ -z "$bad" ] || { echo "FAIL: mnemonics differ:"; echo "$bad"; exit 1; }
echo "ok: $n instructions"
