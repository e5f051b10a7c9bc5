/* The program's own signals (reticle/signal.h) for the shim collector:
 * phases 1, 2 and 3 of known TSC length (8, 16 and 24 million cycles:
 * milliseconds, longer than most times a busy machine takes the
 * observer's CPU away), in turn, N times, in the main thread, and phase
 * 7, 2 ms sleeps, in a second thread at the same time (a signal holds
 * while its thread waits: shim's time is wall-clock); the program prints
 * "truth VALUE CYCLES" (what it spent with each value set) for
 * shim_oracle.py. Natively the signals are no-ops: it runs the same.
 * usage: shim_signals ROUNDS */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <x86intrin.h>
#include <reticle/signal.h>

static uint64_t spent[8];

static void phase(unsigned v, uint64_t cycles)
{
	rtl_signal(v);
	uint64_t t = __rdtsc(), end = t + cycles;
	while (__rdtsc() < end)
		;
	spent[v] += __rdtsc() - t;
	rtl_signal(0);
}

static void *other(void *arg)
{
	unsigned rounds = *(unsigned *)arg;
	for (unsigned i = 0; i < rounds; i++) {
		rtl_signal(7);
		uint64_t t = __rdtsc();
		struct timespec ts = { 0, 2000000 };
		nanosleep(&ts, NULL);
		spent[7] += __rdtsc() - t;
		rtl_signal(0);
		ts.tv_nsec = 1000000;
		nanosleep(&ts, NULL);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	unsigned rounds = argc > 1 ? (unsigned)atoi(argv[1]) : 20;
	pthread_t th;
	pthread_create(&th, NULL, other, &rounds);
	for (unsigned i = 0; i < rounds; i++) {
		phase(1, 8000000);
		phase(2, 16000000);
		phase(3, 24000000);
	}
	pthread_join(th, NULL);
	for (unsigned v = 1; v < 8; v++)
		if (spent[v])
			printf("truth %u %llu\n", v, (unsigned long long)spent[v]);
	printf("signal %s\n", rtl_signal_on() ? "on" : "off");
	return 0;
}
