/* ptrace-based process control for Linux. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <reticle/error.h>
#include "os/linux/os.h"

enum {
	TRACE_OPTIONS = PTRACE_O_TRACECLONE | PTRACE_O_TRACEFORK | PTRACE_O_TRACEVFORK |
			PTRACE_O_TRACEEXEC | PTRACE_O_TRACEEXIT | PTRACE_O_EXITKILL |
			/* a vfork's end: a parent whose child reticle let go gets its
			 * instrumented text back (session.c, ptrace_hook) */
			PTRACE_O_TRACEVFORKDONE |
			/* the affinity watch (os_launch) */
			PTRACE_O_TRACESECCOMP,
};

/* Every sched_getaffinity of this process and its children stops for the
 * tracer first, and so does every clone asking for CLONE_UNTRACED (and
 * every clone3, whose flags BPF cannot read): a child reticle does not
 * follow would die of the first int3 of the copies it runs (LeakSanitizer's
 * tracer thread, which then hung its parent for ever). Nothing else stops.
 * A program that may not gain privileges (no CAP_SYS_ADMIN) needs
 * no_new_privs for it, which a traced exec of a setuid program does not get
 * anyway. Without a tracer (a process reticle let go), these calls fail
 * with ENOSYS (glibc then uses clone for clone3). */
static void watch_affinity(void)
{
	struct sock_filter code[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 0, 7),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_sched_getaffinity, 4, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_clone3, 3, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_clone, 0, 3),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0])),   /* low half */
		BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, CLONE_UNTRACED, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRACE),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { sizeof(code) / sizeof(code[0]), code };
	if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) && errno == EACCES &&
	    !prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog);
}

/* The personality flag survives exec and fork (not a setuid exec). */
static void no_aslr(void)
{
	int cur = personality(0xffffffff);
	if (cur == -1 || personality((unsigned long)cur | ADDR_NO_RANDOMIZE) == -1) {
		static const char msg[] = "reticle: warning: cannot turn off address randomization "
					  "(personality refused): addresses may differ between runs\n";
		if (write(2, msg, sizeof(msg) - 1) < 0)
			return;
	}
}

/* The child waits on GO until its parent has seized it, so that its exec
 * is already traced; a failed exec sends errno back through ERR. */
static void launch_child(char *const argv[], int go, int err, unsigned flags)
{
	char byte;
	os_jobctl_child();
	if (read(go, &byte, 1) != 1)
		_exit(127);   /* the parent gave up */
	if (flags & OS_LAUNCH_NO_ASLR)
		no_aslr();
	if (flags & OS_LAUNCH_WATCH_AFFINITY)
		watch_affinity();
	execvp(argv[0], argv);
	int e = errno;
	if (write(err, &e, sizeof(e)) < 0)
		_exit(127);
	_exit(127);
}

/* Runs a seized child up to its exec event stop (0). Stops before the exec
 * are passed over (signals delivered), a group-stop is kept. 1: the child
 * is gone (a failed exec), and reaped. */
