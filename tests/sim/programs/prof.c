/* No libc: several procedures (recursion, a leaf called from a loop, a
 * function whose loop may jump back to its entry) whose executed
 * instructions per procedure are compared with qemu's exec log mapped to
 * symbols (profile.sh). Writes one line, exits with a checksum. */
#if defined(__mips__)
#define _start __start   /* the MIPS entry symbol */
#endif

static char line[] = "prof: 0000\n";

__attribute__((noinline)) long leaf(long x)
{
	return (x * 7) ^ (x >> 3);
}

__attribute__((noinline)) long fib(long n)
{
	return n < 2 ? n : fib(n - 1) + fib(n - 2);
}

__attribute__((noinline)) long spin(long n)
{
	long s = 0;
	for (long i = 0; i < n; i++)
		s += leaf(i);
	return s;
}

__attribute__((noinline)) long sys3(long nr, long a, long b, long c)
{
#if defined(__riscv)
	register long a0 __asm__("a0") = a, a1 __asm__("a1") = b, a2 __asm__("a2") = c, a7 __asm__("a7") = nr;
	__asm__ volatile("ecall" : "+r"(a0) : "r"(a1), "r"(a2), "r"(a7) : "memory");
	return a0;
#elif defined(__mips__)
	register long a0 __asm__("$4") = a, a1 __asm__("$5") = b, a2 __asm__("$6") = c, v0 __asm__("$2") = nr;
	__asm__ volatile("syscall" : "+r"(v0) : "r"(a0), "r"(a1), "r"(a2) : "memory", "$7");
	return v0;
#endif
}

#if defined(__riscv)
enum { NR_WRITE = 64, NR_EXIT = 93 };
#else
enum { NR_WRITE = 4004, NR_EXIT = 4001 };
#endif

void _start(void)
{
	long r = fib(12) + spin(200);
	for (int i = 0; i < 4; i++)
		line[9 - i] = '0' + (r >> (4 * i)) % 10;
	sys3(NR_WRITE, 1, (long)line, sizeof line - 1);
	sys3(NR_EXIT, r & 0xff, 0, 0);
	for (;;)
		;
}
