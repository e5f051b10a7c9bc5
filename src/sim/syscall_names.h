/* Names of Linux system calls (syscall_names.c, generated from the kernel's
 * headers by scripts/sim_syscall_names.py). */
#ifndef RETICLE_SIM_SYSCALL_NAMES_H
#define RETICLE_SIM_SYSCALL_NAMES_H

/* The name of call NR in the asm-generic numbering, or with O32 in MIPS
 * o32's (4000 + n); NULL for a number the kernel does not define. */
const char *sim_syscall_name(int o32, unsigned long long nr);

#endif
