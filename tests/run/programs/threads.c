/* Threads created while functions are being instrumented, each calling a
 * counted function; the program reports how many calls it made. */
#include <pthread.h>
#include <stdio.h>

#define NOINLINE __attribute__((noinline))
enum { THREADS = 4, CALLS = 20000 };

NOINLINE unsigned long work(unsigned long x) { return x * 2654435761u % 1000003; }

static void *run(void *arg)
{
	unsigned long acc = (unsigned long)arg;
	for (int i = 0; i < CALLS; i++)
		acc += work(acc + i);
	return (void *)acc;
}

int main(void)
{
	pthread_t t[THREADS];
	unsigned long sum = 0;
	for (long i = 0; i < THREADS; i++)
		pthread_create(&t[i], NULL, run, (void *)i);
	for (int i = 0; i < THREADS; i++) {
		void *r;
		pthread_join(t[i], &r);
		sum += (unsigned long)r;
	}
	printf("work calls %d sum %lu\n", THREADS * CALLS, sum);
	return 0;
}
