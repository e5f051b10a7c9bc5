/* Per-line costs (tests/run/source_lines.py): a few functions with loops,
 * a switch, an inlined helper and recursion, built -O2 -g; bbcount's
 * counts per source line must equal callgrind's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static inline unsigned mix(unsigned h, unsigned v)
{
	h ^= v;
	h *= 16777619u;
	return h;
}

__attribute__((noinline)) static unsigned hash(const char *s, size_t n)
{
	unsigned h = 2166136261u;
	for (size_t i = 0; i < n; i++)
		h = mix(h, (unsigned char)s[i]);
	return h;
}

__attribute__((noinline)) static long collatz(long n)
{
	long steps = 0;
	while (n != 1) {
		if (n & 1)
			n = 3 * n + 1;
		else
			n /= 2;
		steps++;
	}
	return steps;
}

__attribute__((noinline)) static int classify(int c)
{
	switch (c % 7) {
	case 0: return 3;
	case 1: return c * 2;
	case 2: return c - 5;
	case 3: return c ^ 0x55;
	case 4: return c << 2;
	default: return c;
	}
}

__attribute__((noinline)) static long fib(int n)
{
	return n < 2 ? n : fib(n - 1) + fib(n - 2);
}

__attribute__((noinline)) static void sort(int *v, int n)
{
	for (int i = 1; i < n; i++) {
		int x = v[i], j = i - 1;
		while (j >= 0 && v[j] > x) {
			v[j + 1] = v[j];
			j--;
		}
		v[j + 1] = x;
	}
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 200;
	char buf[64];
	unsigned h = 0;
	long steps = 0, cls = 0;
	int *v = malloc(sizeof(int) * n);

	for (int i = 0; i < n; i++) {
		int len = snprintf(buf, sizeof(buf), "item-%d", i);
		h = mix(h, hash(buf, (size_t)len));
		steps += collatz(i + 1);
		cls += classify(i);
		v[i] = (int)(h % 1000);
	}
	sort(v, n);
	printf("%u %ld %ld %ld %d\n", h, steps, cls, fib(18), v[n / 2]);
	free(v);
	return 0;
}
