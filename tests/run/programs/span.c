/* The edges of a run's span (tests/run/span.py): phases between function
 * calls, and events (a signal, a dlopen, a fork, an exec) between runs of
 * tick(). Each mode says how many ticks followed its event. */
#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define KEEP __attribute__((noinline, noclone))

volatile int sink;

KEEP int work(int n)
{
	int s = 0;
	for (int i = 0; i < n; i++)
		s += i * i % 7;
	sink = s;
	return s;
}

KEEP void phase_a(void) { for (int i = 0; i < 100; i++) work(50); }
KEEP void parse(void) { puts("parse"); }
KEEP void phase_b(void) { for (int i = 0; i < 300; i++) work(20); }
KEEP void emit(void) { puts("emit"); }
KEEP void tick(void) { for (int i = 0; i < 100; i++) sink += i; }

static void ticks(int n)
{
	for (int i = 0; i < n; i++)
		tick();
}

static void on_usr1(int sig) { (void)sig; }

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "phases";
	if (!strcmp(mode, "phases")) {
		phase_a();
		parse();
		phase_b();
		emit();
		phase_a();
	} else if (!strcmp(mode, "signal")) {
		signal(SIGUSR1, on_usr1);
		ticks(100);
		raise(SIGUSR1);
		ticks(50);
		printf("after 50\n");
	} else if (!strcmp(mode, "dlopen")) {
		ticks(100);
		if (!dlopen("libm.so.6", RTLD_NOW))
			return 1;
		ticks(70);
		printf("after 70\n");
	} else if (!strcmp(mode, "fork")) {
		ticks(100);
		fflush(stdout);
		pid_t c = fork();
		if (c == 0) {
			ticks(30);
			_exit(0);
		}
		waitpid(c, NULL, 0);
		ticks(40);
		printf("after 40 (child 30)\n");
	} else if (!strcmp(mode, "exec")) {
		ticks(100);
		fflush(stdout);
		execl("/proc/self/exe", argv[0], "after-exec", (char *)NULL);
		return 1;
	} else if (!strcmp(mode, "after-exec")) {
		ticks(25);
		printf("after 25\n");
	} else if (!strcmp(mode, "loop")) {   /* about a second */
		for (int i = 0; i < 2000; i++) {
			ticks(10);
			usleep(500);
		}
	}
	return 0;
}
