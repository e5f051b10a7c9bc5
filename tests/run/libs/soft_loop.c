/* Built -O0 and linked with a library that walks the stack (walker.c):
 * g's return point after its call of f ("nop; leave; ret") takes no jump
 * back to the copy, so each return traps until the call is made a plain
 * one (lazy.c, plain_call_before). The stack walk at the end still names
 * main and the frames above it. */
#include <stdio.h>
void walker_report(void);
int acc;
void f(int i) { acc += i; }
void g(int i) { f(i); }
int main(void)
{
	for (int i = 0; i < 200000; i++)
		g(i);
	printf("%d\n", acc);
	walker_report();
	return 0;
}
