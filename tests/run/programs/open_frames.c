/* Functions already running when a timer is inserted (tests/run/open_frames.py).
 *
 * Two threads each call outer() once; it runs until the parent says "end"
 * on stdin (or 30 s): in the first thread it mostly sleeps in inner()'s
 * nanosleep (outer's frame is open under inner's), in the second it spins
 * in its own loop and calls inner() every 2^16 turns (the thread is mostly
 * in outer itself); after outer, each sleeps 0.3 s (a frame left open past
 * outer's return would take that in). Prints "ready" once both are inside
 * outer, then, after
 * "end", per thread the CLOCK_MONOTONIC time outer returned and how many
 * times inner was called, and "done" after a last call of inner outside
 * outer. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static atomic_int stop, inside;
static long calls[2];
static double ended[2];

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

__attribute__((noinline)) void inner(int who, int sleeps)
{
	calls[who]++;
	if (sleeps) {
		struct timespec t = { 0, 2000000 };
		nanosleep(&t, NULL);
	}
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void outer(int who)
{
	atomic_fetch_add(&inside, 1);
	double until = now() + 30;
	for (unsigned long turn = 0; !atomic_load_explicit(&stop, memory_order_relaxed); turn++) {
		if (who == 0)
			inner(who, 1);
		else if ((turn & 0xffff) == 0)
			inner(who, 0);
		if ((turn & 0xfff) == 0 && now() > until)
			break;
	}
	ended[who] = now();
}

static void *run(void *arg)
{
	outer((int)(long)arg);
	/* a frame left open past outer's return would take this in too */
	struct timespec d = { 0, 300000000 };
	nanosleep(&d, NULL);
	return NULL;
}

int main(void)
{
	pthread_t t[2];
	for (long i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, run, (void *)i);
	while (atomic_load(&inside) < 2) {
		struct timespec d = { 0, 1000000 };
		nanosleep(&d, NULL);
	}
	printf("ready %.6f\n", now());
	fflush(stdout);
	char line[64];
	while (fgets(line, sizeof(line), stdin) && strncmp(line, "end", 3))
		;
	atomic_store(&stop, 1);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	for (int i = 0; i < 2; i++)
		printf("thread %d ended %.6f inner %ld\n", i, ended[i], calls[i]);
	inner(0, 0);
	printf("done\n");
	return 0;
}
