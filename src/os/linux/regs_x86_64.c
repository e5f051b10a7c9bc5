/* Where Linux meets x86-64: the register set, syscall registers, returns. */
#include <errno.h>
#include <sched.h>
#include <stdbool.h>
#include <signal.h>
#include <stddef.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/user.h>
#include <reticle/error.h>
#include "os/linux/os.h"

static int get_regs(pid_t tid, struct user_regs_struct *r)
{
	return ptrace(PTRACE_GETREGS, tid, NULL, r) ? -errno : 0;
}

static int set_regs(pid_t tid, const struct user_regs_struct *r)
{
	return ptrace(PTRACE_SETREGS, tid, NULL, r) ? -errno : 0;
}

/* One register by its offset in user_regs_struct: one request. */
static int peek_user(pid_t tid, size_t off, uint64_t *out)
{
	errno = 0;
	long v = ptrace(PTRACE_PEEKUSER, tid, (void *)off, NULL);
	if (errno)
		return -errno;
	*out = (uint64_t)v;
	return 0;
}

static const struct { const char *name; size_t off; } named[OS_NREGS] = {
#define R(n) { #n, offsetof(struct user_regs_struct, n) }
	R(rax), R(rbx), R(rcx), R(rdx), R(rsi), R(rdi), R(rbp), R(rsp), R(r8), R(r9), R(r10), R(r11),
	R(r12), R(r13), R(r14), R(r15), R(rip), R(eflags), R(fs_base), R(gs_base),
#undef R
};

int os_get_named_regs(pid_t tid, const char *names[OS_NREGS], uint64_t values[OS_NREGS])
{
	struct user_regs_struct r;
	int err = get_regs(tid, &r);
	for (size_t i = 0; !err && i < OS_NREGS; i++) {
		names[i] = named[i].name;
		memcpy(&values[i], (const char *)&r + named[i].off, 8);
	}
	return err;
}

int os_set_named_reg(pid_t tid, const char *name, uint64_t value)
{
	for (size_t i = 0; i < OS_NREGS; i++)
		if (!strcmp(named[i].name, name))
			return ptrace(PTRACE_POKEUSER, tid, (void *)named[i].off, (void *)value) ? -errno : 0;
	return -ENOENT;
}

int os_get_pc(pid_t tid, uint64_t *pc)
{
	return peek_user(tid, offsetof(struct user_regs_struct, rip), pc);
}

int os_set_pc(pid_t tid, uint64_t pc)
{
	/* one request, not a get and a set: every ptrace request waits for
	 * the stopped thread to be off its CPU, which is slow in a VM */
	return ptrace(PTRACE_POKEUSER, tid, (void *)offsetof(struct user_regs_struct, rip),
		      (void *)pc) ? -errno : 0;
}

int os_clear_trap_flag(pid_t tid)
{
	errno = 0;
	long flags = ptrace(PTRACE_PEEKUSER, tid, (void *)offsetof(struct user_regs_struct, eflags), NULL);
	if (errno)
		return -errno;
	if (!(flags & 0x100))
		return 0;
	return ptrace(PTRACE_POKEUSER, tid, (void *)offsetof(struct user_regs_struct, eflags),
		      (void *)(flags & ~0x100L)) ? -errno : 0;
}

int os_set_sp(pid_t tid, uint64_t sp)
{
	return ptrace(PTRACE_POKEUSER, tid, (void *)offsetof(struct user_regs_struct, rsp),
		      (void *)sp) ? -errno : 0;
}

int os_get_tls_base(pid_t tid, uint64_t *base)
{
	return peek_user(tid, offsetof(struct user_regs_struct, fs_base), base);
}

int os_set_area_base(pid_t tid, uint64_t base)
{
	return ptrace(PTRACE_POKEUSER, tid, (void *)offsetof(struct user_regs_struct, gs_base),
		      (void *)base) ? -errno : 0;
}

int os_get_area_base(pid_t tid, uint64_t *base)
{
	return peek_user(tid, offsetof(struct user_regs_struct, gs_base), base);
}

uint64_t os_tsc(void)
{
	return __builtin_ia32_rdtsc();
}

int os_get_sp(pid_t tid, uint64_t *sp)
{
	struct user_regs_struct r;
	int err = get_regs(tid, &r);
	if (!err)
		*sp = r.rsp;
	return err;
}

