/* What the commands that instrument (run, attach, top, detach, probe,
 * ctl) share: where the warm-start cache lives and how much it may hold,
 * who traces a process, what its binaries are, how attach and launch
 * failures are told, and the signals a launched program is passed. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <signal.h>
#include <unistd.h>
#include <reticle/error.h>
#include "cli.h"

uint64_t cli_cache_max_bytes(void)
{
	const char *v = getenv("RETICLE_CACHE_MAX_MB");
	char *end;
	unsigned long long mb = v ? strtoull(v, &end, 10) : 0;
	return v && *v && !*end ? (uint64_t)mb << 20 : 0;
}

/* $RETICLE_CACHE_DIR, $XDG_CACHE_HOME/reticle or $HOME/.cache/reticle
 * (malloc'd), NULL when none is set. */
char *cli_warm_cache_dir(void)
{
	const char *dir = getenv("RETICLE_CACHE_DIR"), *xdg = getenv("XDG_CACHE_HOME"),
		   *home = getenv("HOME");
	char *out = NULL;
	if (dir && *dir)
		return strdup(dir);
	if (xdg && *xdg == '/') {
		if (asprintf(&out, "%s/reticle", xdg) < 0)
			return NULL;
	} else if (home && *home) {
		if (asprintf(&out, "%s/.cache/reticle", home) < 0)
			return NULL;
	}
	return out;
}

long cli_tracer_pid(pid_t pid)
{
	char path[64], line[256];
	long tracer = -1;
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "TracerPid: %ld", &tracer) == 1)
			break;
	fclose(f);
	return tracer;
}

/* Why ptrace may be refused: Yama's scope, or another user. */
static const char *ptrace_hint(void)
{
	FILE *f = fopen("/proc/sys/kernel/yama/ptrace_scope", "re");
	int scope = 0;
	if (f) {
		if (fscanf(f, "%d", &scope) != 1)
			scope = 0;
		fclose(f);
	}
	if (scope >= 3)
		return "kernel.yama.ptrace_scope is 3: no process may be traced until reboot";
	if (scope >= 1 && geteuid())
		return "kernel.yama.ptrace_scope is above 0: run as root, give reticle CAP_SYS_PTRACE, or "
		       "'sysctl kernel.yama.ptrace_scope=0'";
	return "another user's process needs root";
}

/* The name and pid of PID's tracer, for the message. */
static const char *tracer_of(pid_t pid)
{
	static char buf[300];
	char path[64], comm[256] = "?";
	long tracer = cli_tracer_pid(pid);
	snprintf(path, sizeof(path), "/proc/%ld/comm", tracer);
	FILE *f = fopen(path, "re");
	if (f) {
		if (fgets(comm, sizeof(comm), f))
			comm[strcspn(comm, "\n")] = 0;
		fclose(f);
	}
	snprintf(buf, sizeof(buf), "%s, pid %ld", comm, tracer);
	return buf;
}

int cli_attach_error(const char *cmd, long pid, int err, bool sampling)
{
	if (err == -ESRCH)
		cli_error("%s: no process %ld", cmd, pid);
	else if (err == -EPERM && sampling)
		cli_error("%s: process %ld: not allowed (another user's process needs root)", cmd, pid);
	else if (err == -EPERM)
		cli_error("%s: process %ld: not allowed to trace it (%s)", cmd, pid, ptrace_hint());
	else if (err == -EBUSY)
		cli_error("%s: process %ld is already traced (by %s): detach that first", cmd, pid,
			  tracer_of((pid_t)pid));
	else
		cli_error("%s: process %ld: %s", cmd, pid, rtl_strerror(err));
	return err == -RTL_ERR_BAD_OPTION ? CLI_EXIT_USAGE : CLI_EXIT_FAIL;
}

static volatile pid_t forward_to;

static void forward_signal(int sig, siginfo_t *info, void *uc)
{
	(void)uc;
	if (forward_to > 0 && info->si_code <= 0)
		kill(forward_to, sig);
}

void cli_forward_signals(pid_t pid)
{
	forward_to = pid;
	struct sigaction sa = { .sa_sigaction = forward_signal, .sa_flags = SA_SIGINFO | SA_RESTART };
	sigemptyset(&sa.sa_mask);
	static const int forwarded[] = { SIGINT, SIGQUIT, SIGTERM, SIGHUP, SIGUSR1, SIGUSR2 };
	for (size_t i = 0; i < sizeof(forwarded) / sizeof(*forwarded); i++)
		sigaction(forwarded[i], &sa, NULL);
}

int cli_launch_error(const char *program, int err)
{
	if (err == -RTL_ERR_WRONG_ARCH)
		cli_error("%s: %s (reticle run takes x86-64 programs; reticle sim runs RISC-V "
			  "RV64 and MIPS32 ones)", program, rtl_strerror(err));
	else
		cli_error("%s: %s", program, rtl_strerror(err));
	/* as shells do: 127 not found, 126 found but cannot be run */
	bool cannot_run = err == -EACCES || err == -EISDIR || err == -ENOEXEC || err == -RTL_ERR_NOT_ELF ||
			  err == -RTL_ERR_WRONG_ARCH || err == -RTL_ERR_TRUNCATED || err == -RTL_ERR_BAD_ELF;
	return err == -ENOENT ? 127 : cannot_run ? 126 : CLI_EXIT_FAIL;
}

void cli_paths_add(struct cli_paths *p, const char *path)
{
	for (size_t i = 0; i < p->n; i++)
		if (!strcmp(p->v[i], path))
			return;
	char **v = realloc(p->v, (p->n + 1) * sizeof(*v));
	if (v && (v[p->n] = strdup(path))) {
		p->v = v;
		p->n++;
	} else if (v) {
		p->v = v;
	}
}

void cli_paths_free(struct cli_paths *p)
{
	for (size_t i = 0; i < p->n; i++)
		free(p->v[i]);
	free(p->v);
}

/* The binaries process PID has mapped executable. */
void cli_process_modules(long pid, struct cli_paths *out)
{
	char path[64], line[4096 + 128];
	snprintf(path, sizeof(path), "/proc/%ld/maps", pid);
	FILE *f = fopen(path, "re");
	while (f && fgets(line, sizeof(line), f)) {
		char perms[8] = "", *file = strchr(line, '/');
		if (sscanf(line, "%*s %7s", perms) != 1 || !strchr(perms, 'x') || !file)
			continue;
		file[strcspn(file, "\n")] = 0;
		if (!strstr(file, " (deleted)"))
			cli_paths_add(out, file);
	}
	if (f)
		fclose(f);
}
