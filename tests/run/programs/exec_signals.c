/* Signals that arrive while the process is inside execve. A child sends
 * SIGWINCH (ignored by default, so the program's output does not depend
 * on it) to its parent every 200 us while the parent execs itself again
 * and again. Under reticle each exec stops for the old image's profile
 * and the new one's setup; a signal that came meanwhile stopped the
 * setup, and the new program ran uninstrumented ("the new program runs
 * without instrumentation"): its calls of generation() were not counted.
 * Prints how many generations ran; generation() runs once in each. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

enum { GENERATIONS = 12 };

__attribute__((noinline)) static int generation(int n)
{
	return n + 1;
}

static void pinger(pid_t parent)
{
	struct timespec pause = { 0, 200 * 1000 };
	/* until the parent is gone (this child is then someone else's) */
	while (getppid() == parent && kill(parent, SIGWINCH) == 0)
		nanosleep(&pause, NULL);
	_exit(0);
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 0;
	if (n == 0) {
		pid_t parent = getpid();
		if (fork() == 0)
			pinger(parent);
	}
	int next = generation(n);
	if (next >= GENERATIONS) {
		printf("generations %d\n", next);
		return 0;
	}
	char arg[16];
	snprintf(arg, sizeof(arg), "%d", next);
	execl("/proc/self/exe", argv[0], arg, (char *)NULL);
	perror("execl");
	return 1;
}
