/* 2,000 short threads, one after another, each running phase_a() then
 * phase_b() (about 35,000 instructions each, loads from a table of its
 * own). memtrace --sample periodic must trace both phases about equally
 * over the threads: each thread draws its own window offsets (a thread
 * reusing an ended one's area once drew the same, and only phase_a was
 * ever traced). */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>

static uint64_t A[4096], B[4096];
static volatile uint64_t sink;

__attribute__((noinline)) static uint64_t phase_a(uint64_t x)
{
	uint64_t s = 0;
	for (int i = 0; i < 5000; i++) {
		x = x * 6364136223846793005u + 1;
		s += A[x >> 52];
	}
	return s;
}

__attribute__((noinline)) static uint64_t phase_b(uint64_t x)
{
	uint64_t s = 0;
	for (int i = 0; i < 5000; i++) {
		x = x * 6364136223846793005u + 1;
		s += B[x >> 52];
	}
	return s;
}

static void *worker(void *arg)
{
	uint64_t x = (uintptr_t)arg;
	sink += phase_a(x) + phase_b(x);
	return NULL;
}

int main(void)
{
	for (int i = 0; i < 4096; i++) {
		A[i] = (uint64_t)i;
		B[i] = 3 * (uint64_t)i;
	}
	for (long t = 0; t < 2000; t++) {
		pthread_t th;
		pthread_create(&th, NULL, worker, (void *)t);
		pthread_join(th, NULL);
	}
	printf("%lu\n", (unsigned long)sink);
	return 0;
}
