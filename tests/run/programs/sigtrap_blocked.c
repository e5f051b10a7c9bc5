/* A program with a SIGTRAP handler of its own (SBCL's error traps are
 * int3s) meets reticle's int3s while SIGTRAP is blocked: first inside
 * another signal's handler whose mask blocks it (before the program ever
 * traps itself: reticle cannot have seen the handler at a SIGTRAP yet),
 * then inside the SIGTRAP handler itself, whose first calls trap. The
 * kernel then resets the handler to SIG_DFL; unrepaired, the program's
 * next int3 kills it. It prints how many traps each handler saw. */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#define NOINLINE __attribute__((noinline, noipa))

static volatile int traps, usr, sum;

NOINLINE void first_in_usr1(int k) { sum += k; }
NOINLINE void first_in_trap(int k) { sum += 2 * k; }

static void on_usr1(int sig)
{
	usr++;
	first_in_usr1(sig);   /* its first call: an int3 with SIGTRAP blocked */
}

static void on_trap(int sig)
{
	traps++;
	first_in_trap(sig);
}

int main(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_trap;
	sigaction(SIGTRAP, &sa, NULL);
	sa.sa_handler = on_usr1;
	sigfillset(&sa.sa_mask);   /* as SBCL's SIGSEGV handler: everything blocked */
	sigaction(SIGUSR1, &sa, NULL);
	raise(SIGUSR1);
	for (int i = 0; i < 3; i++)
		__asm__ volatile("int3");
	raise(SIGUSR1);
	__asm__ volatile("int3");
	printf("SIGUSR1 handled %d, SIGTRAP handled %d, sum %d\n", usr, traps, sum);
	return 0;
}
