/* reticle's breakpoints are int3s, which raise SIGTRAP. When one fires while
 * the program has SIGTRAP blocked (inside its own SIGTRAP handler), the
 * kernel forces delivery: it unblocks SIGTRAP and resets the handler to
 * SIG_DFL, so the program's next SIGTRAP would kill it. reticle remembers
 * the handler when the program receives a SIGTRAP of its own, and after each
 * breakpoint puts back what the kernel took. */
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
	int q = query(p, tid, act);
	rtl_debug("SIGTRAP disposition: query %d handler %#llx", q, (unsigned long long)act[0]);
	if (!q && act[0] != (uint64_t)SIG_DFL && act[0] != (uint64_t)SIG_IGN) {
		memcpy(p->trap_act, act, sizeof(act));
		p->trap_act_saved = true;
	}
}

void sigtrap_repair(struct proc *p, pid_t tid)
{
	uint64_t act[4] = { 0 }, mask;
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
	/* the handler was running: SIGTRAP was blocked, and stays so until it returns */
	if (!os_get_sigmask(tid, &mask))
		os_set_sigmask(tid, mask | (1ull << (SIGTRAP - 1)));
	rtl_debug("pid %d: SIGTRAP handler restored after a breakpoint inside it", (int)p->pid);
}
