/* Calls through a table of function pointers, 'call [ops+rax*8]' when
 * built without PIE (python3.11's BINARY_OP calls binary_ops[oparg] so),
 * one of which blocks reading the next line of stdin: an attach finds the
 * program there, and a detach too, after calls made in the copy of main.
 * Prints mix(N) for each line N, and the lines read at the end. */
#include <stdio.h>
#include <stdlib.h>

static long lines;

__attribute__((noinline)) static long next_line(long unused)
{
	char buf[64];
	(void)unused;
	if (!fgets(buf, sizeof(buf), stdin))
		return -1;
	lines++;
	return atol(buf);
}

__attribute__((noinline)) static long mix(long x)
{
	for (int i = 0; i < 5; i++)
		x = (x * 31 + i) % 1000003;
	return x;
}

long (*const ops[])(long) = { next_line, mix };
volatile int op_read = 0, op_mix = 1;   /* not known to the compiler */

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	for (;;) {
		long n = ops[op_read](0);
		if (n < 0)
			break;
		printf("%ld\n", ops[op_mix](n));
	}
	printf("lines %ld\n", lines);
	return 0;
}
