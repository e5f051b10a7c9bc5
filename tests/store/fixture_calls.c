/* Round-trip fixture: a few functions with distinct call counts, a call
 * chain, recursion and calls into libc, so that a valgrind callgrind run
 * gives self costs and call arcs of every shape the export must carry. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

__attribute__((noinline)) static unsigned leaf(unsigned x)
{
	return x * 2654435761u >> 7;
}

__attribute__((noinline)) static unsigned chain(unsigned n)
{
	unsigned s = 0;

	for (unsigned i = 0; i < n; i++)
		s += leaf(i);
	return s;
}

__attribute__((noinline)) static unsigned fib(unsigned n)
{
	return n < 2 ? n : fib(n - 1) + fib(n - 2);
}

/* top -> mid -> bottom: each called from one place only, so gprof's
 * inclusive estimate is exact for them and must equal callgrind's. */
__attribute__((noinline)) static unsigned bottom(unsigned x)
{
	return (x ^ 0x5bd1e995u) * 31u;
}

__attribute__((noinline)) static unsigned mid(unsigned n)
{
	unsigned s = 0;

	for (unsigned i = 0; i < n; i++)
		s += bottom(i + n);
	return s;
}

__attribute__((noinline)) static unsigned top(void)
{
	unsigned s = 0;

	for (unsigned i = 0; i < 20; i++)
		s += mid(i);
	return s;
}

static int cmp(const void *a, const void *b)
{
	unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;

	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	unsigned v[300], s = 0;

	for (unsigned i = 0; i < 300; i++)
		v[i] = leaf(i + 1);
	qsort(v, 300, sizeof(v[0]), cmp);
	for (unsigned i = 0; i < 7; i++)
		s += chain(100 + i);
	s += fib(15) + (unsigned)strlen(argv[0]) + top();
	printf("%u %u\n", s, v[0]);
	return 0;
}
