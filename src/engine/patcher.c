/* The engine's side of the patcher (patch/patch.h): what the patcher
 * reports, and the traps it does not serve alone. The patcher never calls
 * the engine; these are the functions it reaches through struct
 * patch_events, and the engine's entry points into it at a breakpoint. */
#include "engine/debug.h"
#include "engine/engine.h"
#include "engine/span.h"
#include "sample/sample.h"
#include "util/array.h"

/* The copy's unwind information is registered, the sampler maps its PCs
 * back, a sweep will find its increments, the debugger's breakpoints go
 * into it. */
static void relocated(struct proc *p, struct module *m, size_t k)
{
	const struct func_state *fs = &m->fs[k];
	struct sampler *smp = session_sampler(p->s);
	if (smp)
		sampler_copy_placed(smp, p->pid, p->exec_gen, fs->entry, fs->code_len,
				    rtl_binary_function(m->bin, k)->addr + m->bias, fs->map_from, fs->map_to, fs->nmap,
				    fs->sp_rows, fs->nsp_rows);
	unwind_function_relocated(p, m, k);
	if (p->in_call && !rtl_grow(&p->call_fns, &p->capcall_fns, p->ncall_fns + 1, sizeof(*p->call_fns))) {
		p->call_fns[p->ncall_fns].mod = (uint32_t)(m - p->mods);
		p->call_fns[p->ncall_fns++].fn = (uint32_t)k;
	}
	if (p->sweeping)
		sweep_relocated(p, m, k);
	if (session_debugger(p->s))
		debug_relocated(p, m, k);
}

void engine_first_call(struct proc *p, struct module *m, uint64_t addr)
{
	span_first_call(p, m, addr);
	warm_trap(p, m, addr);
}

const struct patch_events engine_patch_events = {
	.relocated = relocated,
	.first_call = engine_first_call,
	.memory_point = memtrace_point,
	.memory_untraced = memtrace_untraced,
	.memory_table = memtrace_table,
	.timer_placed = timers_record,
	.arc_site = arcs_site_init,
};

void dl_arm_r_brk(struct proc *p)
{
	dl_find_r_debug(p, NULL);
	if (p->r_brk)
		lazy_arm_r_brk(p);
}

int engine_breakpoint(struct proc *p, pid_t tid, uint64_t pc)
{
	/* the loader publishes r_brk after its first trap: armed once known */
	if (p->r_debug && !p->r_brk)
		dl_arm_r_brk(p);
	switch (patch_breakpoint(p, tid, pc)) {
	case PATCH_TRAP_LOADER:
		return dl_notify(p, tid);
	case PATCH_TRAP_HANDLED:
		return 1;
	default:
		return 0;
	}
}
