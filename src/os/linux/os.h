/* Process control on Linux: the only place that calls ptrace. Generic code
 * sees thread ids, a program counter and memory; registers stay here.
 * Threads are identified by tid; a process (address space) by its tgid. */
#ifndef RETICLE_OS_H
#define RETICLE_OS_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Forks and execs ARGV[0] (searched in PATH) stopped before its first
 * instruction and seized (threads, fork, vfork, exec followed). FLAGS:
 * OS_LAUNCH_WATCH_AFFINITY: the program and its children stop
 * (OS_EVENT_SECCOMP) before each sched_getaffinity, a seccomp filter's
 * trace (the caller changes affinities the program must not see);
 * OS_LAUNCH_NO_ASLR: the program and what it starts run without address
 * randomization (a warning on stderr where the system refuses, as in a
 * container's default seccomp profile). Returns 0, -errno of a failed
 * exec (e.g. -ENOENT), or -RTL_ERR_TARGET_LAUNCH. */
enum { OS_LAUNCH_WATCH_AFFINITY = 1, OS_LAUNCH_NO_ASLR = 2 };
int os_launch(char *const argv[], pid_t *pid, unsigned flags);
/* Whether process PID's addresses are randomized (its personality and
 * the system's setting). */
bool os_randomizes(pid_t pid);
/* PROG as execvp finds it: PROG itself when it has a '/', else the first
 * executable PATH/PROG, in OUT (LEN bytes). Returns 0 or -ENOENT. */
int os_find_program(const char *prog, char *out, size_t len);

/* What stopped a thread, from waitpid status. */
enum os_stop_kind {
	OS_EXITED,       /* thread/process gone: code in status */
	OS_SIGNALED,     /* killed by a signal: number in sig */
	OS_SIGNAL,       /* signal-delivery stop: sig */
	OS_GROUP_STOP,   /* job-control stop (not a signal to deliver) */
	OS_BREAKPOINT,   /* SIGTRAP from an int3: pc is just past it */
	OS_SINGLESTEP,
	OS_EVENT_CLONE, OS_EVENT_FORK, OS_EVENT_VFORK, OS_EVENT_EXEC, OS_EVENT_EXIT,
	OS_EVENT_VFORK_DONE,
	OS_EVENT_SECCOMP,  /* a seccomp filter's trace (os_launch's WATCH_AFFINITY) */
	OS_OTHER,
};

struct os_stop {
	pid_t tid;
	uint64_t pc;      /* OS_BREAKPOINT: just past the int3, when known (else 0) */
	enum os_stop_kind kind;
	int sig;          /* OS_SIGNAL, OS_SIGNALED */
	int code;         /* OS_EXITED exit code */
	unsigned long msg;/* PTRACE_GETEVENTMSG for events (new tid, former tid) */
	bool fault;       /* OS_SIGNAL raised by the thread's own instruction (SIGSEGV...) */
	uint64_t addr;    /* and then the address it touched (si_addr) */
	/* a clone or fork event whose system call the thread has left since
	 * (session.c's leave_event): its clone flags, read while it was inside */
	bool left;
	uint64_t clone_flags;
};

/* Waits for any traced thread. Returns 0, or -ECHILD when none is left.
 * OURS, when given, is asked first about a SIGTRAP stop whose pc follows
 * an int3 of the caller's: then the stop is OS_BREAKPOINT without the
 * siginfo request (one ptrace request fewer per breakpoint). */
int os_wait(struct os_stop *stop, bool (*ours)(void *ctx, pid_t tid, uint64_t pc), void *ctx);
/* os_wait that returns -EINTR when a signal handler of reticle's ran. */
int os_wait_intr(struct os_stop *stop, bool (*ours)(void *ctx, pid_t tid, uint64_t pc), void *ctx);
/* os_wait without OURS that gives up with -ETIMEDOUT at DEADLINE (a
 * CLOCK_MONOTONIC time in ns): for waits that must end, inferior calls. */
int os_wait_until(struct os_stop *stop, uint64_t deadline);
/* CLOCK_MONOTONIC now, in ns. */
uint64_t os_now_ns(void);
/* Waits for one thread (used right after events, e.g. a new child). */
int os_wait_tid(pid_t tid, struct os_stop *stop);
/* The same, giving up with -ETIMEDOUT at DEADLINE (as os_wait_until). */
int os_wait_tid_until(pid_t tid, struct os_stop *stop, uint64_t deadline);
int os_resume(pid_t tid, int sig);
/* Job control. Tracees are seized: a group-stop is OS_GROUP_STOP (sig is
 * the stop signal), and os_listen() leaves the thread in it, as stopped as
 * without reticle, until a SIGCONT; the thread then reports an OS_OTHER
 * stop (sig SIGTRAP) and must be resumed. */
int os_listen(pid_t tid);
bool os_is_stop_signal(int sig);
/* Whether process (or thread) PID has a handler for SIG (SigCgt of its
 * status file, about 10 us); true when that cannot be told. */
bool os_catches_signal(pid_t pid, int sig);
/* A group-stop reported by os_wait or os_wait_tid and then not kept with
 * os_listen was passed over (by an inner wait: an inferior call, a system
 * call, leaving exec). True, once, for such a thread: after resuming it,
 * the event loop interrupts it (os_interrupt) and so gets the group-stop
 * again, or an OS_OTHER stop if it has ended meanwhile. */
bool os_take_missed_stop(pid_t tid);
/* A task's end (OS_EXITED, OS_SIGNALED) that a wait for it met where it
 * could not be served: kept for the event loop, which takes the oldest
 * with os_take_ended (false when none is left). */
void os_note_ended(const struct os_stop *st);
bool os_take_ended(struct os_stop *st);
int os_interrupt(pid_t tid);
/* Whether process PID has a SIGCONT pending (sent, not yet taken). */
bool os_sigcont_pending(pid_t pid);
/* Whether thread TID has a SIGTRAP queued for itself (an int3 it ran). */
bool os_sigtrap_pending(pid_t tid);

/* reticle's own job control (jobctl.c): between os_jobctl_begin and
 * os_jobctl_end the calling thread holds SIGTSTP, SIGTTIN and SIGTTOU
 * (those left at their default action) pending instead of stopping.
 * os_jobctl_shared(SIG): reticle too was sent SIG, e.g. by the terminal to
 * the whole process group. os_jobctl_stop_self(SIG) takes it: reticle
 * stops, as its parent (a shell) expects, and returns once continued.
 * os_launch's child calls os_jobctl_child() to get the mask back. */
void os_jobctl_begin(void);
void os_jobctl_end(void);
void os_jobctl_child(void);
bool os_jobctl_shared(int sig);
void os_jobctl_stop_self(int sig);
int os_detach(pid_t tid);
/* Detaches delivering SIG (0: none). */
int os_detach_sig(pid_t tid, int sig);
/* Seizes thread TID of a running process (clone, fork, exec followed; not
 * killed when reticle exits) and interrupts it: its stop is to be waited
 * for. -EPERM, -ESRCH... */
int os_attach_thread(pid_t tid);
/* The threads of process PID (/proc/PID/task), malloc'd, in *N. */
int os_list_threads(pid_t pid, pid_t **tids, size_t *n);
/* One instruction of stopped thread TID, waited for (a signal that comes
 * meanwhile is returned in *SIG, to deliver later). */
int os_singlestep(pid_t tid, int *sig);
/* Whether stopped thread TID is in a system call the kernel restarts when
 * it resumes, by moving its pc back 2 bytes (to the 'syscall'). */
bool os_syscall_restarts(pid_t tid);
/* Detaches leaving the thread stopped (for a debugger to attach). */
int os_detach_stopped(pid_t tid);

int os_get_pc(pid_t tid, uint64_t *pc);
int os_set_pc(pid_t tid, uint64_t pc);
/* Clears the trap flag a step may leave behind (the kernel clears only
 * the one it set itself, not one a stepped popfq left). */
int os_clear_trap_flag(pid_t tid);
/* The general-purpose registers by name, for a debugger: *N pairs, NAMES
 * static ("rax" .. "r15", "rip", "eflags", "fs_base", "gs_base"), in the
 * order debuggers print them; a register set by name (-ENOENT: no such). */
enum { OS_NREGS = 20 };
int os_get_named_regs(pid_t tid, const char *names[OS_NREGS], uint64_t values[OS_NREGS]);
int os_set_named_reg(pid_t tid, const char *name, uint64_t value);
int os_get_sp(pid_t tid, uint64_t *sp);
int os_set_sp(pid_t tid, uint64_t sp);
/* The thread pointer (fs on x86-64); 0 before libc has set up TLS. */
int os_get_tls_base(pid_t tid, uint64_t *base);
/* The base of the segment reticle gives each thread for its area (%gs on
 * x86-64, which programs leave unused). */
int os_set_area_base(pid_t tid, uint64_t base);
int os_get_area_base(pid_t tid, uint64_t *base);
/* The CPU's time-stamp counter, as the timer snippets read it. */
uint64_t os_tsc(void);
/* Whether user code may read the %fs base with rdfsbase (the kernel
 * enables FSGSBASE): memory tracing computes %fs operands' addresses so. */
bool os_has_fsgsbase(void);
/* Sets the two registers the memory-trace snippet borrows (rax, rcx on
 * x86-64), to put them back when a signal finds a thread inside one. */
int os_set_scratch(pid_t tid, uint64_t r0, uint64_t r1);
/* Pops a return address: emulates a 'ret' at the current pc. */
int os_emulate_ret(pid_t tid);
/* The value of NAME in process PID's environment (malloc'd), or NULL. */
char *os_environ_get(pid_t pid, const char *name);
/* The system call a thread is stopped in (a seccomp stop's), or -1. */
long os_seccomp_syscall(pid_t tid);
/* The signal TID is stopped to receive, as the kernel describes it; put
 * back after reticle ran something in the thread (an inferior call ends
 * at a stop of its own, and a signal injected then would arrive without
 * its fault address). */
int os_siginfo_get(pid_t tid, siginfo_t *si);
int os_siginfo_set(pid_t tid, const siginfo_t *si);
/* The clone or clone3 a thread is stopped in (seccomp stop) made without
 * CLONE_UNTRACED, so that the child is followed like any other: 1 when the
 * flag was there, 0 when not, or -errno. */
int os_clone_traced(pid_t tid);
/* Flags of the clone/clone3/fork syscall a thread is stopped in (event stop). */
int os_clone_flags(pid_t tid, uint64_t *flags);
/* Thread group id of a thread (from /proc). */
pid_t os_tgid(pid_t tid);
/* The line of /proc/PID/maps whose range holds ADDR, without its newline;
 * 0, or -ENOENT when nothing is mapped there (or the line does not fit). */
int os_map_line(pid_t pid, uint64_t addr, char *line, size_t len);

/* Memory of a process through /proc/PID/mem (writes reach read-only text). */
int os_mem_open(pid_t pid);
int os_mem_read(int memfd, uint64_t addr, void *buf, size_t len);
int os_mem_write(int memfd, uint64_t addr, const void *buf, size_t len);

/* Runs system call NR with ARGS in stopped thread TID, using a 'syscall'
 * instruction at GADGET (if GADGET is 0, the current pc is borrowed: only safe
 * while the process has one thread). Registers are restored afterwards; a
 * signal that arrives meanwhile is returned in *deferred_sig (0 if none) and
 * must be delivered on the next resume. Returns 0 and sets *ret. */
int os_inferior_syscall(pid_t tid, int memfd, uint64_t gadget, long nr, const uint64_t args[6],
			long *ret, int *deferred_sig);

/* A thread stopped inside a system call (the exec event stop) finishes it
 * and stops again at the same pc in user mode, where registers can be
 * changed without the syscall's return value overwriting them. A signal
 * that arrives meanwhile (a child's SIGCHLD, sent while the parent was in
 * execve) is held: returned in *deferred_sig (0 if none), for the caller
 * to deliver when it resumes the thread. Any other stop met on the way
 * (its exit event, or its end: it was killed) ends it with -ESRCH and is
 * returned in *other (else other->kind is OS_OTHER), for the event loop. */
int os_leave_syscall(pid_t tid, int memfd, int *deferred_sig, struct os_stop *other);

/* Blocked-signal mask of a stopped thread (bit N-1 for signal N). */
int os_get_sigmask(pid_t tid, uint64_t *mask);
int os_set_sigmask(pid_t tid, uint64_t mask);

/* Inferior function calls: os_call_begin() saves the registers of stopped
 * thread TID and sets it up to call FUNC(A0, A1) returning to RETURN_TO (an
 * int3), with %gs based at GS_BASE during the call (0: as it is); resume it
 * and wait for that breakpoint, then os_call_end() reads the return value
 * and restores the registers, %gs's base included. */
struct os_saved_regs { uint64_t raw[32]; };
int os_call_begin(pid_t tid, uint64_t func, uint64_t a0, uint64_t a1, uint64_t return_to,
		  uint64_t gs_base, int memfd, struct os_saved_regs *saved);
int os_call_end(pid_t tid, const struct os_saved_regs *saved, long *ret);

/* Reads auxv entry TYPE of process PID; 0 if absent. */
uint64_t os_auxv(pid_t pid, unsigned long type);

/* A task's state from /proc/TID/stat (task.c). Field FIELD (numbered as
 * proc(5) does, 3 or more) in OUT (LEN bytes): 0, or -1 when the task is
 * gone or the field absent or too long. */
int os_task_field(pid_t tid, int field, char *out, size_t len);
/* Gone, or a zombie its parent has not reaped yet. */
bool os_task_ended(pid_t pid);
/* The CPU thread TID last ran on, or -1. */
int os_task_cpu(pid_t tid);
/* A kernel thread (PF_KTHREAD), which runs no program. */
bool os_kernel_thread(pid_t pid);

/* CPU placement (cpu.c). A set of CPUs as the kernel's affinity mask. */
struct os_cpus {
	uint64_t bits[16];   /* 1024 CPUs, as glibc's cpu_set_t */
};
int os_cpu_current(void);
pid_t os_gettid(void);
int os_cpus_get(pid_t tid, struct os_cpus *c);
int os_cpus_set(pid_t tid, const struct os_cpus *c);
int os_cpus_count(const struct os_cpus *c);
void os_cpus_one(struct os_cpus *c, int cpu);
bool os_cpus_equal(const struct os_cpus *a, const struct os_cpus *b);

#endif