static int await_exec(pid_t pid)
{
	int status;
	for (;;) {
		if (waitpid(pid, &status, __WALL) < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (!WIFSTOPPED(status))
			return 1;
		int sig = WSTOPSIG(status), event = status >> 16;
		if (event == PTRACE_EVENT_EXEC)
			return 0;
		if (event == PTRACE_EVENT_STOP && os_is_stop_signal(sig))
			ptrace(PTRACE_LISTEN, pid, NULL, NULL);
		else
			ptrace(PTRACE_CONT, pid, NULL, (void *)(long)(event ? 0 : sig));
	}
}

int os_find_program(const char *prog, char *out, size_t len)
{
	if (strchr(prog, '/')) {
		snprintf(out, len, "%s", prog);
		return 0;
	}
	const char *env = getenv("PATH");
	char *dirs = strdup(env ? env : "/usr/bin:/bin"), *save = NULL;
	bool found = false;
	for (char *d = dirs ? strtok_r(dirs, ":", &save) : NULL; d && !found; d = strtok_r(NULL, ":", &save)) {
		snprintf(out, len, "%s/%s", *d ? d : ".", prog);
		found = !access(out, X_OK);
	}
	free(dirs);
	return found ? 0 : -ENOENT;
}

/* PTRACE_SEIZE rather than PTRACE_TRACEME: only a seized tracee reports
 * group-stops as such (PTRACE_EVENT_STOP) and can be left in one with
 * PTRACE_LISTEN, so that job control works as without reticle. */
int os_launch(char *const argv[], pid_t *pid_out, unsigned flags)
{
	int errp[2], gop[2], child_errno = 0, status, err;
	pid_t pid;

	if (pipe2(errp, O_CLOEXEC))
		return -errno;
	if (pipe2(gop, O_CLOEXEC)) {
		err = -errno;
		close(errp[0]);
		close(errp[1]);
		return err;
	}
	pid = fork();
	if (pid == 0) {
		close(errp[0]);
		close(gop[1]);
		launch_child(argv, gop[0], errp[1], flags);
	}
	err = pid < 0 ? -errno : 0;
	close(errp[1]);
	close(gop[0]);
	if (!err && ptrace(PTRACE_SEIZE, pid, NULL, (void *)(long)TRACE_OPTIONS))
		err = -errno;
	if (!err && write(gop[1], "g", 1) != 1)
		err = -errno;
	close(gop[1]);
	if (!err)
		err = await_exec(pid);
	/* at the exec event, close-on-exec descriptors are closed: no errno */
	ssize_t n = pid < 0 ? 0 : read(errp[0], &child_errno, sizeof(child_errno));
	close(errp[0]);
	if (!err) {
		/* the exec stop is inside execve: finish it, to stand before the
		 * first instruction in user mode as the caller expects */
		int mem = os_mem_open(pid), sig = 0;
		struct os_stop other;
		err = mem < 0 ? mem : os_leave_syscall(pid, mem, &sig, &other);
		if (mem >= 0)
			close(mem);
		if (!err && sig)
			kill(pid, sig);   /* sent again: the event loop delivers it */
		if (err)
			err = -RTL_ERR_TARGET_LAUNCH;
	}
	if (err == 1)
		return n == (ssize_t)sizeof(child_errno) && child_errno ? -child_errno
									 : -RTL_ERR_TARGET_LAUNCH;
	if (err) {
		if (pid > 0) {
			kill(pid, SIGKILL);
			/* past its exit stop (PTRACE_O_TRACEEXIT) to its end */
			while (waitpid(pid, &status, __WALL) == pid && WIFSTOPPED(status))
				ptrace(PTRACE_CONT, pid, NULL, NULL);
		}
		return err;
	}
	*pid_out = pid;
	return 0;
}

bool os_randomizes(pid_t pid)
{
	char path[64], buf[32];
	snprintf(path, sizeof(path), "/proc/%d/personality", (int)pid);
	FILE *f = fopen(path, "r"), *g = fopen("/proc/sys/kernel/randomize_va_space", "r");
	unsigned long pers = 0;
	int level = 2;
	bool off = f && fscanf(f, "%lx", &pers) == 1 && (pers & ADDR_NO_RANDOMIZE);
	if (g && fgets(buf, sizeof(buf), g))
		level = atoi(buf);
	if (f)
		fclose(f);
	if (g)
		fclose(g);
	return !off && level != 0;
}

bool os_is_stop_signal(int sig)
{
	return sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU;
}

bool os_catches_signal(pid_t pid, int sig)
{
	char path[64], line[256];
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	FILE *f = fopen(path, "re");
	unsigned long long mask = 0;
	bool found = false;
	if (!f)
		return true;   /* cannot tell: as if it had */
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "SigCgt: %llx", &mask) == 1) {
			found = true;
			break;
		}
	fclose(f);
	return !found || (sig >= 1 && sig <= 64 && (mask >> (sig - 1) & 1));
}

/* Threads whose group-stop was reported and not yet kept with os_listen
 * (see os_take_missed_stop). */
