/* A main thread that spends its time making threads (a server with a
 * thread per request): an attach now and then finds it stopped inside its
 * clone's event, where reticle's own system calls in the target read the
 * clone's end as their result (the thread then took itself for the child:
 * a jump to 0, a double free). For SECONDS seconds it makes threads, each
 * adding to a sum, and prints whether the sum is the one it expects.
 * usage: attach_clone SECONDS */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static long sum;

static void *add(void *arg)
{
	__atomic_fetch_add(&sum, (long)arg, __ATOMIC_RELAXED);
	return NULL;
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 3;
	struct timespec t0, t;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	long expect = 0, n = 0;
	do {
		pthread_t th;
		if (pthread_create(&th, NULL, add, (void *)(n % 7 + 1)))
			return 2;
		pthread_join(th, NULL);
		expect += n % 7 + 1;
		n++;
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9 < seconds);
	printf("%s: %ld threads\n", sum == expect ? "ok" : "WRONG", n);
	return sum == expect ? 0 : 1;
}
