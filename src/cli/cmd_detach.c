/* reticle detach PID: ends the 'reticle attach' measuring process PID, from
 * another terminal, as Ctrl-C in its own would: the profile is written and
 * the process left as it was. */
#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "cli.h"
#include "os/linux/os.h"

static void usage(FILE *f)
{
	fputs("usage: reticle detach PID\n"
	      "\n"
	      "Ends the 'reticle attach' session measuring process PID: it writes its\n"
	      "profile and leaves PID as it was (instrumentation taken out). Waits until\n"
	      "that is done (at most 60 s).\n", f);
}

/* Process PID's command line (its words NUL-separated, NUL-ended) in BUF:
 * its bytes, 0 when it has none. */
static size_t cmdline(long pid, char *buf, size_t len)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%ld/cmdline", pid);
	FILE *f = fopen(path, "re");
	size_t n = f ? fread(buf, 1, len - 1, f) : 0;
	if (f)
		fclose(f);
	buf[n] = 0;
	return n;
}

/* Whether process PID runs 'reticle attach'; *LAST: its last word. */
static bool is_reticle_attach(long pid, const char **last)
{
	static char buf[4096];
	size_t n = cmdline(pid, buf, sizeof(buf)), len = strlen(buf);
	const char *prog = strrchr(buf, '/') ? strrchr(buf, '/') + 1 : buf;
	*last = buf;
	for (size_t i = 0; i + 1 < n; i++)
		if (!buf[i])
			*last = buf + i + 1;
	return !strcmp(prog, "reticle") && len + 1 < n && !strcmp(buf + len + 1, "attach");
}

/* A sampling attach (no ptrace) measures PID too: the 'reticle attach'
 * process whose last word is PID. */
static long sampler_of(pid_t pid)
{
	char want[32];
	snprintf(want, sizeof(want), "%d", (int)pid);
	DIR *d = opendir("/proc");
	long found = 0;
	for (struct dirent *e; d && !found && (e = readdir(d));) {
		const char *last;
		long cand = strtol(e->d_name, NULL, 10);
		if (cand > 0 && cand != getpid() && is_reticle_attach(cand, &last) && !strcmp(last, want))
			found = cand;
	}
	if (d)
		closedir(d);
	return found;
}

int cmd_detach(int argc, char **argv)
{
	if (argc == 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		usage(stdout);
		return 0;
	}
	char *end;
	long pid = argc == 2 ? strtol(argv[1], &end, 10) : 0;
	if (argc != 2 || !*argv[1] || *end || pid <= 0) {
		cli_error("detach: give the process id that 'reticle attach' measures (usage: reticle detach PID)");
		return CLI_EXIT_USAGE;
	}
	long tracer = cli_tracer_pid((pid_t)pid);
	if (tracer < 0) {
		cli_error("detach: no process %ld", pid);
		return CLI_EXIT_FAIL;
	}
	const char *last;
	long session = tracer > 0 && is_reticle_attach(tracer, &last) ? tracer : 0;
	if (!session && !(session = sampler_of((pid_t)pid))) {
		if (tracer > 0)
			cli_error("detach: process %ld is traced by pid %ld, which is not 'reticle attach'", pid, tracer);
		else
			cli_error("detach: no 'reticle attach' measures process %ld", pid);
		return CLI_EXIT_FAIL;
	}
	if (kill((pid_t)session, SIGINT)) {
		cli_error("detach: cannot signal reticle (pid %ld): %s", session, strerror(errno));
		return CLI_EXIT_FAIL;
	}
	/* done once the session has let go and ended */
	for (int i = 0; i < 6000; i++) {
		if (os_task_ended((pid_t)session))
			return 0;
		nanosleep(&(struct timespec){ 0, 10000000 }, NULL);
	}
	cli_error("detach: reticle (pid %ld) has not ended after 60 s", session);
	return CLI_EXIT_FAIL;
}