int os_emulate_ret(pid_t tid)
{
	struct user_regs_struct r;
	int err = get_regs(tid, &r);
	if (err)
		return err;
	errno = 0;
	long ra = ptrace(PTRACE_PEEKDATA, tid, (void *)r.rsp, NULL);
	if (errno)
		return -errno;
	r.rip = (uint64_t)ra;
	r.rsp += 8;
	return set_regs(tid, &r);
}

int os_clone_flags(pid_t tid, uint64_t *flags)
{
	struct user_regs_struct r;
	int err = get_regs(tid, &r);
	if (err)
		return err;
	switch ((long)r.orig_rax) {
	case SYS_clone:
		*flags = r.rdi;
		return 0;
#ifdef SYS_clone3
	case SYS_clone3: {
		errno = 0;
		long f = ptrace(PTRACE_PEEKDATA, tid, (void *)r.rdi, NULL);
		if (errno)
			return -errno;
		*flags = (uint64_t)f;
		return 0;
	}
#endif
	default:
		*flags = SIGCHLD;   /* fork and vfork share nothing but what vfork implies */
		return 0;
	}
}

long os_seccomp_syscall(pid_t tid)
{
	uint64_t nr;
	return peek_user(tid, offsetof(struct user_regs_struct, orig_rax), &nr) ? -1 : (long)nr;
}

int os_clone_traced(pid_t tid)
{
	struct user_regs_struct r;
	int err = get_regs(tid, &r);
	if (err)
		return err;
	if ((long)r.orig_rax == SYS_clone) {
		if (!(r.rdi & CLONE_UNTRACED))
			return 0;
		r.rdi &= ~(uint64_t)CLONE_UNTRACED;
		return set_regs(tid, &r) ? -errno : 1;
	}
#ifdef SYS_clone3
	if ((long)r.orig_rax == SYS_clone3) {   /* struct clone_args: flags first */
		errno = 0;
		long f = ptrace(PTRACE_PEEKDATA, tid, (void *)r.rdi, NULL);
		if (errno)
			return -errno;
		if (!(f & CLONE_UNTRACED))
			return 0;
		if (ptrace(PTRACE_POKEDATA, tid, (void *)r.rdi, (void *)(f & ~(long)CLONE_UNTRACED)))
			return -errno;
		return 1;
	}
#endif
	return 0;
}

int os_inferior_syscall(pid_t tid, int memfd, uint64_t gadget, long nr, const uint64_t args[6],
			long *ret, int *deferred_sig)
{
	struct user_regs_struct saved, r;
	static const uint8_t syscall_insn[2] = { 0x0f, 0x05 };
	uint8_t borrowed[2];
	bool borrow = !gadget;
	int err;

	*deferred_sig = 0;
	if ((err = get_regs(tid, &saved)))
		return err;
	if (borrow) {
		gadget = saved.rip;
		if ((err = os_mem_read(memfd, gadget, borrowed, 2)) ||
		    (err = os_mem_write(memfd, gadget, syscall_insn, 2)))
			return err;
	}
	r = saved;
	r.rip = gadget;
	r.rax = (uint64_t)nr;
	r.orig_rax = (uint64_t)-1;   /* no syscall restart on the way in */
	r.rdi = args[0];
	r.rsi = args[1];
	r.rdx = args[2];
	r.r10 = args[3];
	r.r8 = args[4];
	r.r9 = args[5];
	if ((err = set_regs(tid, &r)))
		goto restore;
	for (;;) {
		struct os_stop st;
		if (ptrace(PTRACE_SINGLESTEP, tid, NULL, NULL)) {
			err = -errno;
			goto restore;
		}
		if ((err = os_wait_tid(tid, &st)))
			goto restore;
		if (st.kind == OS_SINGLESTEP || st.kind == OS_BREAKPOINT)
			break;
		if (st.kind == OS_SIGNAL) {
			*deferred_sig = st.sig;   /* deliver later, once the state is back */
			continue;
		}
		if (st.kind == OS_EXITED || st.kind == OS_SIGNALED) {
			os_note_ended(&st);   /* its end is the event loop's */
			return -ESRCH;
		}
		if (st.kind == OS_EVENT_EXIT) {
			/* killed (another thread's exit_group): stepped on, it would
			 * end, and a main thread's end is reported only after every
			 * other thread's, which wait in their exit stops for the
			 * event loop: waitpid for it waited for ever */
			os_note_ended(&st);
			err = -ESRCH;
			goto restore;
		}
	}
	if ((err = get_regs(tid, &r)))
		goto restore;
	*ret = (long)r.rax;
restore:
	if (borrow)
		os_mem_write(memfd, gadget, borrowed, 2);
	set_regs(tid, &saved);
	return err;
}

