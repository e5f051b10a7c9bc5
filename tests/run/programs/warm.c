/* Warm-start fixture: only_with_arg runs when the program has an argument,
 * so a run without one leaves it on the warm-start list unused. With the
 * argument "fork", a child runs in_child and ends first, then the parent
 * runs in_parent: two images of one binary in one run, each saving its
 * list and copies. */
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

__attribute__((noinline)) int only_with_arg(int x) { return x * 3 + 1; }
__attribute__((noinline)) int common(int x) { return x + 2; }
__attribute__((noinline)) int in_child(int x) { return x * 5 - 1; }
__attribute__((noinline)) int in_parent(int x) { return x * 7 + 3; }

int main(int argc, char **argv)
{
	int v = common(argc);
	if (argc > 1 && !strcmp(argv[1], "fork")) {
		pid_t pid = fork();
		if (pid == 0)
			return in_child(v) & 1;
		int st;
		waitpid(pid, &st, 0);
		printf("%d %d\n", in_parent(v), WEXITSTATUS(st));
		return 0;
	}
	if (argc > 1)
		v += only_with_arg(v);
	printf("%d\n", v);
	return argc > 1 ? 7 : 0;
}
