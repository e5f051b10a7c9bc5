/* An in-process sampling profiler's walk (backtrace(), as gperftools and
 * pprof-rs do on SIGPROF) must reach main from wherever the signal came:
 * under calltime, 28% of the walks stopped at the interrupted frame when
 * the signal came inside a copy's timer code, which has no unwind rows of
 * the original's. Prints whether walks that short were under 1% of them
 * (natively none are). */
#include <execinfo.h>
#include <signal.h>
#include <stdio.h>
#include <sys/time.h>

static volatile unsigned long sink;
static volatile int samples, shallow;

static void on_prof(int sig)
{
	(void)sig;
	void *frames[64];
	/* the handler, the signal return, the interrupted frame, rec or main,
	 * libc's start: fewer is a walk stopped early */
	if (backtrace(frames, 64) < 5)
		shallow++;
	samples++;
}

__attribute__((noinline)) unsigned long leaf(unsigned long x)
{
	for (int i = 0; i < 50; i++)
		x = x * 6364136223846793005ul + 1;
	return x;
}

__attribute__((noinline)) unsigned long rec(int d, unsigned long x)
{
	if (!d)
		return leaf(x);
	return rec(d - 1, x + (unsigned long)d) ^ leaf(x);
}

int main(void)
{
	struct sigaction sa = { .sa_handler = on_prof };
	sigaction(SIGPROF, &sa, NULL);
	void *warm[4];
	backtrace(warm, 4);   /* (loads libgcc_s before the timer starts) */
	struct itimerval it = { { 0, 1000 }, { 0, 1000 } };
	setitimer(ITIMER_PROF, &it, NULL);
	for (int k = 0; k < 1500000; k++)
		sink += rec(10, (unsigned long)k);
	struct itimerval off = { { 0, 0 }, { 0, 0 } };
	setitimer(ITIMER_PROF, &off, NULL);
	printf("samples: %s\n", samples >= 20 ? "20 or more" : "fewer than 20");
	printf("walks stopped early: %s\n", shallow * 100 < samples ? "under 1%" : "1% or more");
	return 0;
}
