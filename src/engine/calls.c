/* RTL_PRIM_CALL, the slow path of the probe model: its snippet is an int3
 * (behind its predicates), and reticle, at the trap, calls every
 * collector's on_call with the point, the snippet's id and the thread's
 * argument registers, then lets the thread go on past the int3. */
#include "engine/engine.h"
#include "engine/session_priv.h"
#include "os/linux/os.h"

bool call_trap(struct proc *p, pid_t tid, uint64_t pc)
{
	const struct call_trap *t = p->patch ? patch_call_trap_at(p, pc - 1) : NULL;
	if (!t)
		return false;
	const char *names[OS_NREGS];
	uint64_t v[OS_NREGS];   /* rax rbx rcx rdx rsi rdi rbp rsp r8..r15 rip */
	if (os_get_named_regs(tid, names, v))
		return true;   /* gone: nothing to tell */
	const struct module *m = &p->mods[t->mod];
	const rtl_function *f = rtl_binary_function(m->bin, t->fn);
	struct rtl_call_event ev = { p->pid, tid, m->path, f->name, t->addr - m->bias, t->kind, t->id,
				     { (int64_t)v[5], (int64_t)v[4], (int64_t)v[3], (int64_t)v[2], (int64_t)v[8],
				       (int64_t)v[9] },
				     (int64_t)v[0] };
	for (size_t c = 0; c < session_ncollectors(p->s); c++)
		if (session_collector(p->s, c)->on_call)
			session_collector(p->s, c)->on_call(&ev);
	return true;
}
