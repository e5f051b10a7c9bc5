/* A module's unwind information, loaded when first needed: the patcher
 * reads its landing pads (resume points), the engine registers FDEs for
 * the copies from it (engine/unwind_register.c). */
#include <stdlib.h>
#include "patch/patch.h"
#include "unwind/unwind.h"

/* The module's unwind tables, loaded once. Modules without a
 * .gcc_except_table and without a personality routine (plain C: libc,
 * python) are not registered, but for the unwinder's own (libgcc_s, whose
 * frames start every unwind): the call costs a ptrace round trip per
 * function, and only code with a personality catches. C code that names
 * one unwinds through its C frames (LuaJIT's VM catches Lua errors thrown
 * with _Unwind_RaiseException from lj_err_throw): its copies are
 * registered. An exception thrown through a C frame of plain C (a qsort
 * comparator that throws) therefore still terminates. */
struct unw_image *patch_module_unwind(struct proc *p, struct module *m)
{
	/* the unwinder's own frames are unwound too: its module always counts */
	bool unwinder = p->register_frame >= m->lo && p->register_frame < m->hi;
	if (!m->unw && !m->unw_failed) {
		m->unw = calloc(1, sizeof(*m->unw));
		if (!m->unw || unw_image_load(m->path, m->bias, m->unw) ||
		    (!m->unw->except_table.size && !m->unw->personality && !unwinder)) {
			patch_module_unwind_free(m);
			m->unw_failed = true;
		}
	}
	return m->unw;
}

/* The landing pads of F in M (run-time addresses, sorted; *PADS malloc'd):
 * with original return addresses, an exception caught in a frame of a
 * copy lands in F's original code there (lazy.c's resume points). */
size_t patch_landing_pads(struct proc *p, struct module *m, const rtl_function *f, uint64_t **pads)
{
	size_t n = 0;
	*pads = NULL;
	if (!patch_module_unwind(p, m) || unw_landing_pads(m->unw, f->addr + m->bias, pads, &n)) {
		free(*pads);
		*pads = NULL;
		return 0;
	}
	return n;
}

void patch_module_unwind_free(struct module *m)
{
	if (m->unw) {
		unw_image_free(m->unw);
		free(m->unw);
		m->unw = NULL;
	}
}
