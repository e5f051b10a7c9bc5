/* Tail calls through the PLT: at -O2 release() is `jmp free@plt` and
 * len_of() `jmp strlen@plt`, which callgrind counts as calls, not as
 * jumps (run.jumps_exact.rp_tailplt). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

__attribute__((noinline)) void release(void *p)
{
	free(p);
}

__attribute__((noinline)) size_t len_of(const char *s)
{
	return strlen(s);
}

int main(int argc, char **argv)
{
	size_t total = 0;
	int n = argc > 1 ? atoi(argv[1]) : 100;
	for (int i = 0; i < n; i++) {
		char *p = malloc(32);
		if (!p)
			return 1;
		snprintf(p, 32, "round %d", i);
		total += len_of(p);
		release(p);
	}
	printf("%zu\n", total);
	return 0;
}
