/* Calls step() 1234 times, then dies as argv[1] says: segv, kill, abort or
 * exit. The profile must still hold every call made before the end. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))
NOINLINE long step(long x) { return x * 31 + 7; }

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "exit";
	long acc = 0;
	for (int i = 0; i < 1234; i++)
		acc = step(acc) % 1000003;
	printf("step calls 1234 acc %ld\n", acc);
	fflush(stdout);
	if (!strcmp(mode, "segv"))
		*(volatile int *)(uintptr_t)acc = 1;
	if (!strcmp(mode, "kill"))
		kill(getpid(), SIGKILL);
	if (!strcmp(mode, "abort"))
		abort();
	return 42;
}
