/* The bundled example: counts primes below N with a sieve and with trial
 * division, so the profile shows a few functions with very different costs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int is_prime(unsigned n)
{
	if (n < 2)
		return 0;
	for (unsigned d = 2; d * d <= n; d++)
		if (n % d == 0)
			return 0;
	return 1;
}

static unsigned count_trial(unsigned limit)
{
	unsigned count = 0;
	for (unsigned n = 0; n < limit; n++)
		count += is_prime(n);
	return count;
}

static unsigned count_sieve(unsigned limit)
{
	char *composite = calloc(limit + 1, 1);
	unsigned count = 0;
	if (!composite)
		return 0;
	for (unsigned n = 2; n < limit; n++) {
		if (composite[n])
			continue;
		count++;
		for (unsigned long m = (unsigned long)n * n; m < limit; m += n)
			composite[m] = 1;
	}
	free(composite);
	return count;
}

int main(int argc, char **argv)
{
	unsigned limit = argc > 1 ? (unsigned)strtoul(argv[1], NULL, 10) : 10000;
	unsigned a = count_trial(limit), b = count_sieve(limit);
	printf("primes below %u: %u (trial division), %u (sieve)\n", limit, a, b);
	return a == b ? 0 : 1;
}
