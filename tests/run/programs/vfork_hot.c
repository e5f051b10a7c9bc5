/* Functions that turn hot one after another (cover gives their copies up
 * for the original code, holding the threads to move them) in a thread
 * that starts programs with vfork between their calls: a parent waiting in vfork cannot be
 * stopped, so a hold then must not wait for it (CPython's subprocess
 * vforks; under cover a hold there hung for ever). Prints what it
 * computed and how many children ran. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile int done;
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
HOT(0) HOT(1) HOT(2) HOT(3) HOT(4) HOT(5) HOT(6) HOT(7) HOT(8) HOT(9)
HOT(10) HOT(11) HOT(12) HOT(13) HOT(14) HOT(15) HOT(16) HOT(17) HOT(18) HOT(19)

static unsigned long (*const hots[])(unsigned long) = {
	hot0, hot1, hot2, hot3, hot4, hot5, hot6, hot7, hot8, hot9,
	hot10, hot11, hot12, hot13, hot14, hot15, hot16, hot17, hot18, hot19,
};

/* a child by vfork that fails to exec, as CPython's subprocess does for a
 * program that is not there */
static int spawn(void)
{
	pid_t pid = vfork();
	if (pid == 0) {
		execl("/nonexistent/program", "program", (char *)NULL);
		_exit(127);
	}
	int status;
	return pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 127;
}

static void *other(void *arg)
{
	while (!done)
		sink += hots[19](sink);   /* a second thread to hold */
	return arg;
}

int main(void)
{
	long children = 0;
	pthread_t t;
	pthread_create(&t, NULL, other, NULL);
	unsigned long total = 0;
	for (size_t f = 0; f < sizeof(hots) / sizeof(*hots); f++) {   /* one turns hot every 30 ms */
		double end = now() + 0.03;
		unsigned long i = 0;
		while (now() < end) {
			for (int k = 0; k < 200; k++)
				sink += hots[f](i++);
			children += spawn();
		}
		total += hots[f](f + 1000);
	}
	done = 1;
	pthread_join(t, NULL);
	printf("total %lu, children %s\n", total, children > 0 ? "ran" : "none");
	return 0;
}
