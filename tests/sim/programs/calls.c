/* A data-dependent number of calls to a function that is never inlined:
 * built natively with -DCOUNT it prints how many (the oracle); built for a
 * simulated ISA a tool counts the entries of 'visit' (tools/proccount.c). */
#include <stdio.h>

static long calls;

__attribute__((noinline)) long visit(long n)
{
#ifdef COUNT
	calls++;
#endif
	if (n < 2)
		return n;
	return visit(n - 1) + visit(n - 2) + (n % 3 == 0 ? visit(n / 3) : 0);
}

int main(void)
{
	long r = visit(18);
#ifdef COUNT
	printf("visit %ld\n", calls);
#endif
	printf("result %ld\n", r);
	return 0;
}
