/* A process to attach to: it says "ready", spins in at_main for S seconds,
 * then starts a thread (after the attach: the sampler must follow it) that
 * spins in at_thread for S/2 seconds, and forks a child that spins in
 * at_child as long, then exits 0. It prints "truth FUNCTION SECONDS" of
 * each spin (the CPU time of the thread that ran it) for
 * attach_oracle.py.
 * usage: attach_late SECONDS */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>
#include <x86intrin.h>

#define NOINLINE __attribute__((noinline, noipa))

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static double cpu(void)
{
	struct timespec t;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* spins S seconds of wall-clock time; returns the CPU time it took (what
 * cpu-clock samples see, whatever else the machine runs) */
static double spin(double s)
{
	double t = now(), c = cpu();
	volatile uint64_t x = 1;
	while (now() - t < s)
		for (int i = 0; i < 1000; i++)
			x = x * 6364136223846793005ull + 1;
	return cpu() - c;
}

static double secs, t_main, t_thread;

NOINLINE void at_main(void) { t_main = spin(secs); }
NOINLINE void *at_thread(void *arg) { (void)arg; t_thread = spin(secs / 2); return NULL; }
NOINLINE void at_child(void) { printf("truth at_child %.6f\n", spin(secs / 2)); fflush(stdout); }

int main(int argc, char **argv)
{
	secs = argc > 1 ? atof(argv[1]) : 2;
	printf("ready\n");
	fflush(stdout);
	at_main();
	pthread_t th;
	pthread_create(&th, NULL, at_thread, NULL);
	pid_t pid = fork();
	if (pid == 0) {
		at_child();
		_exit(0);
	}
	pthread_join(th, NULL);
	int st;
	waitpid(pid, &st, 0);
	printf("truth at_main %.6f\ntruth at_thread %.6f\n", t_main, t_thread);
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : 1;
}
