/* The cost of one probe: a loop calls an empty function N times (and, in
 * "block" mode, runs N iterations of a loop body of one basic block), so
 * that under reticle the difference from a native run, divided by N, is
 * what one entry counter, one block counter or one timer start/stop pair
 * costs (bench/probe-cost.sh). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int never, always = 1;   /* read by the probe language's guards (bench/probe-cost.sh) */

__attribute__((noinline)) void empty(void)
{
	__asm__ volatile("");
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 100000000;
	if (argc > 2 && !strcmp(argv[2], "block")) {
		volatile long sink = 0;
		for (long i = 0; i < n; i++)
			sink += i;   /* one block per iteration */
		printf("%ld\n", (long)sink);
		return 0;
	}
	for (long i = 0; i < n; i++)
		empty();
	puts("done");
	return 0;
}
