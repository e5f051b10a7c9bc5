/* A module's unwind information, loaded when first needed: the patcher
 * reads its landing pads (resume points), the engine registers FDEs for
 * the copies from it (engine/unwind_register.c). */
#include <errno.h>
#include <stdlib.h>
#include "elf/code_facts.h"
#include "patch/patch.h"
#include "unwind/unwind.h"
#include "util/array.h"

struct unw_templates {
	struct unw_template {
		const rtl_binary *bin;
		struct unw_image img;   /* at bias 0 */
		bool failed;
	} *v;
	size_t n, cap;
};

struct unw_templates *patch_unw_templates_new(void) { return calloc(1, sizeof(struct unw_templates)); }

void patch_unw_templates_free(struct unw_templates *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->n; i++)
		unw_image_free(&t->v[i].img);
	free(t->v);
	free(t);
}

/* M's binary's tables, read at link-time addresses the first time a module
 * of it asks (libc's: a millisecond to read and sort its 3,000 FDEs, in
 * every process before). NULL: not read, or not kept. */
static const struct unw_template *template_of(struct unw_templates *t, const struct module *m)
{
	for (size_t i = 0; t && i < t->n; i++)
		if (t->v[i].bin == m->bin)
			return &t->v[i];
	if (!t || rtl_grow(&t->v, &t->cap, t->n + 1, sizeof(*t->v)))
		return NULL;
	struct unw_template *e = &t->v[t->n++];
	*e = (struct unw_template){ .bin = m->bin };
	e->failed = unw_image_load(m->path, 0, &e->img) != 0;
	return e;
}

/* The unwind tables of M, from the binary's template when there is one. */
static int load_module_tables(struct proc *p, struct module *m, struct unw_image *img)
{
	const struct unw_template *t = template_of(p->patch->env->unw_templates, m);
	if (!t)
		return unw_image_load(m->path, m->bias, img);
	return t->failed ? -ENOENT : unw_image_rebase(&t->img, m->bias, img);
}

/* The module's unwind tables, loaded once. Modules without a
 * .gcc_except_table and without a personality routine (plain C:
 * python3.11; not glibc, whose cancellation cleanups have a table) are not
 * registered, but for the unwinder's own (libgcc_s, whose frames start
 * every unwind): the call costs a ptrace round trip per
 * function, and only code with a personality catches. C code that names
 * one unwinds through its C frames (LuaJIT's VM catches Lua errors thrown
 * with _Unwind_RaiseException from lj_err_throw): its copies are
 * registered. An exception thrown through a C frame of plain C (a qsort
 * comparator that throws) therefore still terminates. */
struct unw_image *patch_module_unwind(struct proc *p, struct module *m)
{
	/* the unwinder's own frames are unwound too: its module always counts */
	bool unwinder = p->register_frame >= m->lo && p->register_frame < m->hi;
	/* known from the binary without its tables (python3.11's, in every
	 * process that runs it) */
	if (!m->unw && !m->unw_failed && !unwinder && fn_eh_plain(m->bin))
		m->unw_failed = true;
	if (!m->unw && !m->unw_failed) {
		m->unw = calloc(1, sizeof(*m->unw));
		if (!m->unw || load_module_tables(p, m, m->unw) ||
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