static pid_t missed[64];
static size_t nmissed;

static void note_missed_stop(pid_t tid)
{
	for (size_t i = 0; i < nmissed; i++)
		if (missed[i] == tid)
			return;
	if (nmissed < sizeof(missed) / sizeof(missed[0]))
		missed[nmissed++] = tid;
}

bool os_take_missed_stop(pid_t tid)
{
	for (size_t i = 0; i < nmissed; i++)
		if (missed[i] == tid) {
			missed[i] = missed[--nmissed];
			return true;
		}
	return false;
}

/* Ends of tasks, and exit stops, met by a wait for one task (a step, an
 * inferior system call) that gives up on it: the event loop's
 * (os_take_ended). */
static struct os_stop ended_stops[64];
static size_t nended;

void os_note_ended(const struct os_stop *st)
{
	if (nended < sizeof(ended_stops) / sizeof(ended_stops[0]))
		ended_stops[nended++] = *st;
}

bool os_take_ended(struct os_stop *st)
{
	if (!nended)
		return false;
	*st = ended_stops[0];
	memmove(ended_stops, ended_stops + 1, --nended * sizeof(*ended_stops));
	return true;
}

static void decode_stop(pid_t tid, int status, struct os_stop *stop)
{
	*stop = (struct os_stop){ .tid = tid, .kind = OS_OTHER };
	if (WIFEXITED(status)) {
		stop->kind = OS_EXITED;
		stop->code = WEXITSTATUS(status);
		return;
	}
	if (WIFSIGNALED(status)) {
		stop->kind = OS_SIGNALED;
		stop->sig = WTERMSIG(status);
		return;
	}
	if (!WIFSTOPPED(status))
		return;
	int sig = WSTOPSIG(status), event = status >> 16;
	if (event == PTRACE_EVENT_STOP) {
		/* a seized tracee's group-stop carries the stop signal; other
		 * PTRACE_EVENT_STOPs (a new task's first stop, PTRACE_INTERRUPT,
		 * the end of a group-stop after PTRACE_LISTEN) carry SIGTRAP */
		stop->kind = os_is_stop_signal(sig) ? OS_GROUP_STOP : OS_OTHER;
		stop->sig = sig;
		if (stop->kind == OS_GROUP_STOP)
			note_missed_stop(tid);
		return;
	}
	if (event) {
		static const enum os_stop_kind kinds[] = {
			[PTRACE_EVENT_CLONE] = OS_EVENT_CLONE, [PTRACE_EVENT_FORK] = OS_EVENT_FORK,
			[PTRACE_EVENT_VFORK] = OS_EVENT_VFORK, [PTRACE_EVENT_EXEC] = OS_EVENT_EXEC,
			[PTRACE_EVENT_EXIT] = OS_EVENT_EXIT, [PTRACE_EVENT_VFORK_DONE] = OS_EVENT_VFORK_DONE,
			[PTRACE_EVENT_SECCOMP] = OS_EVENT_SECCOMP,
		};
		stop->kind = event < (int)(sizeof(kinds) / sizeof(kinds[0])) && kinds[event]
				     ? kinds[event] : OS_OTHER;
		ptrace(PTRACE_GETEVENTMSG, tid, NULL, &stop->msg);
		return;
	}
	siginfo_t si;
	if (ptrace(PTRACE_GETSIGINFO, tid, NULL, &si) < 0) {
		/* No siginfo: a group-stop (job control), not a signal to deliver. */
		stop->kind = OS_GROUP_STOP;
		stop->sig = sig;
		return;
	}
	if (sig == SIGTRAP && si.si_code == SI_KERNEL) {
		stop->kind = OS_BREAKPOINT;   /* int3 */
		return;
	}
	if (sig == SIGTRAP && (si.si_code == TRAP_TRACE || si.si_code == TRAP_BRKPT)) {
		/* a step over a syscall instruction reports TRAP_BRKPT */
		stop->kind = OS_SINGLESTEP;
		return;
	}
	stop->kind = OS_SIGNAL;
	stop->sig = sig;
	/* si_code > 0: the kernel raised it for an instruction (not kill()) */
	stop->fault = (sig == SIGSEGV || sig == SIGBUS || sig == SIGILL || sig == SIGFPE) &&
		      si.si_code > 0;
	if (stop->fault)
		stop->addr = (uint64_t)(uintptr_t)si.si_addr;
}

