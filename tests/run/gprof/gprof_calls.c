/* Built with -pg: every entry calls mcount, which records the arc from
 * its caller's return address to its own, kept only when both lie in the
 * program's text (tests/run/gprof.py compares gprof's call graph of a run
 * under reticle with the native run's). */
#include <stdio.h>

__attribute__((noinline)) long leaf(long x)
{
	long s = 0;
	for (int i = 0; i < 50; i++)
		s += x ^ i;
	return s;
}

__attribute__((noinline)) long mid(long x)
{
	return leaf(x) + (x % 3 ? leaf(x + 1) : 0);
}

__attribute__((noinline)) long rec(long n)
{
	return n ? 1 + rec(n - 1) : 0;
}

int main(void)
{
	long s = 0;
	for (long i = 0; i < 30000; i++)
		s += mid(i);
	s += rec(100);
	printf("%ld\n", s);
	return 0;
}
