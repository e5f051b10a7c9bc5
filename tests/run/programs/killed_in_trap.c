/* Another thread ends the process (exit_group) while the main thread
 * stops at reticle's traps, one per function it calls for the first time.
 * The program catches SIGTRAP, so reticle looks at that handler with a
 * system call made in the trapped thread: the kill takes it to its exit
 * stop under that call. Stepped on, the main thread ended, and its end is
 * reported only after every other thread's, which waited in their exit
 * stops for reticle: it waited for ever (gccgo's runtime, which catches
 * every signal, hung once in about 100 runs). */
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#define F(n)                                                                  \
	__attribute__((noinline)) static unsigned f##n(unsigned x)            \
	{                                                                     \
		return x * (n##u + 3u) + (x >> 3);                            \
	}
#define F10(p) F(p##0) F(p##1) F(p##2) F(p##3) F(p##4) F(p##5) F(p##6) F(p##7) F(p##8) F(p##9)
#define F100(p) F10(p##0) F10(p##1) F10(p##2) F10(p##3) F10(p##4) F10(p##5) F10(p##6) \
	F10(p##7) F10(p##8) F10(p##9)
F100(1) F100(2) F100(3) F100(4) F100(5) F100(6) F100(7) F100(8) F100(9)

#define R(n) f##n,
#define R10(p) R(p##0) R(p##1) R(p##2) R(p##3) R(p##4) R(p##5) R(p##6) R(p##7) R(p##8) R(p##9)
#define R100(p) R10(p##0) R10(p##1) R10(p##2) R10(p##3) R10(p##4) R10(p##5) R10(p##6) \
	R10(p##7) R10(p##8) R10(p##9)
static unsigned (*const fns[])(unsigned) = { R100(1) R100(2) R100(3) R100(4) R100(5) R100(6)
					     R100(7) R100(8) R100(9) };
enum { NFNS = sizeof(fns) / sizeof(fns[0]) };

static atomic_uint called;
static volatile unsigned sink;

static void on_trap(int sig)
{
	(void)sig;
}

/* ends the process once the main thread is part way through its calls */
static void *killer(void *arg)
{
	unsigned at = (unsigned)(unsigned long)arg;
	while (atomic_load(&called) < at)
		;
	syscall(SYS_exit_group, 0);
	return NULL;
}

int main(int argc, char **argv)
{
	(void)argv;
	struct sigaction sa = { .sa_handler = on_trap };
	sigaction(SIGTRAP, &sa, NULL);
	raise(SIGTRAP);   /* reticle sees the handler now, and looks at it at each trap */
	printf("calling %d functions\n", NFNS);
	fflush(stdout);
	pthread_t k;
	/* (argc varies where it stops: 2 arguments, at a third of the way) */
	pthread_create(&k, NULL, killer, (void *)(unsigned long)(NFNS / (1 + argc)));
	unsigned x = 1;
	for (;;)
		for (int i = 0; i < NFNS; i++) {
			x = fns[i](x);
			sink = x;
			atomic_store(&called, (unsigned)i + 1);
		}
}