static int wait_any(struct os_stop *stop, bool (*ours)(void *ctx, pid_t tid, uint64_t pc), void *ctx,
		    bool intr)
{
	int status;
	pid_t tid;
	uint64_t pc;

	do
		tid = waitpid(-1, &status, __WALL);
	while (tid < 0 && errno == EINTR && !intr);
	if (tid < 0)
		return -errno;
	if (ours && WIFSTOPPED(status) && WSTOPSIG(status) == SIGTRAP && !(status >> 16) &&
	    !os_get_pc(tid, &pc) && ours(ctx, tid, pc)) {
		*stop = (struct os_stop){ .tid = tid, .kind = OS_BREAKPOINT, .pc = pc };
		return 0;
	}
	decode_stop(tid, status, stop);
	return 0;
}

int os_wait(struct os_stop *stop, bool (*ours)(void *ctx, pid_t tid, uint64_t pc), void *ctx)
{
	return wait_any(stop, ours, ctx, false);
}

int os_wait_intr(struct os_stop *stop, bool (*ours)(void *ctx, pid_t tid, uint64_t pc), void *ctx)
{
	return wait_any(stop, ours, ctx, true);
}

uint64_t os_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* waitpid has no time limit: poll, sleeping a little longer each time
 * (an inferior call, a new task's first stop: microseconds, usually) */
static int wait_until(pid_t want, struct os_stop *stop, uint64_t deadline)
{
	long nap = 2000;
	for (;;) {
		int status;
		pid_t tid = waitpid(want, &status, __WALL | WNOHANG);
		if (tid < 0 && errno != EINTR)
			return -errno;
		if (tid > 0) {
			decode_stop(tid, status, stop);
			return 0;
		}
		if (os_now_ns() >= deadline)
			return -ETIMEDOUT;
		nanosleep(&(struct timespec){ 0, nap }, NULL);
		if (nap < 1000000)
			nap *= 2;
	}
}

int os_wait_until(struct os_stop *stop, uint64_t deadline)
{
	return wait_until(-1, stop, deadline);
}

int os_wait_tid_until(pid_t want, struct os_stop *stop, uint64_t deadline)
{
	if (want <= 0)
		return -ECHILD;   /* (0 would be any task of reticle's group) */
	return wait_until(want, stop, deadline);
}

/* A wait for one task wakes every WAKE_NS to see whether the task is a
 * zombie: a main thread whose end is held back until every other thread's
 * (which may be waiting in their exit stops for reticle) is never reported
 * to it. That happens when a thread is killed (another's exit_group) just
 * before reticle resumes it for a step or an inferior call: the resume
 * takes it past its exit stop, unseen. The wake is a signal of a timer of
 * the waiting thread, with no SA_RESTART; the timer runs only during the
 * wait. */
enum { WAKE_NS = 50000000 };
#define WAKE_SIGNAL (SIGRTMIN + 3)

static void wake_wait(int sig)
{
	(void)sig;
}

static __thread int wake_state;   /* 0: not made yet, 1: ready, -1: none */
static __thread timer_t wake_timer;

static bool wake_timer_ready(void)
{
	if (wake_state)
		return wake_state > 0;
	struct sigaction sa = { .sa_handler = wake_wait };
	sigemptyset(&sa.sa_mask);
	struct sigevent ev = { .sigev_notify = SIGEV_THREAD_ID, .sigev_signo = WAKE_SIGNAL };
	ev._sigev_un._tid = (pid_t)syscall(SYS_gettid);   /* (glibc 2.36 names it so only) */
	wake_state = !sigaction(WAKE_SIGNAL, &sa, NULL) &&
			     !timer_create(CLOCK_MONOTONIC, &ev, &wake_timer) ? 1 : -1;
	return wake_state > 0;
}

static void wake_timer_set(long ns)
{
	struct itimerspec t = { { 0, ns }, { 0, ns } };
	timer_settime(wake_timer, 0, &t, NULL);
}

int os_wait_tid(pid_t want, struct os_stop *stop)
{
	int status;
	pid_t tid;
	if (want <= 0)
		return -ECHILD;   /* (0 would be any task of reticle's group) */

	bool timed = wake_timer_ready();
	if (timed)
		wake_timer_set(WAKE_NS);
	for (;;) {
		tid = waitpid(want, &status, __WALL);
		if (tid >= 0 || errno != EINTR)
			break;
		if (timed && os_task_ended(want)) {
			/* its end comes to the event loop's wait, after the others' */
			tid = -1;
			errno = ESRCH;
			break;
		}
	}
	int err = errno;
	if (timed)
		wake_timer_set(0);
	if (tid < 0)
		return -err;
	decode_stop(tid, status, stop);
	return 0;
}

int os_resume(pid_t tid, int sig)
{
	return ptrace(PTRACE_CONT, tid, NULL, (void *)(long)sig) ? -errno : 0;
}

int os_listen(pid_t tid)
{
	os_take_missed_stop(tid);
	return ptrace(PTRACE_LISTEN, tid, NULL, NULL) ? -errno : 0;
}

int os_interrupt(pid_t tid)
{
	return ptrace(PTRACE_INTERRUPT, tid, NULL, NULL) ? -errno : 0;
}

bool os_sigtrap_pending(pid_t tid)
{
	char path[64], line[256];
	unsigned long long mask = 0;
	snprintf(path, sizeof(path), "/proc/%d/status", (int)tid);
	FILE *f = fopen(path, "re");
	if (!f)
		return false;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "SigPnd: %llx", &mask) == 1)
			break;
	fclose(f);
	return mask & (1ULL << (SIGTRAP - 1));
}

