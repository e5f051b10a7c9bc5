#!/bin/sh
# The seed's four-instruction description: it must generate C that compiles,
# with 4 instructions whose encodings follow the paper (bim 1000..., bin
# 10010000000..., add 101000..., sub 101100...).
set -eu
gen=$1; desc=$2; src=$3; out=${4:-/tmp}/seed4_gen.c
"$gen" "$desc" seed4 "$out" 2>&1 | grep -q 'seed4: 4 instructions'
cc -std=gnu11 -fsyntax-only -I "$src" "$out"
grep -q '{ 0xf000ull, 0x8000ull, 0, 2 }, /\* bim \*/' "$out"
grep -q '{ 0xffe0ull, 0x9000ull, 1, 2 }, /\* bin \*/' "$out"
grep -q '{ 0xfc00ull, 0xa000ull, 2, 2 }, /\* add \*/' "$out"
grep -q '{ 0xfc00ull, 0xb000ull, 3, 2 }, /\* sub \*/' "$out"
echo ok
