/* A child that ends just after its parent: it waits for EOF on a pipe the
 * parent holds, then works 0.3 s and exits 0. The parent first makes a
 * million call paths (f0..f9 through a table, six deep), which a calltime
 * profile writes as a million contexts rows when the parent ends: seconds
 * of reticle's time. The child must get its second of grace after that
 * (tests/run/late_child.py): it ends by itself, counted to its end.
 *
 * usage: late_child [DEPTH]   (default 6: 10^6 paths) */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

typedef void (*fn)(int, unsigned);
static fn tab[10];
static volatile unsigned long sink;

#define F(n) \
	__attribute__((noinline)) static void f##n(int d, unsigned x) \
	{ \
		if (d) \
			tab[x % 10](d - 1, x / 10); \
		sink++; \
	}
F(0) F(1) F(2) F(3) F(4) F(5) F(6) F(7) F(8) F(9)

/* called once, in the child, after its parent has ended */
__attribute__((noinline)) static void child_end(void)
{
	struct timespec ts = { 0, 300000000 };

	nanosleep(&ts, NULL);
	printf("child done\n");
	fflush(stdout);
}

int main(int argc, char **argv)
{
	int depth = argc > 1 ? atoi(argv[1]) : 6;
	fn t[10] = { f0, f1, f2, f3, f4, f5, f6, f7, f8, f9 };
	int p[2];

	for (int i = 0; i < 10; i++)
		tab[i] = t[i];
	if (pipe(p))
		return 1;
	pid_t c = fork();
	if (c < 0)
		return 1;
	if (c == 0) {
		char b;

		close(p[1]);
		while (read(p[0], &b, 1) > 0)
			;
		child_end();
		_exit(0);
	}
	close(p[0]);
	unsigned n = 1;
	for (int i = 0; i < depth; i++)
		n *= 10;
	for (unsigned x = 0; x < n; x++)
		tab[x % 10](depth - 1, x / 10);
	printf("parent %lu\n", sink);
	fflush(stdout);
	return 0;   /* the child reads EOF once the parent has exited */
}
