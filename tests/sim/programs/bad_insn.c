/* No libc: an instruction no description defines (all ones), after a few
 * good ones; reticle sim must stop naming it and its address. */
#if defined(__mips__)
#define _start __start
#endif
void _start(void)
{
	__asm__ volatile(".word 0xffffffff");
	for (;;)
		;
}
