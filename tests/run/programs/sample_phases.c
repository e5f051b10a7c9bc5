/* CPU-bound phases of known CPU time for the sample collector: spins (an
 * arithmetic loop, no call inside, so a sample taken in it lands in the
 * function itself) in nested, recursive and mutually recursive functions,
 * in two threads (each in its own function) and in a forked child process.
 * The program measures each function's own part with the CPU-time clock of
 * the thread that runs it (CLOCK_THREAD_CPUTIME_ID; the child its process's,
 * CLOCK_PROCESS_CPUTIME_ID) and prints "truth FUNCTION SELF_CPU_SECONDS" for
 * the oracle (sample_oracle.py); the child prints its own line before it
 * exits with status 0. The parent exits with status 5.
 * usage: sample_phases [SCALE]   (SCALE multiplies every phase; default 1) */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>

#define NOINLINE __attribute__((noinline, noipa))
#define KEEP() __asm__ volatile("" ::: "memory")

static double scale = 1.0;
static double ns_per_iter;	/* of spin_iters, calibrated at start */

static double cpu_now(clockid_t c)
{
	struct timespec t;
	clock_gettime(c, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* The spin: integer arithmetic that the compiler cannot fold, no call.
 * always_inline: its instructions are the calling function's. */
static inline __attribute__((always_inline)) uint64_t spin_iters(uint64_t n, uint64_t x)
{
	for (uint64_t i = 0; i < n; i++) {
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
		x ^= x >> 29;
		__asm__ volatile("" : "+r"(x));
	}
	return x;
}

static volatile uint64_t sink;

/* spin for about S seconds of CPU: a fixed iteration count (from the
 * calibration), so a preempted thread does the same work; the truth is
 * measured around it with the thread's CPU clock. */
#define SPIN(acc, clk, s) do { \
	uint64_t n_ = (uint64_t)((s) * scale * 1e9 / ns_per_iter); \
	double t_ = cpu_now(clk); \
	sink = spin_iters(n_, sink + 1); \
	acc += cpu_now(clk) - t_; \
} while (0)
#define TSPIN(acc, s) SPIN(acc, CLOCK_THREAD_CPUTIME_ID, s)

static double t_outer, t_inner, t_rec, t_even, t_odd, t_flat, t_worker_a, t_worker_b, t_child;

/* nested: outer spins, then calls inner, which spins */
NOINLINE void sp_inner(void) { TSPIN(t_inner, 0.15); KEEP(); }
NOINLINE void sp_outer(void)
{
	TSPIN(t_outer, 0.10);
	sp_inner();
	KEEP();
}

/* recursion: each of the 11 levels spins */
NOINLINE int sp_rec(int n)
{
	TSPIN(t_rec, 0.025);
	int r = n ? sp_rec(n - 1) : 0;
	KEEP();
	return r + 1;
}

/* mutual recursion: even spins longer than odd */
NOINLINE int sp_odd(int n);
NOINLINE int sp_even(int n)
{
	TSPIN(t_even, 0.04);
	int r = n ? sp_odd(n - 1) : 1;
	KEEP();
	return r;
}
NOINLINE int sp_odd(int n)
{
	TSPIN(t_odd, 0.02);
	int r = n ? sp_even(n - 1) : 0;
	KEEP();
	return r;
}

/* a plain leaf, called from main */
NOINLINE void sp_flat(void) { TSPIN(t_flat, 0.20); KEEP(); }

/* two threads, each in its own function */
NOINLINE void *sp_worker_a(void *arg) { (void)arg; TSPIN(t_worker_a, 0.30); KEEP(); return NULL; }
NOINLINE void *sp_worker_b(void *arg) { (void)arg; TSPIN(t_worker_b, 0.20); KEEP(); return NULL; }

/* the forked child */
NOINLINE void sp_child(void) { SPIN(t_child, CLOCK_PROCESS_CPUTIME_ID, 0.30); KEEP(); }

int main(int argc, char **argv)
{
	if (argc > 1)
		scale = atof(argv[1]);
	/* calibration: ns per iteration of the spin, on the thread's CPU clock */
	uint64_t n = 2000000;
	double c0 = cpu_now(CLOCK_THREAD_CPUTIME_ID);
	sink = spin_iters(n, 1);
	double c1 = cpu_now(CLOCK_THREAD_CPUTIME_ID);
	ns_per_iter = (c1 - c0) * 1e9 / (double)n;
	if (ns_per_iter < 0.05)
		ns_per_iter = 0.05;

	fflush(stdout);
	pid_t pid = fork();
	if (pid < 0) {
		perror("fork");
		return 1;
	}
	if (pid == 0) {
		sp_child();
		printf("truth sp_child %.6f\n", t_child);
		fflush(stdout);
		_exit(0);
	}

	sp_outer();
	sp_outer();
	int r = sp_rec(10);
	int e = sp_even(7);
	sp_flat();

	pthread_t a, b;
	pthread_create(&a, NULL, sp_worker_a, NULL);
	pthread_create(&b, NULL, sp_worker_b, NULL);
	pthread_join(a, NULL);
	pthread_join(b, NULL);

	int st;
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		fprintf(stderr, "sample_phases: the child failed\n");
		return 1;
	}
	printf("truth sp_outer %.6f\n", t_outer);
	printf("truth sp_inner %.6f\n", t_inner);
	printf("truth sp_rec %.6f\n", t_rec);
	printf("truth sp_even %.6f\n", t_even);
	printf("truth sp_odd %.6f\n", t_odd);
	printf("truth sp_flat %.6f\n", t_flat);
	printf("truth sp_worker_a %.6f\n", t_worker_a);
	printf("truth sp_worker_b %.6f\n", t_worker_b);
	printf("calls sp_rec %d sp_even %d\n", r, e);
	return 5;
}
