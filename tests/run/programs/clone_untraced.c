/* Children made with CLONE_UNTRACED, as LeakSanitizer's tracer thread is:
 * untraced, they would die of the first trap of the copies they run (and
 * a parent waiting for one, as LeakSanitizer's does, waited for ever).
 * One shares the memory (a thread-like child), one does not; each calls a
 * function the parent has not called, and reports through its exit code
 * and the shared flag. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>

static volatile int flag;
__attribute__((noinline)) int work(int x) { return x * 3 + 1; }
static int child(void *arg) { flag = work((int)(long)arg); return flag; }

int main(void)
{
	int calls = 0;
	for (int vm = 0; vm < 2; vm++) {
		char *stack = malloc(1 << 16);
		int pid = clone(child, stack + (1 << 16), CLONE_UNTRACED | SIGCHLD | (vm ? CLONE_VM : 0),
				(void *)(long)(13 + vm));
		int st = 0;
		if (pid < 0 || waitpid(pid, &st, __WALL) != pid)
			return 2;
		printf("vm=%d exited=%d code=%d signaled=%d flag=%d\n", vm, WIFEXITED(st), WEXITSTATUS(st),
		       WIFSIGNALED(st), flag);
		calls += vm;   /* work ran in the parent's process for the shared child only */
		free(stack);
	}
	printf("calls of work in this process: %d\n", calls);
	return 0;
}
