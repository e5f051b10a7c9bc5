#!/bin/sh
# src/sim/syscall_names.c is generated (scripts/sim_syscall_names.py, from
# the cross compilers' kernel headers) and checked in: regenerate, compare.
# Skipped (77) without riscv64-linux-gnu-gcc and mipsel-linux-gnu-gcc.
#   syscall_names.sh SOURCE_DIR WORKDIR
set -u
src=$1; work=$2
for cc in riscv64-linux-gnu-gcc mipsel-linux-gnu-gcc; do
	command -v $cc >/dev/null || { echo "skip: $cc missing"; exit 77; }
done
mkdir -p "$work"
python3 "$src/scripts/sim_syscall_names.py" "$work/syscall_names.c" || exit 1
if ! cmp -s "$work/syscall_names.c" "$src/src/sim/syscall_names.c"; then
	echo "FAIL: src/sim/syscall_names.c differs from the generator's output (run scripts/sim_syscall_names.py)"
	diff "$work/syscall_names.c" "$src/src/sim/syscall_names.c" | head
	exit 1
fi
echo "ok: src/sim/syscall_names.c is the generator's output"
