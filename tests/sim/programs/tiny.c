/* No libc: a deterministic instruction stream (loops, mul/div, compressed
 * forms on RISC-V, delay slots on MIPS, loads/stores) whose executed instructions can be compared one by
 * one with qemu's exec log. Exit status = a checksum modulo 256. */
#if defined(__mips__)
#define _start __start   /* the MIPS entry symbol */
#endif

static long data[64];

static long work(long n)
{
	long s = 0;
	for (long i = 0; i < n; i++) {
		data[i & 63] = i * 7 + (i >> 2);
		s += data[(i * 5) & 63] / (i % 7 + 1) - (s % 13);
		s ^= (unsigned)s >> 3;
	}
	return s;
}

void _start(void)
{
	long r = work(300);
#if defined(__riscv)
	register long a0 __asm__("a0") = r & 0xff;
	register long a7 __asm__("a7") = 93;
	__asm__ volatile("ecall" : : "r"(a0), "r"(a7));
#elif defined(__mips__)
	register long a0 __asm__("$4") = r & 0xff;
	register long v0 __asm__("$2") = 4001;
	__asm__ volatile("syscall" : : "r"(a0), "r"(v0));
#endif
	for (;;)
		;
}
