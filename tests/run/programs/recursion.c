/* Deep recursion (100000 frames) through instrumented code. */
#include <stdio.h>
#include <stdlib.h>

#define NOINLINE __attribute__((noinline))
NOINLINE long down(long n, volatile long *sink)
{
	long local = n * 3;
	if (n == 0)
		return 0;
	long r = down(n - 1, sink) + (local & 7);
	*sink = r;
	return r;
}

int main(void)
{
	volatile long sink;
	printf("down calls 100001 result %ld\n", down(100000, &sink));
	return 0;
}
