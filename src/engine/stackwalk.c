/* Copies and stacks in the program's own addresses: the map of the copy
 * that holds a code-cache address (the current one, or one made before it
 * by lazy_reinstrument, whose frames may still run), the original
 * instruction a thread in a copy is at, and a stopped thread's call stack
 * unwound through the copies by the originals' call-frame information. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "engine/engine.h"
#include "isa/x86_64/writer.h"
#include "os/linux/os.h"
#include "os/linux/perf_ring.h"
#include "sample/sample.h"
#include "util/array.h"

bool copy_map_at(struct proc *p, uint64_t pc, struct copy_map *out)
{
	struct module *m;
	const struct func_state *fs = proc_copy_at(p, pc, &m);
	if (fs && fs->nmap) {
		*out = (struct copy_map){ fs->map_from, func_state_labels(fs, pc), fs->nmap, fs->entry, fs->code_len, m,
					  (size_t)(fs - m->fs) };
		return true;
	}
	const struct retired_points *r = p->patch ? patch_retired_at(p, pc) : NULL;
	if (!r || !r->nmap)
		return false;
	*out = (struct copy_map){ r->map_from, r->map_to, r->nmap, r->entry, r->code_len, &p->mods[r->mod], r->fn };
	return true;
}

size_t copy_map_index(const struct copy_map *c, uint64_t pc)
{
	size_t i = rtl_lower_bound_u64(c->to, c->n, pc + 1);   /* first label past PC */
	return i ? i - 1 : 0;
}

bool copy_original(struct proc *p, uint64_t at, uint64_t *orig, bool *own_bytes)
{
	struct copy_map c;
	if (!copy_map_at(p, at, &c))
		return false;
	size_t i = rtl_lower_bound_u64(c.to, c.n, at + 1);
	if (!i--)
		return false;
	if (c.to[i] == at) {
		*orig = c.from[i];
		*own_bytes = false;
		return true;
	}
	if (i + 1 >= c.n || c.from[i + 1] <= c.from[i])
		return false;
	uint64_t len = c.from[i + 1] - c.from[i];
	uint8_t copy[16], file[16];
	if (len > sizeof(copy) || c.to[i + 1] - len != at || os_mem_read(p->mem, at, copy, len) ||
	    rtl_binary_read(c.m->bin, c.from[i] - c.m->bias, file, len) || memcmp(copy, file, len))
		return false;
	*orig = c.from[i];
	*own_bytes = true;
	return true;
}

struct walk_env {
	struct proc *p;
};

static bool walk_module_at(void *user, uint64_t pc, const char **path, uint64_t *bias)
{
	struct module *m = proc_module_at(((struct walk_env *)user)->p, pc);
	if (!m)
		return false;
	*path = m->path;
	*bias = m->bias;
	return true;
}

/* snippet code is named by the instruction it serves */
static uint64_t walk_original(void *user, uint64_t pc, bool exact)
{
	struct copy_map c;
	(void)exact;
	if (!copy_map_at(((struct walk_env *)user)->p, pc, &c))
		return 0;
	return c.from[copy_map_index(&c, pc)];
}

static uint32_t walk_sp_below(void *user, uint64_t pc)
{
	struct module *m;
	const struct func_state *fs = proc_copy_at(((struct walk_env *)user)->p, pc, &m);
	return fs ? x86_sp_below(fs->sp_rows, fs->nsp_rows, (uint32_t)(pc - fs->entry)) : 0;
}

size_t stack_walk(struct proc *p, pid_t tid, struct unw_mods *unw, uint64_t *frames, uint64_t *cfas, size_t max)
{
	const char *names[OS_NREGS];
	uint64_t v[OS_NREGS], regs[PR_NREGS] = { 0 };
	if (os_get_named_regs(tid, names, v))
		return 0;
	/* os order: rax rbx rcx rdx rsi rdi rbp rsp r8..r15 rip */
	static const int pr[] = { PR_AX, PR_BX, PR_CX, PR_DX, PR_SI, PR_DI, PR_BP, PR_SP, PR_R8, PR_R9,
				  PR_R10, PR_R11, PR_R12, PR_R13, PR_R14, PR_R15, PR_IP };
	for (size_t i = 0; i < sizeof(pr) / sizeof(pr[0]); i++)
		regs[pr[i]] = v[i];
	/* the stack from sp to the end of its mapping, 256 KiB at most */
	char line[512];
	unsigned long long lo, hi;
	size_t len = 256 << 10;
	if (!os_map_line(p->pid, regs[PR_SP], line, sizeof(line)) && sscanf(line, "%llx-%llx", &lo, &hi) == 2 &&
	    hi - regs[PR_SP] < len)
		len = (size_t)(hi - regs[PR_SP]);
	uint8_t *stack = len ? malloc(len) : NULL;
	struct walk_env e = { p };
	struct unw_frame_env env = { walk_module_at, walk_original, &e, walk_sp_below };
	bool truncated;
	size_t n = stack && !os_mem_read(p->mem, regs[PR_SP], stack, len)
		   ? unw_stack(unw, &env, regs, stack, len, frames, cfas, max, &truncated) : 0;
	free(stack);
	return n;
}
