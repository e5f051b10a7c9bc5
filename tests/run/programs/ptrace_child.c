/* A program that traces its own child, as gdb and strace do: the child
 * asks to be traced (PTRACE_TRACEME) and execs; the parent sees the exec's
 * stop, reads a register, lets it run to its end. Under reticle the child
 * cannot be traced twice: reticle lets it go at its ptrace() call (and,
 * for a vfork child, gives the parent its instrumented text back when it
 * goes on). argv[1]: fork or vfork. The output is the oracle natively. */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

__attribute__((noinline)) int report(const char *what, int v)
{
	return printf("%s %d\n", what, v);
}

int main(int argc, char **argv)
{
	int use_vfork = argc > 1 && !strcmp(argv[1], "vfork");
	for (int round = 0; round < 3; round++) {
		pid_t pid = use_vfork ? vfork() : fork();
		if (pid == 0) {
			if (ptrace(PTRACE_TRACEME, 0, NULL, NULL))
				_exit(99);
			execl("/bin/sh", "sh", "-c", "exit 5", (char *)NULL);
			_exit(98);
		}
		int st;
		waitpid(pid, &st, 0);
		report("stopped at exec", WIFSTOPPED(st) && WSTOPSIG(st) == SIGTRAP);
		errno = 0;
		long rip = ptrace(PTRACE_PEEKUSER, pid, (void *)offsetof(struct user_regs_struct, rip), NULL);
		report("read its pc", errno == 0 && rip != 0);
		ptrace(PTRACE_CONT, pid, NULL, NULL);
		waitpid(pid, &st, 0);
		report("its exit status", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	}
	return 0;
}
