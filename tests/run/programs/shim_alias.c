/* A loop whose period is a whole multiple of the shim observer's nominal
 * period: each iteration spends P TSC cycles in al_short and 3P in
 * al_long (spins on the TSC, no call inside). A sampler with a fixed
 * stride of 4P would see the same point of every iteration, one function
 * only; shim's randomized period must see them 1:3. Then a loop of
 * al_caller, which calls al_short and spins 2P itself once it returns:
 * its own time is seen only if the signal is set again where a call
 * returns. The program prints "truth FUNCTION CYCLES" of each (what it
 * spun) for shim_oracle.py.
 * usage: shim_alias P ITERATIONS */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <x86intrin.h>

#define NOINLINE __attribute__((noinline, noipa))

static uint64_t in_short, in_long, in_caller;

NOINLINE void al_short(uint64_t p)
{
	uint64_t t = __rdtsc(), end = t + p;
	while (__rdtsc() < end)
		;
	in_short += __rdtsc() - t;
}

NOINLINE void al_long(uint64_t p)
{
	uint64_t t = __rdtsc(), end = t + 3 * p;
	while (__rdtsc() < end)
		;
	in_long += __rdtsc() - t;
}

NOINLINE void al_caller(uint64_t p)
{
	al_short(p);
	uint64_t t = __rdtsc(), end = t + 2 * p;
	while (__rdtsc() < end)
		;
	in_caller += __rdtsc() - t;
}

int main(int argc, char **argv)
{
	uint64_t p = argc > 1 ? strtoull(argv[1], NULL, 10) : 1000;
	uint64_t n = argc > 2 ? strtoull(argv[2], NULL, 10) : 200000;
	for (uint64_t i = 0; i < n; i++) {
		al_short(p);
		al_long(p);
	}
	for (uint64_t i = 0; i < n / 2; i++)
		al_caller(p);
	printf("truth al_short %llu\ntruth al_long %llu\ntruth al_caller %llu\n", (unsigned long long)in_short,
	       (unsigned long long)in_long, (unsigned long long)in_caller);
	return 0;
}
