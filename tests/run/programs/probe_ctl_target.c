/* The target of the insert/remove test (tests/run/probe_ctl.py): two
 * threads call spin() at full speed from start to end; the main thread
 * reads commands on stdin, and for "run K N" calls step(K % 8) N times in
 * itself and N times in a helper thread at once, then prints "ran K" and
 * the calls it made per argument value: the truth of a probe that was in
 * for exactly that phase. "quit" ends it. */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static atomic_int stop;
static atomic_long per_arg[8];
volatile long sink;

__attribute__((noinline)) void spin(long i)
{
	sink += i;
}

__attribute__((noinline)) void step(long k)
{
	per_arg[k & 7]++;
	sink += k;
}

static atomic_long spun[2];   /* each background thread's calls of spin */

static void *background(void *a)
{
	atomic_long *mine = a;
	for (long i = 0; !stop; i++) {
		spin(i);
		atomic_store_explicit(mine, i + 1, memory_order_relaxed);
	}
	return NULL;
}

/* Until both background threads have called spin again since SEEN: a
 * phase holds spin's calls however briefly its probes are in (reticle
 * ctl answers in milliseconds; a loaded machine may leave them waiting). */
static void await_spins(const long *seen)
{
	for (int i = 0; i < 2; i++)
		while (atomic_load(&spun[i]) < seen[i] + 1000)
			sched_yield();
}

struct phase {
	long k, n;
};

static void *helper(void *a)
{
	const struct phase *ph = a;
	for (long i = 0; i < ph->n; i++)
		step(ph->k + (i & 1));   /* two values: the predicate's and another */
	return NULL;
}

int main(void)
{
	pthread_t bg[2];
	for (int i = 0; i < 2; i++)
		pthread_create(&bg[i], NULL, background, &spun[i]);
	char line[256];
	setvbuf(stdout, NULL, _IOLBF, 0);
	puts("ready");
	while (fgets(line, sizeof(line), stdin)) {
		struct phase ph;
		if (!strncmp(line, "quit", 4))
			break;
		if (sscanf(line, "run %ld %ld", &ph.k, &ph.n) != 2)
			continue;
		for (int v = 0; v < 8; v++)
			per_arg[v] = 0;
		long seen[2] = { atomic_load(&spun[0]), atomic_load(&spun[1]) };
		pthread_t h;
		pthread_create(&h, NULL, helper, &ph);
		for (long i = 0; i < ph.n; i++)
			step(ph.k);
		pthread_join(h, NULL);
		await_spins(seen);
		printf("ran %ld", ph.k);
		for (int v = 0; v < 8; v++)
			printf(" %ld", (long)per_arg[v]);
		putchar('\n');
	}
	stop = 1;
	for (int i = 0; i < 2; i++)
		pthread_join(bg[i], NULL);
	return 0;
}