int os_leave_syscall(pid_t tid, int memfd, int *deferred_sig, struct os_stop *other)
{
	struct user_regs_struct r;
	uint8_t orig;
	static const uint8_t int3 = 0xcc;
	*deferred_sig = 0;
	other->kind = OS_OTHER;
	int err = get_regs(tid, &r);
	if (err || (err = os_mem_read(memfd, r.rip, &orig, 1)) ||
	    (err = os_mem_write(memfd, r.rip, &int3, 1)))
		return err;
	struct os_stop st = { .kind = OS_OTHER };
	/* a PTRACE_EVENT_STOP (a group-stop: os_wait_tid notes it) is passed
	 * over; a signal is held (the first; standard signals pending at once
	 * merge anyway) */
	while (!err && (st.kind == OS_OTHER || st.kind == OS_GROUP_STOP || st.kind == OS_SIGNAL)) {
		if (st.kind == OS_SIGNAL && !*deferred_sig)
			*deferred_sig = st.sig;
		if (ptrace(PTRACE_CONT, tid, NULL, NULL))
			err = -errno;
		else
			err = os_wait_tid(tid, &st);
	}
	if (!err && st.kind != OS_BREAKPOINT) {
		*other = st;
		err = -ESRCH;
	}
	if (st.kind != OS_EXITED && st.kind != OS_SIGNALED) {
		os_mem_write(memfd, r.rip, &orig, 1);
		if (!err)
			err = os_set_pc(tid, r.rip);
	}
	return err;
}

int os_call_begin(pid_t tid, uint64_t func, uint64_t a0, uint64_t a1, uint64_t return_to,
		  uint64_t gs_base, int memfd, struct os_saved_regs *saved)
{
	struct user_regs_struct r;
	_Static_assert(sizeof(saved->raw) >= sizeof(r), "os_saved_regs too small");
	int err = get_regs(tid, &r);
	if (err)
		return err;
	memcpy(saved->raw, &r, sizeof(r));
	/* below the red zone, 16-byte aligned, then the return address: at the
	 * callee's entry rsp+8 is 16-byte aligned, as the ABI wants */
	uint64_t sp = ((r.rsp - 256) & ~(uint64_t)15) - 8;
	if ((err = os_mem_write(memfd, sp, &return_to, 8)))
		return err;
	r.rsp = sp;
	r.rip = func;
	r.rdi = a0;
	r.rsi = a1;
	r.rax = 0;
	r.orig_rax = (uint64_t)-1;
	if (gs_base)
		r.gs_base = gs_base;
	return set_regs(tid, &r);
}

int os_call_end(pid_t tid, const struct os_saved_regs *saved, long *ret)
{
	struct user_regs_struct r;
	int err = get_regs(tid, &r);
	if (!err && ret)
		*ret = (long)r.rax;
	memcpy(&r, saved->raw, sizeof(r));
	return set_regs(tid, &r);
}

bool os_has_fsgsbase(void)
{
	return getauxval(AT_HWCAP2) & 2;   /* HWCAP2_FSGSBASE */
}

int os_set_scratch(pid_t tid, uint64_t r0, uint64_t r1)
{
	if (ptrace(PTRACE_POKEUSER, tid, (void *)offsetof(struct user_regs_struct, rax), (void *)r0) ||
	    ptrace(PTRACE_POKEUSER, tid, (void *)offsetof(struct user_regs_struct, rcx), (void *)r1))
		return -errno;
	return 0;
}

/* A thread stopped on its way out of an interrupted system call that the
 * kernel restarts once it resumes (rax holds -ERESTART...): it backs the
 * pc up over the 2-byte 'syscall' then. */
bool os_syscall_restarts(pid_t tid)
{
	struct user_regs_struct r;
	if (get_regs(tid, &r) || (long)r.orig_rax < 0)
		return false;
	long rax = (long)r.rax;
	return rax == -512 || rax == -513 || rax == -514 || rax == -516;   /* ERESTARTSYS ... RESTART_RESTARTBLOCK */
}
