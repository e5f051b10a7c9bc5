/* No libc: a system call reticle does not emulate (socket); reticle sim
 * must stop naming it with the program's own number and its address. */
void _start(void)
{
#if defined(__mips__)
	/* o32: socket is 4183 */
	register long v0 __asm__("$2") = 4183, a0 __asm__("$4") = 2, a1 __asm__("$5") = 1, a2 __asm__("$6") = 0;
	__asm__ volatile("syscall" : "+r"(v0) : "r"(a0), "r"(a1), "r"(a2) : "$7", "memory");
#else
	register long a0 __asm__("a0") = 2, a1 __asm__("a1") = 1, a2 __asm__("a2") = 0;
	register long a7 __asm__("a7") = 198;   /* socket */
	__asm__ volatile("ecall" : "+r"(a0) : "r"(a1), "r"(a2), "r"(a7));
#endif
	for (;;)
		;
}