bool os_sigcont_pending(pid_t pid)
{
	char path[64], line[256];
	unsigned long long mask = 0;
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return false;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "ShdPnd: %llx", &mask) == 1)
			break;
	fclose(f);
	return mask & (1ULL << (SIGCONT - 1));
}

int os_detach(pid_t tid)
{
	return ptrace(PTRACE_DETACH, tid, NULL, NULL) ? -errno : 0;
}

int os_detach_sig(pid_t tid, int sig)
{
	return ptrace(PTRACE_DETACH, tid, NULL, (void *)(long)sig) ? -errno : 0;
}

int os_attach_thread(pid_t tid)
{
	/* no PTRACE_O_EXITKILL: the process is not reticle's to end */
	if (ptrace(PTRACE_SEIZE, tid, NULL, (void *)(long)(TRACE_OPTIONS & ~PTRACE_O_EXITKILL)))
		return -errno;
	if (ptrace(PTRACE_INTERRUPT, tid, NULL, NULL)) {
		int err = -errno;
		ptrace(PTRACE_DETACH, tid, NULL, NULL);
		return err;
	}
	return 0;
}

int os_list_threads(pid_t pid, pid_t **tids, size_t *n)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	DIR *d = opendir(path);
	if (!d)
		return -errno;
	size_t cap = 16;
	*n = 0;
	*tids = malloc(cap * sizeof(**tids));
	for (struct dirent *e; *tids && (e = readdir(d));) {
		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		if (*n == cap) {
			pid_t *nt = realloc(*tids, (cap *= 2) * sizeof(**tids));
			if (!nt) {
				free(*tids);
				*tids = NULL;
				break;
			}
			*tids = nt;
		}
		(*tids)[(*n)++] = (pid_t)atoi(e->d_name);
	}
	closedir(d);
	return *tids ? 0 : -ENOMEM;
}

