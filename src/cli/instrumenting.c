/* What the commands that instrument (run, attach, top, detach, probe,
 * ctl) share: where the warm-start cache lives and how much it may hold,
 * who traces a process, what its binaries are, how attach and launch
 * failures are told, and the signals a launched program is passed. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <signal.h>
#include <unistd.h>
#include <reticle/error.h>
#include <reticle/session.h>
#include "cli.h"
#include "os/linux/os.h"

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

/* Yama's ptrace scope, -1 without Yama. */
static int yama_scope(void)
{
	FILE *f = fopen("/proc/sys/kernel/yama/ptrace_scope", "re");
	int scope = -1;
	if (f) {
		if (fscanf(f, "%d", &scope) != 1)
			scope = -1;
		fclose(f);
	}
	return scope;
}

/* The line KEY of /proc/PID/status (PID 0: reticle's own) after the key,
 * into BUF; false without it. */
static bool status_line(long pid, const char *key, char *buf, size_t len)
{
	char path[64], line[512];
	size_t n = strlen(key);
	bool found = false;
	if (pid)
		snprintf(path, sizeof(path), "/proc/%ld/status", pid);
	else
		snprintf(path, sizeof(path), "/proc/self/status");
	FILE *f = fopen(path, "re");
	while (f && !found && fgets(line, sizeof(line), f))
		if (!strncmp(line, key, n) && line[n] == ':') {
			snprintf(buf, len, "%s", line + n + 1 + strspn(line + n + 1, " \t"));
			buf[strcspn(buf, "\n")] = 0;
			found = true;
		}
	if (f)
		fclose(f);
	return found;
}

/* Whether reticle may trace any process of its user namespace:
 * CAP_SYS_PTRACE in its effective set (root has it, unless a container
 * took it away). */
static bool can_trace_any(void)
{
	char caps[64];
	return status_line(0, "CapEff", caps, sizeof(caps)) && (strtoull(caps, NULL, 16) >> 19 & 1);
}

/* Why the kernel refused reticle process PID (EPERM): ptrace, and the
 * /proc/PID/mem that sampling reads, make the same access check. The
 * facts reticle can see, in turn: a kernel thread; Yama's scope; another
 * user's process (or other ids: a set-user-ID program); and, when reticle
 * may trace any process (root), whatever remains: a security policy
 * (an LSM such as SELinux, AppArmor or Landlock, of the system or of a
 * sandbox reticle runs in) protecting that process. */
static const char *eperm_reason(long pid)
{
	static char buf[512];
	char ids[128], mine[128];
	int scope = yama_scope();
	bool any = can_trace_any();
	if (os_kernel_thread((pid_t)pid))
		snprintf(buf, sizeof(buf), "it is a kernel thread, which runs no program to measure");
	else if (scope >= 3)
		snprintf(buf, sizeof(buf), "kernel.yama.ptrace_scope is 3: no process may be traced until reboot");
	else if (!any && scope == 2)
		snprintf(buf, sizeof(buf), "kernel.yama.ptrace_scope is 2: only root (CAP_SYS_PTRACE) may trace; "
			 "or 'sysctl kernel.yama.ptrace_scope=0'");
	else if (!any && ((status_line(pid, "Uid", ids, sizeof(ids)) && status_line(0, "Uid", mine, sizeof(mine)) &&
			   strcmp(ids, mine)) ||
			  (status_line(pid, "Gid", ids, sizeof(ids)) && status_line(0, "Gid", mine, sizeof(mine)) &&
			   strcmp(ids, mine))))
		snprintf(buf, sizeof(buf), "it runs as another user, or with other ids (a set-user-ID program): "
			 "that needs root or CAP_SYS_PTRACE");
	else if (!any && scope == 1)
		snprintf(buf, sizeof(buf), "kernel.yama.ptrace_scope is 1: only a process's ancestors may trace it; "
			 "run as root, give reticle CAP_SYS_PTRACE, or 'sysctl kernel.yama.ptrace_scope=0'");
	else if (!any)
		snprintf(buf, sizeof(buf), "the kernel refuses it although it is your own process (it made itself "
			 "non-dumpable, or has capabilities reticle has not, or a security module forbids it): "
			 "root or CAP_SYS_PTRACE may");
	else
		snprintf(buf, sizeof(buf), "the kernel refuses it although reticle runs %swith CAP_SYS_PTRACE: a "
			 "security policy protects that process (a security module such as SELinux, AppArmor or "
			 "Landlock, of the system or of a sandbox reticle runs in)", geteuid() ? "" : "as root ");
	return buf;
}

/* The command name of process PID ("?" when it cannot be read). */
static const char *comm_of(long pid)
{
	static char comm[64];
	char path[64];
	snprintf(comm, sizeof(comm), "?");
	snprintf(path, sizeof(path), "/proc/%ld/comm", pid);
	FILE *f = fopen(path, "re");
	if (f) {
		if (fgets(comm, sizeof(comm), f))
			comm[strcspn(comm, "\n")] = 0;
		fclose(f);
	}
	return comm;
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
	else if (err == -EPERM)
		cli_error("%s: process %ld (%s): not allowed to %s it: %s", cmd, pid, comm_of(pid),
			  sampling ? "read" : "trace", eperm_reason(pid));
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

static struct rtl_session *volatile stop_session;
static volatile sig_atomic_t stop_asked;

static void stop_on(int sig)
{
	(void)sig;
	stop_asked = 1;
	if (stop_session)
		rtl_session_stop(stop_session);
}

void cli_stop_on_signals(struct rtl_session *s, unsigned also)
{
	stop_session = s;
	struct sigaction sa = { .sa_handler = stop_on };
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sigaction(SIGQUIT, &sa, NULL);
	if (also & CLI_STOP_INT)
		sigaction(SIGINT, &sa, NULL);
	if (also & CLI_STOP_PIPE)
		sigaction(SIGPIPE, &sa, NULL);
	else
		signal(SIGPIPE, SIG_IGN);
}

bool cli_stop_asked(void)
{
	return stop_asked;
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
