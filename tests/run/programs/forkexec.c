/* fork, exec of this same program in the child, and exit statuses. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))
NOINLINE long sum_to(long n) { long s = 0; for (long i = 0; i <= n; i++) s += i; return s; }

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "child")) {
		printf("exec'd child: %ld\n", sum_to(1000));
		return 7;
	}
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		printf("forked child: %ld\n", sum_to(500));
		fflush(stdout);
		execl("/proc/self/exe", argv[0], "child", (char *)NULL);
		_exit(99);
	}
	int status;
	waitpid(pid, &status, 0);
	printf("parent: child exited %d, %ld\n", WEXITSTATUS(status), sum_to(100));
	return 3;
}
