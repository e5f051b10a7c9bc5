/* Asynchronous signals land anywhere in instrumented code, in the middle
 * of a snippet too (memtrace's borrows rax and rcx, and the handler's own
 * snippets borrow the same words): a profiling timer fires every 100 us of
 * CPU time while the main thread does memory-heavy work whose checksum it
 * prints; the handler touches memory of its own. The output is the same
 * whatever the number of signals. usage: async_signals [ROUNDS] */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

static volatile long handled;
static long scratch[256];

__attribute__((noinline)) static void on_prof(int sig)
{
	(void)sig;
	for (int i = 0; i < 256; i++)
		scratch[i] += i;   /* loads and stores of its own */
	handled++;
}

static unsigned data[1 << 16];

__attribute__((noinline)) static unsigned long churn(int rounds)
{
	unsigned long sum = 0;
	for (int r = 0; r < rounds; r++)
		for (unsigned i = 0; i < sizeof(data) / sizeof(*data); i++) {
			data[i] = data[i] * 1103515245u + 12345u + i;   /* rax and rcx busy in the loop */
			sum += data[(i * 7) & 0xffff] >> 3;
		}
	return sum;
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 200;
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_prof;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGPROF, &sa, NULL);
	struct itimerval it = { { 0, 100 }, { 0, 100 } };
	setitimer(ITIMER_PROF, &it, NULL);
	unsigned long sum = churn(rounds);
	struct itimerval off = { { 0, 0 }, { 0, 0 } };
	setitimer(ITIMER_PROF, &off, NULL);
	printf("%lu %s\n", sum, handled > 0 ? "signals handled" : "no signal");
	return 0;
}
