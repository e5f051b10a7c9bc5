/* No libc: a known memory access pattern for the cache tool. SWEEPS sweeps
 * load one word every LINE bytes of a SIZE-byte array, so with LINE-byte
 * lines a cold cache larger than SIZE misses SIZE/LINE times, and an LRU
 * cache smaller than SIZE misses on every one of the SWEEPS*SIZE/LINE loads.
 * Exit status: the sum of the loaded words modulo 256 (they are zero). */
#define SIZE 65536
#define LINE 64
#define SWEEPS 4

#if defined(__mips__)
#define _start __start
#endif

static char array[SIZE] __attribute__((aligned(LINE)));

void _start(void)
{
	long sum = 0;
	for (int s = 0; s < SWEEPS; s++)
		for (int i = 0; i < SIZE; i += LINE)
			sum += *(volatile int *)&array[i];
#if defined(__riscv)
	register long a0 __asm__("a0") = sum & 0xff;
	register long a7 __asm__("a7") = 93;
	__asm__ volatile("ecall" : : "r"(a0), "r"(a7));
#elif defined(__mips__)
	register long a0 __asm__("$4") = sum & 0xff;
	register long v0 __asm__("$2") = 4001;
	__asm__ volatile("syscall" : : "r"(a0), "r"(v0));
#endif
	for (;;)
		;
}
