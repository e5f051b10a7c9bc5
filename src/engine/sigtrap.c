/* reticle's breakpoints are int3s, which raise SIGTRAP. When one fires while
 * the program has SIGTRAP blocked (inside its own SIGTRAP handler), the
 * kernel forces delivery: it unblocks SIGTRAP and resets the handler to
 * SIG_DFL, so the program's next SIGTRAP would kill it. reticle remembers
 * the handler when the program receives a SIGTRAP of its own (an int3 of
 * its own or one sent), and before it runs any handler (SBCL blocks SIGTRAP
 * in its SIGSEGV handler, where first calls met reticle's int3s before the
 * program's first error trap), and after each breakpoint puts back what
 * the kernel took. */
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include "engine/engine.h"
#include "os/linux/os.h"
#include "util/log.h"



static int query(struct proc *p, pid_t tid, uint64_t act[4])
{
	if (!p->gadget)
		return -1;
	struct window *w = &p->shm.wins[0];
	uint64_t addr = w->addr + w->code_cap;   /* the writable scratch (window.h) */
	long ret;
	if (proc_syscall(p, tid, SYS_rt_sigaction, SIGTRAP, 0, addr, 8, 0, 0, &ret) || ret)
		return -1;
	memcpy(act, window_local(w, addr), 32);
	return 0;
}

void sigtrap_remember(struct proc *p, pid_t tid)
{
	uint64_t act[4] = { 0 };
	siginfo_t si;
	bool info = !os_siginfo_get(tid, &si);
	int q = query(p, tid, act);
	if (info)   /* the signal goes on as it came (SBCL reads a fault's address) */
		os_siginfo_set(tid, &si);
	rtl_debug("SIGTRAP disposition: query %d handler %#llx", q, (unsigned long long)act[0]);
	if (!q && act[0] != (uint64_t)SIG_DFL && act[0] != (uint64_t)SIG_IGN) {
		memcpy(p->trap_act, act, sizeof(act));
		p->trap_act_saved = true;
	}
}

/* At most every 10 ms: a read of the status file costs about 10 us, and a
 * program that takes thousands of signals a second without a SIGTRAP
 * handler would pay it at each. A handler installed within the 10 ms
 * before a signal whose handler meets reticle's int3 is then missed. */
void sigtrap_remember_once(struct proc *p, pid_t tid)
{
	enum { EVERY_NS = 10000000 };
	uint64_t now = os_now_ns();
	if (p->trap_act_saved || (p->trap_looked_ns && now - p->trap_looked_ns < EVERY_NS))
		return;
	p->trap_looked_ns = now;
	if (os_catches_signal(p->pid, SIGTRAP))
		sigtrap_remember(p, tid);
}

void sigtrap_repair(struct proc *p, pid_t tid)
{
	uint64_t act[4] = { 0 };
	if (!p->trap_act_saved)
		return;
	int q = query(p, tid, act);
	rtl_debug("SIGTRAP repair: query %d handler %#llx", q, (unsigned long long)act[0]);
	if (q || act[0] != (uint64_t)SIG_DFL)
		return;
	struct window *w = &p->shm.wins[0];
	uint64_t addr = w->addr + w->code_cap;
	long ret;
	memcpy(window_local(w, addr), p->trap_act, 32);
	if (proc_syscall(p, tid, SYS_rt_sigaction, SIGTRAP, addr, 0, 8, 0, 0, &ret) || ret)
		return;
	/* SIGTRAP stays unblocked, as the kernel left it. The handler is the
	 * process's, and its reset may be another thread's doing (SBCL: a
	 * thread made in pthread_create's window with every signal blocked
	 * met an int3 while the main thread's was served first): blocking
	 * SIGTRAP in TID then left it blocked in the main thread for good,
	 * and SBCL's next error trap killed it. Where TID was the one inside
	 * a handler, the handler's return restores its mask anyway. */
	rtl_debug("pid %d: SIGTRAP handler restored after a breakpoint inside it", (int)p->pid);
}