int os_singlestep(pid_t tid, int *sig)
{
	*sig = 0;
	for (;;) {
		struct os_stop st;
		if (ptrace(PTRACE_SINGLESTEP, tid, NULL, NULL))
			return -errno;
		int err = os_wait_tid(tid, &st);
		if (err)
			return err;
		if (st.kind == OS_EXITED || st.kind == OS_SIGNALED || st.kind == OS_EVENT_EXIT) {
			os_note_ended(&st);   /* killed: see os_inferior_syscall */
			return -ESRCH;
		}
		if (st.kind == OS_SIGNAL && !*sig) {
			*sig = st.sig;   /* held: the step is tried again */
			continue;
		}
		return 0;
	}
}

int os_detach_stopped(pid_t tid)
{
	return ptrace(PTRACE_DETACH, tid, NULL, (void *)(long)SIGSTOP) ? -errno : 0;
}

int os_mem_open(pid_t pid)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/mem", (int)pid);
	int fd = open(path, O_RDWR | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

int os_mem_read(int memfd, uint64_t addr, void *buf, size_t len)
{
	ssize_t n = pread(memfd, buf, len, (off_t)addr);
	if (n == (ssize_t)len)
		return 0;
	return n < 0 ? -errno : -EIO;
}

int os_mem_write(int memfd, uint64_t addr, const void *buf, size_t len)
{
	ssize_t n = pwrite(memfd, buf, len, (off_t)addr);
	if (n == (ssize_t)len)
		return 0;
	return n < 0 ? -errno : -EIO;
}

char *os_environ_get(pid_t pid, const char *name)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/environ", (int)pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return NULL;
	char *entry = NULL, *value = NULL;
	size_t cap = 0, len = strlen(name);
	while (getdelim(&entry, &cap, '\0', f) > 0)
		if (!strncmp(entry, name, len) && entry[len] == '=') {
			value = strdup(entry + len + 1);
			break;
		}
	free(entry);
	fclose(f);
	return value;
}

pid_t os_tgid(pid_t tid)
{
	char path[64], line[256];
	pid_t tgid = -1;
	snprintf(path, sizeof(path), "/proc/%d/status", (int)tid);
	FILE *f = fopen(path, "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Tgid: %d", &tgid) == 1)
			break;
	fclose(f);
	return tgid;
}

int os_map_line(pid_t pid, uint64_t addr, char *line, size_t len)
{
	char path[64];
	int err = -ENOENT;
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return -errno;
	bool line_start = true;   /* not the rest of a line longer than LEN */
	while (err && fgets(line, (int)len, f)) {
		unsigned long lo, hi;
		size_t n = strcspn(line, "\n");
		if (line_start && line[n] && sscanf(line, "%lx-%lx", &lo, &hi) == 2 && addr >= lo &&
		    addr < hi) {
			line[n] = 0;
			err = 0;
		}
		line_start = line[n] != 0;
	}
	fclose(f);
	return err;
}

uint64_t os_auxv(pid_t pid, unsigned long type)
{
	char path[64];
	uint64_t kv[2], value = 0;
	snprintf(path, sizeof(path), "/proc/%d/auxv", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	while (read(fd, kv, sizeof(kv)) == (ssize_t)sizeof(kv) && kv[0] != 0)
		if (kv[0] == type) {
			value = kv[1];
			break;
		}
	close(fd);
	return value;
}

int os_get_sigmask(pid_t tid, uint64_t *mask)
{
	return ptrace(PTRACE_GETSIGMASK, tid, (void *)sizeof(*mask), mask) ? -errno : 0;
}

int os_set_sigmask(pid_t tid, uint64_t mask)
{
	return ptrace(PTRACE_SETSIGMASK, tid, (void *)sizeof(mask), &mask) ? -errno : 0;
}

int os_siginfo_get(pid_t tid, siginfo_t *si)
{
	return ptrace(PTRACE_GETSIGINFO, tid, NULL, si) < 0 ? -errno : 0;
}

int os_siginfo_set(pid_t tid, const siginfo_t *si)
{
	return ptrace(PTRACE_SETSIGINFO, tid, NULL, si) < 0 ? -errno : 0;
}
