/* Phases of known length for calltime: spins (an inline loop on the TSC,
 * no call inside) and sleeps in nested, recursive, mutually recursive and
 * tail-called functions, a longjmp out of a nest, a leaf called 3,000
 * times, and two threads. The
 * program measures each phase itself with CLOCK_MONOTONIC and prints
 * "time FUNCTION TID CALLS INCLUSIVE EXCLUSIVE" (seconds) for the oracle
 * (contexts_oracle.py), "level FUNCTION N SECONDS" for the own time of the
 * recursive call with argument N (a loaded machine stretches a 10 ms spin:
 * the oracle compares each level with what it took), and "thread TID
 * SECONDS" for each worker. */
#pragma GCC diagnostic ignored "-Winfinite-recursion"   /* ph_deep leaves by longjmp */
#include <pthread.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <x86intrin.h>

static double hz;

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static inline void spin(double s)
{
	uint64_t end = __rdtsc() + (uint64_t)(s * hz);
	while (__rdtsc() < end)
		;
}

static int tid(void) { return (int)syscall(SYS_gettid); }

#define NOINLINE __attribute__((noinline, noipa))
#define KEEP() __asm__ volatile("" ::: "memory")

/* Each function's own time, measured inline (no call): a preempted spin
 * or a slow moment between two calls is in the truth too. */
static uint64_t ex_outer, ex_inner, ex_rec, ex_even, ex_odd, ex_deep, ex_after, ex_leaf;
#define OWN(acc, stmt) do { uint64_t t_ = __rdtsc(); stmt; acc += __rdtsc() - t_; } while (0)

/* inner: spin; outer: spin, inner, sleep */
NOINLINE void ph_inner(void) { OWN(ex_inner, spin(0.06)); KEEP(); }
NOINLINE void ph_outer(void)
{
	OWN(ex_outer, spin(0.04));
	ph_inner();
	struct timespec ts = { 0, 50 * 1000000 };
	nanosleep(&ts, NULL);
	KEEP();
}

/* the own time of each level, by argument */
static uint64_t lv_rec[10], lv_mutual[8];
#define OWN_LEVEL(acc, lv, stmt) do { uint64_t l_ = 0; OWN(l_, stmt); acc += l_; lv = l_; } while (0)

/* recursion: each level spins 10 ms */
NOINLINE int ph_rec(int n)
{
	OWN_LEVEL(ex_rec, lv_rec[n], spin(0.01));
	int r = n ? ph_rec(n - 1) : 0;
	KEEP();
	return r + 1;
}

/* mutual recursion */
NOINLINE int ph_odd(int n);
NOINLINE int ph_even(int n) { OWN_LEVEL(ex_even, lv_mutual[n], spin(0.005)); int r = n ? ph_odd(n - 1) : 1; KEEP(); return r; }
NOINLINE int ph_odd(int n) { OWN_LEVEL(ex_odd, lv_mutual[n], spin(0.005)); int r = n ? ph_even(n - 1) : 0; KEEP(); return r; }

/* a longjmp out of three frames */
static jmp_buf jb;
NOINLINE void ph_deep(int n) { OWN(ex_deep, spin(0.004)); if (!n) longjmp(jb, 1); ph_deep(n - 1); KEEP(); }
NOINLINE void ph_after(void) { OWN(ex_after, spin(0.01)); KEEP(); }

/* a leaf called thousands of times: past its first calls in a thread,
 * calltime times a sample of them and estimates the rest */
NOINLINE void ph_leaf(void) { OWN(ex_leaf, spin(0.00002)); KEEP(); }

static void *worker(void *arg)
{
	double secs = *(double *)arg, t0 = now();
	spin(secs);
	double span = now() - t0;
	printf("time worker %d 1 %.6f %.6f\n", tid(), span, span);
	printf("thread %d %.6f\n", tid(), span);
	return NULL;
}

int main(void)
{
	double a = now();
	uint64_t t0 = __rdtsc();
	struct timespec ts = { 0, 20 * 1000000 };
	nanosleep(&ts, NULL);
	hz = (double)(__rdtsc() - t0) / (now() - a);
	int me = tid();

	double s = now();
	ph_outer();
	ph_outer();
	double outer = now() - s;
	/* the measured phases: outer's exclusive part is its spins */
	printf("time ph_outer %d 2 %.6f %.6f\n", me, outer, ex_outer / hz);
	printf("time ph_inner %d 2 %.6f %.6f\n", me, ex_inner / hz, ex_inner / hz);

	s = now();
	int r = ph_rec(9);
	double rec = now() - s;
	printf("time ph_rec %d %d %.6f %.6f\n", me, r, rec, ex_rec / hz);

	s = now();
	int e = ph_even(7);
	double mutual = now() - s;
	printf("time ph_even %d 4 %.6f %.6f\n", me, mutual, ex_even / hz);
	printf("time ph_odd %d 4 - %.6f\n", me, ex_odd / hz);
	for (int n = 0; n < 10; n++)
		printf("level ph_rec %d %.6f\n", n, lv_rec[n] / hz);
	for (int n = 0; n < 8; n++)
		printf("level ph_mutual %d %.6f\n", n, lv_mutual[n] / hz);

	s = now();
	for (int i = 0; i < 5; i++) {
		if (!setjmp(jb))
			ph_deep(2);
		ph_after();
	}
	printf("time ph_after %d 5 %.6f %.6f\n", me, ex_after / hz, ex_after / hz);
	printf("time ph_deep %d 15 - %.6f\n", me, ex_deep / hz + 0 * e);

	for (int i = 0; i < 3000; i++)
		ph_leaf();
	/* "sampled": most of its calls are timed by estimate, which a
	 * preemption during an untimed one escapes (the oracles allow 10%) */
	printf("time ph_leaf %d 3000 %.6f %.6f sampled\n", me, ex_leaf / hz, ex_leaf / hz);

	pthread_t th[2];
	double secs[2] = { 0.15, 0.25 };
	for (int i = 0; i < 2; i++)
		pthread_create(&th[i], NULL, worker, &secs[i]);
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	return 0;
}
