/* Job control under reticle: the target stops and is continued.
 *   thread:  a second thread raises SIGSTOP; a helper process checks that
 *            the spinning main thread really makes no progress, then
 *            sends SIGCONT.
 *   process: a forked child raises SIGSTOP; its parent sees the stop with
 *            waitpid(WUNTRACED), checks that the child stays stopped, and
 *            continues it.
 *   ticker PIDFILE N: writes its pid, prints N numbered lines 2 ms apart,
 *            exits 7 (for kill -STOP/-CONT from a test script); on
 *            SIGTSTP it behaves as a pager does (on_tstp).
 * The output tells what happened; run natively it is the oracle. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t conts;
static volatile unsigned long *counter;
static volatile int done;

static void on_cont(int sig) { conts++; }

static void say(const char *m) { if (write(1, m, strlen(m)) < 0) _exit(9); }

/* As a pager or an editor does on Ctrl-Z: restores the terminal, then stops
 * for real with the default action, and takes the terminal again after. */
static void on_tstp(int sig)
{
	sigset_t set;
	say("TSTP: terminal restored\n");
	signal(SIGTSTP, SIG_DFL);
	sigemptyset(&set);
	sigaddset(&set, SIGTSTP);
	sigprocmask(SIG_UNBLOCK, &set, NULL);
	kill(getpid(), SIGTSTP);   /* stops here until SIGCONT */
	signal(SIGTSTP, on_tstp);
	say("TSTP: resumed\n");
}

static void nap(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts))
		;
}

/* State letter of PID's main thread from /proc ('T' stopped, 't' traced). */
static char state_of(pid_t pid)
{
	char path[64], buf[512];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return '?';
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	char *p = strrchr(buf, ')');
	return p && p[1] ? p[2] : '?';
}

/* Helper: waits (10 s at most) until PID looks stopped and its counter
 * stands still for 300 ms, then continues it. 0 ok, 1 never stopped. */
static int helper(pid_t pid)
{
	for (int i = 0; i < 1000; i++) {
		char st = state_of(pid);
		if (st == 'T' || st == 't') {
			unsigned long c = *counter;
			nap(300);
			if (*counter == c && (state_of(pid) == 'T' || state_of(pid) == 't')) {
				kill(pid, SIGCONT);
				return 0;
			}
		}
		nap(10);
	}
	kill(pid, SIGCONT);
	return 1;
}

static void *stopper(void *arg)
{
	raise(SIGSTOP);   /* this thread only is signalled; the group stops */
	done = 1;
	return NULL;
}

static int mode_thread(void)
{
	pid_t self = getpid(), h = fork();
	if (h == 0)
		_exit(helper(self));
	pthread_t t;
	pthread_create(&t, NULL, stopper, NULL);
	while (!done)
		(*counter)++;
	pthread_join(t, NULL);
	int status;
	waitpid(h, &status, 0);
	printf("thread: %s, SIGCONT handled %d time(s)\n",
	       WEXITSTATUS(status) == 0 ? "stopped until continued" : "never stopped", (int)conts);
	return 0;
}

static int mode_process(void)
{
	pid_t c = fork();
	if (c == 0) {
		raise(SIGSTOP);
		printf("child: continued, SIGCONT handled %d time(s)\n", (int)conts);
		fflush(stdout);
		_exit(3);
	}
	int status;
	waitpid(c, &status, WUNTRACED);
	printf("parent: child %s\n", WIFSTOPPED(status) ? "stopped" : "did not stop");
	fflush(stdout);
	nap(300);
	pid_t r = waitpid(c, &status, WNOHANG);
	char st = state_of(c);
	printf("parent: child %s\n", r == 0 && (st == 'T' || st == 't') ? "stays stopped" : "ran on");
	fflush(stdout);
	kill(c, SIGCONT);
	if (r == 0)
		waitpid(c, &status, 0);
	printf("parent: child exited %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	return 0;
}

static int mode_ticker(const char *pidfile, int n)
{
	FILE *f = fopen(pidfile, "w");
	if (!f)
		return 1;
	fprintf(f, "%d\n", (int)getpid());
	fclose(f);
	signal(SIGTSTP, on_tstp);
	for (int i = 1; i <= n; i++) {
		printf("tick %d\n", i);
		fflush(stdout);
		nap(2);
	}
	printf("SIGCONT handled %d time(s)\n", (int)conts);
	return 7;
}

int main(int argc, char **argv)
{
	signal(SIGCONT, on_cont);
	counter = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (argc >= 2 && !strcmp(argv[1], "thread"))
		return mode_thread();
	if (argc >= 2 && !strcmp(argv[1], "process"))
		return mode_process();
	if (argc >= 4 && !strcmp(argv[1], "ticker"))
		return mode_ticker(argv[2], atoi(argv[3]));
	fprintf(stderr, "usage: jobstop thread|process|ticker PIDFILE N\n");
	return 2;
}
