/* backtrace_symbols from nested calls: the names must be the native run's
 * (built with -rdynamic so that the program's own functions are named).
 * Addresses are left out: they differ from run to run (ASLR). */
#include <execinfo.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

__attribute__((noinline)) static void show(void)
{
	void *pcs[32];
	int n = backtrace(pcs, 32);
	char **names = backtrace_symbols(pcs, n);
	for (int i = 0; i < n && names; i++) {
		char *at = strstr(names[i], " [");
		if (at)
			*at = 0;
		printf("%s\n", names[i]);
	}
	free(names);
}

__attribute__((noinline)) void level3(int k) { show(); __asm__ volatile("" ::"r"(k)); }
__attribute__((noinline)) void level2(int k) { level3(k + 1); __asm__ volatile("" ::"r"(k)); }
__attribute__((noinline)) void level1(int k) { level2(k + 1); __asm__ volatile("" ::"r"(k)); }

int main(void)
{
	void (*volatile through_pointer)(int) = level1;
	level1(0);
	through_pointer(10);
	return 0;
}
