/* A heap overflow that AddressSanitizer reports: its report walks the
 * stack (libasan imports _Unwind_Backtrace) and exits 1; with code-cache
 * return addresses it aborted halfway (SIGABRT). */
#include <stdio.h>
#include <stdlib.h>
__attribute__((noinline)) int read_past(int *a, int n) { return a[n]; }
int main(void)
{
	int *a = malloc(10 * sizeof(int));
	printf("start\n");
	fflush(stdout);
	int v = read_past(a, 10);
	free(a);
	return v;
}
