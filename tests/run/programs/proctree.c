/* A tree of processes that tells its own shape: every image prints one
 * line "image PID PARENT_PID KIND MARKS" (KIND: launch, fork or exec;
 * MARKS: how many times it called mark()), and every parent prints
 * "reaped PID STATUS" for each child it waits for. The test compares the
 * profile's process tree and per-image counts with these lines. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))
static volatile long sink;
NOINLINE void mark(long i) { sink += i; }

static void image(const char *kind, long parent, int marks)
{
	for (int i = 0; i < marks; i++)
		mark(i);
	printf("image %ld %ld %s %d\n", (long)getpid(), parent, kind, marks);
	fflush(stdout);
}

static void reap(pid_t pid)
{
	int status;
	waitpid(pid, &status, 0);
	printf("reaped %ld %d\n", (long)pid,
	       WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
	fflush(stdout);
}

int main(int argc, char **argv)
{
	if (argc > 2 && !strcmp(argv[1], "exec")) {
		/* the exec'd image: its "parent" is the image it replaced (same pid) */
		image("exec", (long)getpid(), 10);
		return 40;
	}
	image("launch", 0, 1);
	for (int i = 0; i < 3; i++) {
		pid_t pid = fork();
		if (pid)
			continue;
		long parent = (long)getppid();
		image("fork", parent, 2 + i);
		if (i == 1) {
			execl("/proc/self/exe", argv[0], "exec", "1", (char *)NULL);
			_exit(99);
		}
		if (i == 2) {
			pid_t g = fork();
			if (!g) {
				image("fork", parent = (long)getppid(), 7);
				_exit(33);
			}
			reap(g);
		}
		_exit(10 + i);
	}
	/* children are reaped in order of creation; pids from the lines above */
	for (;;) {
		int status;
		pid_t pid = wait(&status);
		if (pid < 0)
			break;
		printf("reaped %ld %d\n", (long)pid, WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
		fflush(stdout);
	}
	return 5;
}
