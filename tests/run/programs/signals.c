/* Signal handlers (on the normal stack and on an alternate stack) entered
 * while instrumented code runs; SIGTRAP raised by the program itself must
 * reach its handler, not reticle. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))
static volatile sig_atomic_t hits, traps;

NOINLINE void on_usr1(int sig) { hits++; }
NOINLINE void on_trap(int sig) { traps++; }

NOINLINE long spin(long n)
{
	long s = 0;
	for (long i = 0; i < n; i++)
		s += i ^ (s >> 3);
	return s;
}

int main(void)
{
	struct sigaction sa;
	static char altstack[65536];
	stack_t ss = { .ss_sp = altstack, .ss_size = sizeof(altstack) };
	sigaltstack(&ss, NULL);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_usr1;
	sigaction(SIGUSR1, &sa, NULL);
	sa.sa_handler = on_trap;
	sa.sa_flags = SA_ONSTACK;
	sigaction(SIGTRAP, &sa, NULL);
	long s = 0;
	for (int i = 0; i < 200; i++) {
		kill(getpid(), SIGUSR1);
		s += spin(1000);
		if (i % 10 == 0)
			raise(SIGTRAP);
	}
	printf("usr1 %d trap %d spin %ld\n", (int)hits, (int)traps, s);
	return 0;
}
