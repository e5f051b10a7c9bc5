/* longjmp out of deep instrumented frames, and back into a loop. */
#include <setjmp.h>
#include <stdio.h>

#define NOINLINE __attribute__((noinline))
static jmp_buf env;
static int depth_reached;

NOINLINE void dive(int depth, int limit)
{
	depth_reached = depth;
	if (depth == limit)
		longjmp(env, depth);
	if (depth <= limit)
		dive(depth + 1, limit);
	depth_reached--;   /* never reached: keeps the call a real call */
}

int main(void)
{
	volatile long total = 0;
	for (volatile int round = 1; round <= 50; round++) {
		int v = setjmp(env);
		if (v == 0)
			dive(0, round * 10);
		total += v;
	}
	printf("longjmp total %ld depth %d\n", total, depth_reached);
	return 0;
}
