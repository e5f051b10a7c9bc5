/* Inlined code (tests/run/inline_oracle.py): helpers inlined into several
 * functions, one inlined into another inlined one, a loop inside inlined
 * code; built -O2 -g. `reticle report --inline` must give each inlined
 * function the Ir addr2line -i places in it. */
#include <stdio.h>
#include <stdlib.h>

static inline __attribute__((always_inline)) unsigned rotl(unsigned x, int k)
{
	return (x << k) | (x >> (32 - k));
}

static inline __attribute__((always_inline)) unsigned mix(unsigned h, unsigned v)
{
	h ^= v * 0x9e3779b9u;
	return rotl(h, 13) * 5 + 0xe6546b64u;
}

static inline __attribute__((always_inline)) unsigned sum_digits(unsigned long n)
{
	unsigned s = 0;
	while (n) {
		s += (unsigned)(n % 10);
		n /= 10;
	}
	return s;
}

__attribute__((noinline)) static unsigned hash_range(unsigned from, unsigned to)
{
	unsigned h = 0;
	for (unsigned i = from; i < to; i++)
		h = mix(h, i);
	return h;
}

__attribute__((noinline)) static unsigned digits_then_mix(unsigned n)
{
	unsigned h = 1;
	for (unsigned i = 1; i <= n; i++)
		h = mix(h, sum_digits((unsigned long)i * 7919u));
	return h;
}

int main(int argc, char **argv)
{
	unsigned n = argc > 1 ? (unsigned)atoi(argv[1]) : 3000;
	printf("%u %u %u\n", hash_range(0, n), digits_then_mix(n), rotl(n, 5));
	return 0;
}
