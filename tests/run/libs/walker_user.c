/* Calls into a library that prints its caller's stack by name
 * (walker.c): the names must be those of a native run. */
#include <stdio.h>
void walker_report(void);
__attribute__((noinline)) void inner(int d)
{
	if (d)
		inner(d - 1);
	else
		walker_report();
	__asm__ volatile("");
}
__attribute__((noinline)) void outer(void) { inner(3); __asm__ volatile(""); }
int main(void)
{
	outer();
	return 0;
}
