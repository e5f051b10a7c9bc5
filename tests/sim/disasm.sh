#!/bin/sh
# --disasm against objdump (-M no-aliases): same mnemonic at every address.
set -eu
reticle=$1; work=$2; bin=$work/tiny.rv64
[ -x "$bin" ] || riscv64-linux-gnu-gcc -O2 -static -nostdlib -o "$bin" "$3"
"$reticle" sim --disasm "$bin" | awk -F'\t' '/^ *[0-9a-f]+:/ { a=$1; gsub(/[ :]/, "", a); split($2, w, " "); print a, w[1] }' > "$work/ours.dis"
riscv64-linux-gnu-objdump -d -M no-aliases "$bin" | awk -F'\t' '/^ *[0-9a-f]+:\t/ { a=$1; gsub(/[ :]/, "", a); split($3, w, " "); print a, w[1] }' > "$work/objdump.dis"
n=$(wc -l < "$work/ours.dis")
[ "$n" -gt 20 ] || { echo "FAIL: only $n lines"; exit 1; }
diff "$work/ours.dis" "$work/objdump.dis" && echo "ok: $n instructions"
