/* The main thread leaves with pthread_exit while another thread goes on
 * and turns functions hot one after another: under cover their copies are
 * given up and the threads held to move them out. The main thread is a
 * zombie then, which never stops again: a hold that waited for it hung
 * for ever (CPython's test suite under cover). Prints what it computed,
 * then the process exits with the last thread. */
#include <pthread.h>
#include <stdio.h>
#include <time.h>

static volatile unsigned long sink;

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

#define HOT(n)                                                                \
	__attribute__((noinline)) static unsigned long hot##n(unsigned long x)   \
	{                                                                        \
		return x % (n + 3) ? x * (n + 1) : x / (n + 2);                  \
	}
HOT(0) HOT(1) HOT(2) HOT(3) HOT(4) HOT(5) HOT(6) HOT(7)

static unsigned long (*const hots[])(unsigned long) = { hot0, hot1, hot2, hot3, hot4, hot5, hot6, hot7 };

static void *work(void *arg)
{
	unsigned long total = 0;
	for (size_t f = 0; f < sizeof(hots) / sizeof(*hots); f++) {   /* one turns hot every 60 ms */
		double end = now() + 0.06;
		for (unsigned long i = 0; now() < end;)
			for (int k = 0; k < 500; k++)
				sink += hots[f](i++);
		total += hots[f](f + 1000);
	}
	printf("total %lu\n", total);
	fflush(stdout);
	return arg;
}

int main(void)
{
	pthread_t t;
	pthread_create(&t, NULL, work, NULL);
	pthread_exit(NULL);
}
