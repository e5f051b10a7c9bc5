/* No libc: a deterministic instruction stream (loops, mul/div, compressed
 * forms, loads/stores) whose executed instructions can be compared one by
 * one with qemu's exec log. Exit status = a checksum modulo 256. */
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
	register long a0 __asm__("a0") = r & 0xff;
	register long a7 __asm__("a7") = 93;
	__asm__ volatile("ecall" : : "r"(a0), "r"(a7));
	for (;;)
		;
}
