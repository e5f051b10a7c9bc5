/* A computed goto whose target, chosen by the line before, is loaded from a
 * table of labels and kept in a register while the next line is read: a
 * detach while the program waits there leaves that register holding the
 * label the copied table gave it. Prints op(N) for each line N, the op
 * chosen by the line before (N % 4), and the lines read at the end. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static char buf[64];

/* the next line (one read from a pipe written a line at a time) */
static inline long next_line(void)
{
	ssize_t k = read(0, buf, sizeof(buf) - 1);
	if (k <= 0)
		return -1;
	buf[k] = 0;
	return atol(buf);
}

int main(void)
{
	static void *const ops[] = { &&triple, &&plus7, &&square, &&negate };
	long lines = 0, n, r;
	void *op = ops[0];
	setvbuf(stdout, NULL, _IOLBF, 0);
	for (;;) {
		n = next_line();
		if (n < 0)
			break;
		lines++;
		goto *op;
	triple:
		r = 3 * n;
		goto out;
	plus7:
		r = n + 7;
		goto out;
	square:
		r = n * n;
		goto out;
	negate:
		r = -n;
	out:
		printf("%ld\n", r);
		op = ops[n % 4];
	}
	printf("lines %ld\n", lines);
	return 0;
}
