/* Rep string instructions in inlined code: a struct copy and a clear that
 * gcc makes `rep movsq` and `rep stosq` (built with
 * -mstringop-strategy=rep_8byte), each iteration an instruction for
 * valgrind, in one block of the copy unless reticle ends a block at each
 * (run.inline_ir_rep: the iterations belong to the inlined function). */
#include <stdio.h>
#include <stdlib.h>

struct big {
	long a[64];
};
static struct big src, dst;

static inline void copy_big(struct big *d, const struct big *s)
{
	*d = *s;
}

static inline void clear_big(struct big *d)
{
	__builtin_memset(d, 0, sizeof(*d));
}

__attribute__((noinline)) long work(int n)
{
	long sum = 0;
	for (int i = 0; i < n; i++) {
		src.a[i & 63] = i;
		copy_big(&dst, &src);
		sum += dst.a[(i * 7) & 63];
		clear_big(&dst);
	}
	return sum;
}

int main(int argc, char **argv)
{
	printf("%ld\n", work(argc > 1 ? atoi(argv[1]) : 1000));
	return 0;
}
