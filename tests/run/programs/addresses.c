/* Prints where its stack, heap (brk and mmap), a library's text and its
 * own text lie, then walks a buffer with a stride that crosses cache sets
 * by address (so that miss counts follow the layout), and prints its
 * checksum. With "twice", does it again in a forked child. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static unsigned long walk(unsigned char *p, size_t n)
{
	unsigned long sum = 0;
	for (int r = 0; r < 20; r++)
		for (size_t i = 0; i < n; i += 64 + 8)
			sum += p[i]++;
	return sum;
}

static void report(const char *who)
{
	int local = 0;
	unsigned char *small = malloc(100), *big = malloc(1 << 20);
	memset(big, 1, 1 << 20);
	printf("%s stack %p brk %p mmap %p libc %p main %p sum %lu\n", who, (void *)&local, (void *)small,
	       (void *)big, (void *)&printf, (void *)&report, walk(big, 1 << 20));
	fflush(stdout);
	free(small);
	free(big);
}

int main(int argc, char **argv)
{
	report("parent");
	if (argc > 1 && !strcmp(argv[1], "twice")) {
		pid_t pid = fork();
		if (pid == 0) {
			report("child");
			_exit(0);
		}
		int st;
		waitpid(pid, &st, 0);
	}
	return 0;
}
