/* Coverage whose probes remove themselves (engine/sweep.c): a run long
 * enough for several sweeps, with code that first runs late (after blocks
 * of it have been swept elsewhere), a thread, and a fork child that runs
 * blocks its parent's sweeps removed before the fork and blocks of its
 * own. Hot functions whose copies are given up for the original code
 * (patch/revert.c) then run blocks of theirs for the first time: spin()'s
 * late branch in the very call whose loop made it hot (its thread moved
 * out of the copy), phased()'s when the phase changes, split()'s .cold
 * part, given up with it. Its output does not
 * depend on timing. tests/run/cover_sweep.py and cover_gcov.py check it. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile unsigned long sink;
static volatile int phase;

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

__attribute__((noinline)) static unsigned long early(unsigned long x)
{
	if (x % 3 == 0)
		return x / 3;
	if (x % 5 == 1)
		return x * 5 + 1;
	return x + 11;
}

__attribute__((noinline)) static unsigned long late(unsigned long x)
{
	unsigned long r = 0;
	for (int i = 0; i < 4; i++)
		r += (x >> i) & 1 ? early(x + i) : i;
	return r;
}

__attribute__((noinline)) static unsigned long child_only(unsigned long x)
{
	return x % 7 == 2 ? x * 3 : x ^ 0x55;
}

__attribute__((noinline)) static unsigned long never(unsigned long x)
{
	return x * x;   /* not called */
}

__attribute__((noinline)) static unsigned long phased(unsigned long x)
{
	if (phase == 0)
		return x + 1;
	if (x % 2)
		return x * 3;   /* first run once phased() has been hot */
	return x - 1;
}

__attribute__((cold, noinline)) static unsigned long rare(unsigned long x)
{
	return x * 7 + sink;
}

/* Its calls of rare() are in split.cold, which split() jumps into at two
 * places (one in its middle) and which jumps back into split()'s middle:
 * the two are given up together, and split.cold's blocks first run in
 * the original code once phase 2 comes. */
__attribute__((noinline)) static unsigned long split(unsigned long x)
{
	unsigned long r = x + 3;
	if (phase == 2)
		r = rare(x) + (x & 0xff);
	r = r * 2 + (x >> 3);
	if (x % 64 == 9 && phase == 2)
		r ^= rare(r) << 1;
	return r ^ (r >> 7);
}

static void spin(double seconds, unsigned long (*fn)(unsigned long))
{
	double start = now(), end = start + seconds;
	unsigned long i = 0;
	while (now() < end) {
		for (int k = 0; k < 1000; k++)
			sink += fn(i++);
		if (now() > start + seconds * 0.75)
			sink ^= 1;   /* first run late in the call */
	}
}

static void *worker(void *arg)
{
	(void)arg;
	spin(0.08, early);
	return NULL;
}

int main(int argc, char **argv)
{
	(void)argv;
	pthread_t t;
	spin(0.1, early);               /* swept meanwhile */
	spin(0.06, phased);
	phase = 1;
	spin(0.04, phased);
	spin(0.06, split);
	phase = 2;
	spin(0.03, split);
	pthread_create(&t, NULL, worker, NULL);
	pthread_join(t, NULL);
	spin(0.06, late);               /* first run after sweeps */
	pid_t pid = fork();
	if (pid == 0) {
		spin(0.05, early);      /* removed in the parent before the fork */
		spin(0.05, child_only);
		exit(0);   /* not _exit: gcov writes the child's counts at exit */
	}
	int status = 0;
	waitpid(pid, &status, 0);
	if (argc > 5)
		sink += never(sink);
	printf("child %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	return 0;
}
