/* For examples/scripts/call_args.lua (tests/e2e/call_args_oracle.py): calls
 * work(i, i * i, 7) for i in 0..N-1 from two threads (each its half), and
 * prints what it passed and got back: how many calls had i >= MIN, the sum
 * of those i, and the sum of every return value. Then label(S, N) with
 * two strings (for printf()'s str() in tests/run/probe_printf.py). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static long n, min;

__attribute__((noinline)) long work(long i, long sq, long k)
{
	__asm__ volatile("" ::: "memory");
	return i + sq % 1000 + k;
}

__attribute__((noinline)) long label(const char *s, long n)
{
	__asm__ volatile("" ::: "memory");
	return (long)strlen(s) * 10 + n;
}

struct half { long from, to, passed, arg_sum, ret_sum; };

static void *run(void *arg)
{
	struct half *h = arg;
	for (long i = h->from; i < h->to; i++) {
		h->ret_sum += work(i, i * i, 7);
		if (i >= min) {
			h->passed++;
			h->arg_sum += i;
		}
	}
	return NULL;
}

int main(int argc, char **argv)
{
	n = argc > 1 ? atol(argv[1]) : 1000;
	min = argc > 2 ? atol(argv[2]) : 900;
	struct half h[2] = { { 0, n / 2, 0, 0, 0 }, { n / 2, n, 0, 0, 0 } };
	pthread_t t;
	pthread_create(&t, NULL, run, &h[1]);
	run(&h[0]);
	pthread_join(t, NULL);
	printf("program: %ld calls passed, first arguments sum %ld; %ld returns, values sum %ld\n",
	       h[0].passed + h[1].passed, h[0].arg_sum + h[1].arg_sum, n, h[0].ret_sum + h[1].ret_sum);
	printf("labels: %ld %ld\n", label("first", 1), label("second words", -2));
	return 3;
}
