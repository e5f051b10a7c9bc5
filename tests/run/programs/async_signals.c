/* Asynchronous signals land anywhere in instrumented code, in the middle
 * of a snippet too (memtrace's borrows rax and rcx, and the handler's own
 * snippets borrow the same words): a second thread sends the main thread
 * SIGUSR2 every ~50 us while it does memory-heavy work whose checksum it
 * prints; the handler touches memory of its own. The main thread goes on
 * (without changing its checksum) until 300 signals were handled, so the
 * output is the same whatever their number and timing.
 * usage: async_signals [ROUNDS] */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static volatile long handled;
static volatile int done;
static long scratch[256];
static pthread_t main_thread;

__attribute__((noinline)) static void on_signal(int sig)
{
	(void)sig;
	for (int i = 0; i < 256; i++)
		scratch[i] += i;   /* loads and stores of its own */
	handled++;
}

static void *sender(void *arg)
{
	(void)arg;
	struct timespec ts = { 0, 50000 };
	while (!done) {
		pthread_kill(main_thread, SIGUSR2);
		nanosleep(&ts, NULL);
	}
	return NULL;
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
	int rounds = argc > 1 ? atoi(argv[1]) : 100;
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGUSR2, &sa, NULL);
	main_thread = pthread_self();
	pthread_t th;
	pthread_create(&th, NULL, sender, NULL);
	unsigned long sum = churn(rounds), more = 0;
	while (handled < 300)   /* enough signals seen: the rest is not printed */
		more += churn(1);
	done = 1;
	pthread_join(th, NULL);
	printf("%lu %s\n", sum, more || handled >= 300 ? "signals handled" : "?");
	return 0;
}
