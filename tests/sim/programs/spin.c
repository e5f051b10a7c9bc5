/* Runs until a signal stops it: a loop of calls (spin), or a read of
 * stdin that blocks (read). For sim.*.interrupt. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static volatile unsigned long sink;

__attribute__((noinline)) static void work(unsigned long i)
{
	sink += i * i;
}

int main(int argc, char **argv)
{
	printf("started\n");
	fflush(stdout);
	if (argc > 1 && !strcmp(argv[1], "read")) {
		char c;
		return (int)read(0, &c, 1);
	}
	for (unsigned long i = 0;; i++)
		work(i);
}
