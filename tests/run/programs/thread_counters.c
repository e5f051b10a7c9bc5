/* Counters of threads that come and go: waves of threads whose areas are
 * given back and taken again, a fork while threads run (the child counts
 * on its own, with threads of its own), and threads still blocked when
 * the process exits. Each thread's own counters are added to the shared
 * ones when it ends (docs/engine.md, "Threads"); the program prints the
 * calls of work() it made, which the test compares with reticle's.
 * usage: thread_counters [FORK]   (FORK 0: no fork, for callgrind) */
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile long sink;

/* cmp, then jl and je on the same flags: the block of the second branch
 * starts with the flags live (bbcount's flags-keeping increment) */
__attribute__((noinline)) static int three_way(long a, long b)
{
	if (a < b)
		return -1;
	if (a == b)
		return 0;
	return 1;
}

__attribute__((noinline)) void work(long i)
{
	sink += three_way(i % 5, 2);
}

static void *calls(void *arg)
{
	long n = (long)arg;
	for (long i = 0; i < n; i++)
		work(i);
	return NULL;
}

static long spawn(int nthreads, long base)
{
	pthread_t t[16];
	long total = 0;
	for (int i = 0; i < nthreads; i++) {
		total += base + i;
		pthread_create(&t[i], NULL, calls, (void *)(base + i));
	}
	for (int i = 0; i < nthreads; i++)
		pthread_join(t[i], NULL);
	return total;
}

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t never_cv = PTHREAD_COND_INITIALIZER;
static sem_t all_arrived;
static int arrived;

static void *calls_then_block(void *arg)
{
	calls(arg);
	pthread_mutex_lock(&mu);
	if (++arrived == 4)
		sem_post(&all_arrived);
	/* the mutex is let go once blocked here: main, which takes it after
	 * the last one's post, goes on only then, so every instruction before
	 * is run (a deterministic count) */
	while (1)
		pthread_cond_wait(&never_cv, &mu);
	return NULL;
}

int main(int argc, char **argv)
{
	int fork_too = argc < 2 || atoi(argv[1]);
	long total = 0;
	for (int wave = 0; wave < 10; wave++)
		total += spawn(7, 1000 * (wave + 1));

	/* threads running while the process forks */
	pthread_t t[4];
	for (int i = 0; i < 3; i++)
		pthread_create(&t[i], NULL, calls, (void *)5000);
	total += 3 * 5000;
	if (fork_too) {
		fflush(stdout);
		pid_t child = fork();
		if (child == 0) {
			calls((void *)777);
			long mine = 777 + spawn(2, 1111);
			printf("child: %ld calls\n", mine);
			fflush(stdout);
			_exit(0);
		}
		int status;
		waitpid(child, &status, 0);
		total += 777 + 1111 + 1112;
	}
	for (int i = 0; i < 3; i++)
		pthread_join(t[i], NULL);

	sem_init(&all_arrived, 0, 0);
	for (int i = 0; i < 4; i++)
		pthread_create(&t[i], NULL, calls_then_block, (void *)2500);
	total += 4 * 2500;
	sem_wait(&all_arrived);
	pthread_mutex_lock(&mu);
	pthread_mutex_unlock(&mu);
	printf("work: %ld calls\n", total);
	fflush(stdout);
	exit(0);
}
