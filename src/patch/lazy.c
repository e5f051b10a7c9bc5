/* Caliper's lazy instrumentation: every function entry gets an int3; on the
 * first call the whole function is relocated into the module's window with
 * counters inlined, and the entry is patched with a jump to the copy. */
#include <elf.h>
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <reticle/collector.h>
#include <reticle/error.h>
#include "elf/code_facts.h"
#include "isa/x86_64/check.h"
#include "isa/x86_64/persist.h"
#include "isa/x86_64/relocate.h"
#include "os/linux/os.h"
#include "patch/patch.h"
#include "probe/plan.h"
#include "util/array.h"
#include "util/log.h"
#include "util/thread.h"
#include "warm/warm.h"

enum { PATCH_LEN = 5, EAGER_DEPTH = 1, EAGER_MAX_BYTES = 1024, MAX_TARGETS = 256 };
static const char too_short[] = "shorter than a 5-byte jump";
static const char guessed[] = "no symbol or FDE: boundaries guessed, and no relocated caller called it";

/* Bytes that may be overwritten at the entry: the function itself, or the
 * padding after it up to the next function. */
static uint64_t patch_room(const rtl_binary *bin, size_t i)
{
	const rtl_function *f = rtl_binary_function(bin, i);
	uint64_t room = f->size;
	if (room < PATCH_LEN && i + 1 < rtl_binary_function_count(bin)) {
		uint64_t gap = rtl_binary_function(bin, i + 1)->addr - f->addr;
		uint8_t pad[64];
		if (gap >= PATCH_LEN && gap - f->size <= sizeof(pad) &&
		    !rtl_binary_read(bin, f->addr + f->size, pad, gap - f->size) &&
		    x86_is_padding(pad, gap - f->size))
			room = gap;
	}
	return room;
}

/* Writes the int3s of entries [FROM, TO) (armed, in address order) with one
 * write of the text between them: a system call per function costs more
 * than copying the pages, which the int3s make private anyway. The text is
 * the file's until reticle writes it (arming comes first), unless the
 * loader relocates it (DT_TEXTREL): then it is read from the process. */
/* libc's ptrace(): a tracer's child asks to be traced by its parent,
 * which fails while reticle traces it, so every call of it is seen. */
static bool is_ptrace(const rtl_function *f)
{
	return f->name && !strncmp(f->name, "ptrace", 6) && (!f->name[6] || f->name[6] == '@');
}

void lazy_arm_hooks(struct proc *p, struct module *m)
{
	static const uint8_t int3 = 0xcc;
	for (size_t i = 0; i < rtl_binary_function_count(m->bin); i++) {
		const rtl_function *f = rtl_binary_function(m->bin, i);
		struct func_state *fs = &m->fs[i];
		if (is_ptrace(f) && !(f->sources & RTL_SRC_PLT) && fn_in_exec_segment(m->bin, f->addr, 1) &&
		    !os_mem_read(p->mem, f->addr + m->bias, &fs->orig, 1) &&
		    !proc_patch_write(p, f->addr + m->bias, &int3, 1))
			fs->status = FS_HOOK;
	}
}

static void arm_span(struct proc *p, struct module *m, const uint32_t *idx, size_t from, size_t to)
{
	uint64_t lo = rtl_binary_function(m->bin, idx[from])->addr + m->bias;
	uint64_t hi = rtl_binary_function(m->bin, idx[to - 1])->addr + m->bias + 1;
	uint8_t *buf = to - from > 1 ? malloc(hi - lo) : NULL;
	/* a span across two segments is not one piece of the file */
	/* an attached process's text is as it is, maybe not the file's */
	if (!buf || ((rtl_binary_has_textrel(m->bin) || p->attached ||
		      rtl_binary_read(m->bin, lo - m->bias, buf, hi - lo)) &&
		     os_mem_read(p->mem, lo, buf, hi - lo))) {
		free(buf);   /* one at a time (the span may cross a hole) */
		for (size_t k = from; k < to; k++) {
			struct func_state *fs = &m->fs[idx[k]];
			uint64_t at = rtl_binary_function(m->bin, idx[k])->addr + m->bias;
			static const uint8_t int3 = 0xcc;
			if (os_mem_read(p->mem, at, &fs->orig, 1) || proc_patch_write(p, at, &int3, 1))
				fs->status = FS_NONE;
		}
		return;
	}
	for (size_t k = from; k < to; k++) {
		uint64_t at = rtl_binary_function(m->bin, idx[k])->addr + m->bias - lo;
		m->fs[idx[k]].orig = buf[at];
		buf[at] = 0xcc;
	}
	if (proc_patch_write(p, lo, buf, hi - lo))
		for (size_t k = from; k < to; k++)
			m->fs[idx[k]].status = FS_NONE;
	free(buf);
}

/* Spans of entries to arm, [from, to) of idx each, shared by two threads. */
struct arming {
	struct proc *p;
	struct module *m;
	const uint32_t *idx;
	const size_t *span;        /* span k: idx[span[k]] .. idx[span[k + 1]] */
	size_t nspans;
	const struct os_cpus *cpus;
};

static void *arm_odd_spans(void *arg)
{
	struct arming *a = arg;
	os_cpus_set(0, a->cpus);   /* not the CPU the event loop may be pinned to */
	for (size_t k = 1; k < a->nspans; k += 2)
		arm_span(a->p, a->m, a->idx, a->span[k], a->span[k + 1]);
	return NULL;
}

/* Arms the spans, half of them on a helper thread where there is another
 * CPU: writing the int3s is a copy-on-write fault per text page of the
 * target (cc1: 5,000 pages, 16 ms), which two threads take in parallel. */
static void arm_spans(struct proc *p, struct module *m, const uint32_t *idx, const size_t *span,
		      size_t nspans)
{
	struct arming a = { p, m, idx, span, nspans, p->patch->env->cpus };
	pthread_t helper;
	/* an attached process keeps an undo list of every write: one thread */
	bool helped = nspans >= 4 && a.cpus && !p->attached && !rtl_thread_start(&helper, arm_odd_spans, &a);
	for (size_t k = 0; k < nspans; k += helped ? 2 : 1)
		arm_span(p, m, idx, span[k], span[k + 1]);
	if (helped)
		pthread_join(helper, NULL);
}

size_t lazy_arm_plan(struct module *m, uint32_t *idx)
{
	size_t n = rtl_binary_function_count(m->bin), armed = 0;
	for (size_t i = 0; i < n; i++) {
		const rtl_function *f = rtl_binary_function(m->bin, i);
		struct func_state *fs = &m->fs[i];
		if (fs->outside) {
			fs->reason = "outside the run's scope (modules, functions)";
			continue;
		}
		if (f->sources & RTL_SRC_PLT) {
			fs->reason = "PLT stub";
			continue;
		}
		if (fn_is_signal_trampoline(m->bin, f->addr)) {
			/* a copy would be entered from every handler's return and
			 * never left (sigreturn): calltime's frame for it stayed
			 * open under the interrupted code's, negative times */
			fs->reason = "signal return trampoline";
			continue;
		}
		if (!fn_in_exec_segment(m->bin, f->addr, f->size ? f->size : 1)) {
			fs->reason = "not in an executable segment";
			continue;
		}
		if (patch_room(m->bin, i) < PATCH_LEN) {
			fs->reason = too_short;
			continue;
		}
		if (f->sources == RTL_SRC_GAP) {
			/* bytes between known functions: code without unwind
			 * information, or data (OpenSSL keeps its SHA-256
			 * constants in .text), which an int3 would change.
			 * Copied once a relocated caller's call shows it is code. */
			fs->reason = guessed;
			continue;
		}
		fs->status = is_ptrace(f) ? FS_HOOK : FS_ARMED;
		idx[armed++] = (uint32_t)i;
	}
	return armed;
}

void lazy_arm_write(struct proc *p, struct module *m, const uint32_t *idx, size_t armed)
{
	enum { SPAN = 256 << 10 };
	/* functions are sorted by address: spans of at most SPAN bytes */
	size_t *span = malloc((armed + 2) * sizeof(*span)), nspans = 0;
	if (span && armed) {
		span[0] = 0;
		for (size_t from = 0, k = 1; k <= armed; k++)
			if (k == armed || rtl_binary_function(m->bin, idx[k])->addr -
						  rtl_binary_function(m->bin, idx[from])->addr >= SPAN)
				span[++nspans] = from = k;
		arm_spans(p, m, idx, span, nspans);
	} else if (armed) {
		arm_span(p, m, idx, 0, armed);   /* no memory for the list: one write per entry */
	}
	free(span);
}

void lazy_arm_mapped(struct module *m, const uint32_t *idx, size_t armed)
{
	/* the bytes under the int3s are the file's (the plan kept entries
	 * in an executable segment's file bytes) */
	for (size_t k = 0; k < armed; k++)
		(void)rtl_binary_read(m->bin, rtl_binary_function(m->bin, idx[k])->addr, &m->fs[idx[k]].orig, 1);
}

/* ---- relocation callbacks ---- */

struct reloc_ctx {
	struct proc *p;
	struct module *m;
	struct window *w;
	const rtl_function *f;    /* the function relocated */
};

static int ctx_plan(void *c, const struct rtl_function_cfg *cfg, struct probe_plan *out)
{
	struct reloc_ctx *ctx = c;
	return probe_plan_build(ctx->p->patch->env->probes, cfg, ctx->m->path, ctx->f->name, ctx->m->bias, out);
}

static uint32_t ctx_mem_point(void *c, uint64_t insn, unsigned k, const struct x86_access *a, uint32_t after,
			      int64_t delta)
{
	(void)k;
	struct proc *p = ((struct reloc_ctx *)c)->p;
	return p->patch->env->ev->memory_point(p, insn, a, after, delta);
}

static void ctx_mem_table(void *c, uint64_t copy, uint64_t orig, uint64_t bytes)
{
	struct proc *p = ((struct reloc_ctx *)c)->p;
	p->patch->env->ev->memory_table(p, copy, orig, bytes);
}

static void ctx_mem_untraced(void *c, uint64_t insn)
{
	struct proc *p = ((struct reloc_ctx *)c)->p;
	p->patch->env->ev->memory_untraced(p, insn);
}

static int ctx_read(void *c, const uint64_t addr, void *buf, size_t len)
{
	struct reloc_ctx *ctx = c;
	struct module *m = proc_module_at(ctx->p, addr);
	if (!m || addr + len > m->hi)
		return -1;
	/* DT_TEXTREL: the loader has written into the text, and maybe into
	 * the tables beside it */
	if (rtl_binary_has_textrel(m->bin))
		return os_mem_read(ctx->p->mem, addr, buf, len);
	return rtl_binary_read(m->bin, addr - m->bias, buf, len);
}

/* The function PLT stub F of M leads to, when the loader has bound its GOT
 * slot already (0 if not; kept in the stub's state once bound). Copies call it directly: a bound
 * slot does not change (RELRO, or lazy binding done), and the loader keeps
 * the library it points into loaded as long as the caller is. */
static uint64_t plt_target(struct proc *p, struct module *m, struct func_state *fs,
			   const rtl_function *f)
{
	if (fs->entry)
		return fs->entry;
	/* the loader binds slots while the program runs: one read per stop
	 * (a slot bound by another thread meanwhile is only a slower path) */
	if (fs->plt_unbound == p->resumes + 1)
		return 0;
	uint64_t slot = rtl_binary_plt_slot(m->bin, f), to;
	const rtl_function *tf;
	if (!slot || os_mem_read(p->mem, slot + m->bias, &to, 8) || !proc_entry_at(p, to, NULL, &tf) ||
	    (tf->sources & RTL_SRC_PLT)) {
		fs->plt_unbound = p->resumes + 1;
		if (slot && !fs->plt_watched &&
		    !rtl_grow(&p->patch->plt_watch, &p->patch->capplt_watch, p->patch->nplt_watch + 1, sizeof(*p->patch->plt_watch))) {
			fs->plt_watched = true;
			p->patch->plt_watch[p->patch->nplt_watch].mod = (uint32_t)(m - p->mods);
			p->patch->plt_watch[p->patch->nplt_watch++].fn = (uint32_t)(f - rtl_binary_function(m->bin, 0));
		}
		return 0;   /* unbound: the slot leads back to the PLT */
	}
	return fs->entry = to;
}

void lazy_bind_plt(struct proc *p)
{
	size_t k = 0;
	for (size_t i = 0; i < p->patch->nplt_watch; i++) {
		struct module *m = &p->mods[p->patch->plt_watch[i].mod];
		struct func_state *fs = &m->fs[p->patch->plt_watch[i].fn];
		fs->plt_unbound = 0;
		if (m->unloaded || plt_target(p, m, fs, rtl_binary_function(m->bin, p->patch->plt_watch[i].fn)))
			fs->plt_watched = false;
		else
			p->patch->plt_watch[k++] = p->patch->plt_watch[i];   /* still unbound */
	}
	p->patch->nplt_watch = k;
}

/* Whether code anywhere in window W reaches ADDR with a rel32 (a copy of a
 * non-PIE executable cannot call into a library mapped far above it). */
static bool reachable(const struct window *w, uint64_t addr)
{
	int64_t lo = (int64_t)(addr - w->addr), hi = (int64_t)(addr - (w->addr + w->code_cap));
	return lo == (int32_t)lo && hi == (int32_t)hi;
}

/* Branches out of the function: to another function's relocated copy when it
 * has one (an entry, or an interior point such as a .cold part jumping back),
 * else to the original address (an entry goes through its patch). */
static uint64_t ctx_redirect(void *c, uint64_t addr)
{
	struct reloc_ctx *ctx = c;
	struct module *m;
	const rtl_function *f = proc_function_at(ctx->p, addr, &m);
	if (!f)
		return addr;
	struct func_state *fs = &m->fs[f - rtl_binary_function(m->bin, 0)];
	if ((f->sources & RTL_SRC_PLT) && addr == f->addr + m->bias) {
		uint64_t to = plt_target(ctx->p, m, fs, f);
		return to && reachable(ctx->w, to) ? ctx_redirect(c, to) : addr;
	}
	if (fs->status != FS_DONE)
		return addr;
	if (addr == f->addr + m->bias)
		return fs->entry;   /* through the entry stub: the call is counted */
	uint64_t to = x86_map_lookup(fs->map_from, fs->map_to, fs->nmap, addr);
	return to ? to : addr;
}

/* Functions that find their caller's object from the return address: a
 * copy's return address is in no object (dlsym(RTLD_NEXT) would fail,
 * dlopen would miss the caller's RUNPATH and $ORIGIN). */
static bool ctx_keeps_caller(void *c, uint64_t addr)
{
	struct reloc_ctx *ctx = c;
	const rtl_function *f;
	return proc_entry_at(ctx->p, addr, NULL, &f) && fn_keeps_caller(f);
}

/* The link-time address of BIN's first function entry after ADDR, or
 * UINT64_MAX (functions are in address order). */
static uint64_t next_entry_after(const rtl_binary *bin, uint64_t addr)
{
	size_t lo = 0, hi = rtl_binary_function_count(bin);
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (rtl_binary_function(bin, mid)->addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < rtl_binary_function_count(bin) ? rtl_binary_function(bin, lo)->addr : UINT64_MAX;
}

static int add_ret_trap(struct proc *p, uint64_t at, uint64_t to)
{
	size_t k = p->patch->nret_traps;
	if (rtl_grow(&p->patch->ret_traps, &p->patch->capret_traps, k + 1, sizeof(*p->patch->ret_traps)))
		return -ENOMEM;
	while (k && p->patch->ret_traps[k - 1].at > at) {
		p->patch->ret_traps[k] = p->patch->ret_traps[k - 1];
		k--;
	}
	p->patch->ret_traps[k] = (struct ret_trap){ at, to, 0 };
	p->patch->nret_traps++;
	return 0;
}

static const struct ret_trap *find_ret_trap(const struct proc *p, uint64_t at);

bool lazy_has_return_trap(const struct proc *p, uint64_t at)
{
	return p->patch->nret_traps && find_ret_trap(p, at);
}

int lazy_return_trap(struct proc *p, uint64_t at, uint64_t to)
{
	static const uint8_t int3 = 0xcc;
	if (find_ret_trap(p, at))
		return 0;
	int err = add_ret_trap(p, at, to);
	return err ? err : proc_patch_write(p, at, &int3, 1);
}

static const struct ret_trap *find_ret_trap(const struct proc *p, uint64_t at)
{
	size_t lo = 0, hi = p->patch->nret_traps;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (p->patch->ret_traps[mid].at < at)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < p->patch->nret_traps && p->patch->ret_traps[lo].at == at ? &p->patch->ret_traps[lo] : NULL;
}

static int by_orig(const void *a, const void *b)
{
	const struct x86_ret_patch *x = a, *y = b;
	return x->orig < y->orig ? -1 : x->orig > y->orig;
}

/* The copy of R's instruction at original address AT, or 0. */
static uint64_t copy_of(const struct x86_reloc *r, uint64_t at)
{
	size_t lo = 0, hi = r->nmap;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (r->map_from[mid] < at)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < r->nmap && r->map_from[lo] == at ? r->map_to[lo] : 0;
}

/* Go's runtime.deferreturn in M (run-time), 0 if none: a panic that is
 * recovered resumes its function at its 'call runtime.deferreturn', in the
 * original code. */
static uint64_t go_deferreturn(const struct module *m)
{
	for (size_t i = 0; i < rtl_binary_function_count(m->bin); i++) {
		const rtl_function *f = rtl_binary_function(m->bin, i);
		if (f->name && !strcmp(f->name, "runtime.deferreturn"))
			return f->addr + m->bias;
	}
	return 0;
}

/* Where the program may resume F's original code, and where that goes on
 * in the copy: the return addresses of calls that push their original one
 * (x86_reloc_env's original_returns, dlopen and dlsym), and with original
 * returns, Go's deferreturn calls and F's landing pads (the unwinder finds
 * a frame's handler by its original return address, in the original
 * LSDA). Sorted by address, *N of them. */
static struct x86_ret_patch *resume_points(struct proc *p, struct module *m, const rtl_function *f,
					   const struct x86_reloc *r, size_t *n)
{
	uint64_t *pads = NULL;
	size_t npads = p->original_returns ? patch_landing_pads(p, m, f, &pads) : 0;
	struct x86_ret_patch *v = malloc((r->nrets + r->ncalls + npads + 1) * sizeof(*v));
	if (!v) {
		free(pads);
		return NULL;
	}
	memcpy(v, r->rets, r->nrets * sizeof(*v));
	*n = r->nrets;
	for (size_t i = 0; i < npads; i++) {
		uint64_t to = copy_of(r, pads[i]);
		if (to)
			v[(*n)++] = (struct x86_ret_patch){ pads[i], to };
	}
	free(pads);
	if (p->original_returns && r->ncalls) {
		if (!m->go_deferreturn_known) {
			m->go_deferreturn = go_deferreturn(m);
			m->go_deferreturn_known = true;
		}
		for (size_t i = 0; i < r->ncalls && m->go_deferreturn; i++) {
			uint64_t to = r->calls[i].target == m->go_deferreturn ? copy_of(r, r->calls[i].site) : 0;
			if (to)
				v[(*n)++] = (struct x86_ret_patch){ r->calls[i].site, to };
		}
	}
	qsort(v, *n, sizeof(*v), by_orig);
	return v;
}

/* Where original code outside F that may run as it is branches back into
 * F (run-time addresses, appended to *V, *N of them): the functions F's
 * copy branches into the middle of (.cold parts, which jump back into
 * their parent's body). A thread runs them as they are until they have a
 * copy, and a copy made before F's branches to F's original code until
 * F's copy is made (or for good where the field cannot be re-pointed
 * atomically), so F's original code must stay whole at those addresses. */
static void foreign_entries(struct proc *p, struct module *m, const rtl_function *f, const struct x86_reloc *r,
			    uint64_t **v, size_t *n)
{
	const rtl_function *seen[32];
	size_t nseen = 0;
	for (size_t i = 0; i < r->next && nseen < sizeof(seen) / sizeof(*seen); i++) {
		struct module *cm;
		uint64_t t = r->ext[i].orig;
		const rtl_function *c = proc_function_at(p, t, &cm);
		bool known = false;
		for (size_t k = 0; k < nseen && !known; k++)
			known = seen[k] == c;
		if (!c || known || cm != m || c == f || t == c->addr + m->bias || !c->size || c->size > (1u << 20))
			continue;
		seen[nseen++] = c;
		x86_branches_into(m->bin, m->bias, c, f->addr + m->bias, f->addr + m->bias + f->size, v, n);
	}
}

/* The program resumes F's original code at some points (resume_points): a
 * jump there leads back into the copy. The original body never runs
 * otherwise (its entry jumps to the copy), so its bytes can be
 * overwritten, but not the entry patch, another function's entry (glibc
 * has entries inside other functions), another resume point, nor an
 * address that a code pointer the copy does not rewrite may reach. Where
 * 5 bytes do not fit (the next point is closer, say), an int3 does: a
 * trap there continues in the copy (slower, rarely met). */
static int repoint(struct proc *p, uint64_t at, uint64_t dest);

/* AGAIN: the function's copy is made again (lazy_reinstrument): the same
 * places as the first time lead to the new copy, rewritten as with threads
 * running (its return traps re-aimed, its jumps behind an int3 that is a
 * return trap meanwhile). */
static void patch_returns_as(struct proc *p, struct module *m, const rtl_function *f, const struct x86_reloc *r,
			     bool again);

static void patch_returns(struct proc *p, struct module *m, const rtl_function *f, const struct x86_reloc *r)
{
	patch_returns_as(p, m, f, r, false);
}

/* Whether a return point of R lies inside the 5 bytes a jump at F's entry
 * would take: the entry then stays an int3 that leads to the copy (a
 * return trap), costing a trap per call that does not come from a copy. */
/* The state of the relocated function G (*M, *F) when TARGET lies inside
 * the bytes of G's entry jump, else NULL. */
static const struct func_state *head_entered(struct proc *p, uint64_t target, struct module **m,
					    const rtl_function **f)
{
	*f = proc_function_at(p, target, m);
	uint64_t entry = *f ? (*f)->addr + (*m)->bias : 0;
	if (!*f || target <= entry || target >= entry + PATCH_LEN || find_ret_trap(p, entry))
		return NULL;
	const struct func_state *g = &(*m)->fs[*f - rtl_binary_function((*m)->bin, 0)];
	return g->status == FS_DONE ? g : NULL;
}

/* Whether one of TARGETS lies in the bytes of a function's entry jump: the
 * copy of the function that branches there must be made (a code cache
 * keeps room for such copies: window_alloc_code_reserved). */
static bool enters_a_head(struct proc *p, const uint64_t *targets, size_t n)
{
	struct module *m;
	const rtl_function *f;
	for (size_t i = 0; i < n; i++)
		if (head_entered(p, targets[i], &m, &f))
			return true;
	return false;
}

/* A function left as it is (its copy failed: a full code cache, even its
 * reserve) may branch into the bytes of another's entry jump (ld.so's
 * mempcpy goes on at memcpy+3, which its own copy leads to the copy of):
 * there, those bytes are the original's again and the entry an int3 that
 * leads to the copy, as an entry_shadowed one does. TARGETS: the
 * function's branches out. Also for a copy's branch there that
 * back_patch could not re-point (FULL false: said at verbose level 3). */
static void keep_heads_whole_as(struct proc *p, const uint64_t *targets, size_t n, bool full);

static void keep_heads_whole(struct proc *p, const uint64_t *targets, size_t n)
{
	keep_heads_whole_as(p, targets, n, true);
}

static void keep_heads_whole_as(struct proc *p, const uint64_t *targets, size_t n, bool full)
{
	for (size_t i = 0; i < n; i++) {
		struct module *m;
		const rtl_function *f;
		const struct func_state *g = head_entered(p, targets[i], &m, &f);
		uint64_t entry = g ? f->addr + m->bias : 0;
		uint8_t orig[PATCH_LEN];
		if (!g || rtl_binary_read(m->bin, f->addr, orig, PATCH_LEN))
			continue;
		for (size_t k = 0; k < p->patch->nentries; k++)   /* its jump not written yet */
			if (p->patch->entries[k].at == entry)
				p->patch->entries[k--] = p->patch->entries[--p->patch->nentries];
		if (lazy_return_trap(p, entry, g->entry) || proc_patch_write(p, entry + 1, orig + 1, PATCH_LEN - 1))
			continue;
		if (full)
			rtl_warn("%s: %s: every call traps from now on: a function left as it is (code cache full) "
				 "branches inside its entry jump", m->path, f->name ? f->name : "?");
		else
			rtl_debug("%s: %s: every call traps from now on: a copy's branch inside its entry jump "
				  "could not be re-pointed while threads run", m->path, f->name ? f->name : "?");
	}
}

/* Whether one of R's blocks starts in the 5 bytes from AT: a thread that
 * came into the original code from outside (a .cold or .warm part, or its
 * parent, still running as it is) may branch there. Blocks are in address
 * order. */
static bool block_starts_under(const struct x86_reloc *r, uint64_t at)
{
	size_t i = rtl_lower_bound_u64_in(r->blocks, r->nblocks, sizeof(*r->blocks), offsetof(struct x86_block, addr),
					  at + 1);
	return i < r->nblocks && r->blocks[i].addr < at + PATCH_LEN;
}

/* Whether the call that returns to AT is one to __morestack: a
 * split-stack prologue's (gccgo), `call __morestack; ret; jmp body`.
 * __morestack goes on at its return address plus one, in the original
 * code, so the return point keeps the bytes after its first (a return
 * trap there, not a jump over them: gccgo's deep recursion died of
 * SIGILL inside one). */
static bool returns_to_morestack_caller(struct proc *p, struct module *m, uint64_t at)
{
	uint8_t call[5];
	int32_t rel;
	struct module *tm;
	if (at - m->bias < 5 || rtl_binary_read(m->bin, at - m->bias - 5, call, 5) || call[0] != 0xe8)
		return false;
	memcpy(&rel, call + 1, 4);
	const rtl_function *t = proc_function_at(p, at + (uint64_t)(int64_t)rel, &tm);
	return t && t->name && !strncmp(t->name, "__morestack", 11);
}

static bool entry_shadowed(const struct x86_reloc *r, uint64_t entry)
{
	for (size_t i = 0; i < r->nrets; i++)
		if (r->rets[i].orig > entry && r->rets[i].orig < entry + PATCH_LEN)
			return true;
	return false;
}

static void patch_returns_as(struct proc *p, struct module *m, const rtl_function *f, const struct x86_reloc *r,
			     bool again)
{
	if (!r->nrets && !p->original_returns)
		return;
	uint64_t lo = f->addr + m->bias + (entry_shadowed(r, f->addr + m->bias) ? 1 : PATCH_LEN);
	size_t n = 0, nint = 0;
	struct x86_ret_patch *pts = resume_points(p, m, f, r, &n);
	uint64_t *interior = pts && n ? fn_interior_pointers(m->bin, f, m->bias, &nint) : NULL;
	if (!pts || !interior)
		goto out;
	size_t nown = nint;
	if (p->original_returns)
		foreign_entries(p, m, f, r, &interior, &nint);
	/* come in from outside, a thread runs the original code on from there;
	 * V8 sends an exception to the handler its builtin's table names for
	 * the frame's (original) return address, a block of the original code
	 * (node died of the jump over 'call; jmp; handler:' of
	 * Builtins_PromiseFulfillReactionJob at every throw in a .then) */
	bool entered = nint > nown || (f->name && !strncmp(f->name, "Builtins_", 9));
	/* attached: where the frames of the threads' stacks resume stays whole */
	uint64_t flo = f->addr + m->bias, fhi = flo + f->size;
	size_t w0 = p->nresume_words ? rtl_lower_bound_u64(p->resume_words, p->nresume_words, flo) : 0;
	for (size_t w = w0; w < p->nresume_words && p->resume_words[w] < fhi; w++) {
		uint64_t *nv = realloc(interior, (nint + 1) * sizeof(*interior));
		if (!nv)
			break;
		interior = nv;
		interior[nint++] = p->resume_words[w];
	}
	for (size_t k = 0; k < n; k++) {
		uint64_t at = pts[k].orig, lim = next_entry_after(m->bin, at - m->bias);
		lim = lim == UINT64_MAX ? m->hi : lim + m->bias;
		if (k + 1 < n && pts[k + 1].orig < lim)
			lim = pts[k + 1].orig;
		if (at < lo || at >= lim || (k && pts[k - 1].orig == at))
			continue;
		bool fits = at + PATCH_LEN <= lim && !(entered && block_starts_under(r, at)) &&
			    !returns_to_morestack_caller(p, m, at);
		for (size_t j = 0; j < nint && fits; j++)
			fits = !(interior[j] > at && interior[j] < at + PATCH_LEN);
		struct ret_trap *t = again ? (struct ret_trap *)find_ret_trap(p, at) : NULL;
		if (t) {   /* made again: the trap, or the jump behind one */
			t->to = pts[k].copy;
			if (fits)
				repoint(p, at, pts[k].copy);
		} else if (again) {
			if (fits && !add_ret_trap(p, at, pts[k].copy))
				repoint(p, at, pts[k].copy);
		} else if (fits) {
			uint8_t jmp[PATCH_LEN] = { 0xe9 };
			int32_t rel = (int32_t)(pts[k].copy - (at + PATCH_LEN));
			memcpy(jmp + 1, &rel, 4);
			proc_patch_write(p, at, jmp, PATCH_LEN);
		} else if (!find_ret_trap(p, at) && !add_ret_trap(p, at, pts[k].copy)) {
			static const uint8_t int3 = 0xcc;
			proc_patch_write(p, at, &int3, 1);
		}
	}
out:
	free(pts);
	free(interior);
}

const char *const *lazy_stack_walkers(size_t *n)
{
	static const char *const names[] = { "backtrace", "_Unwind_Backtrace" };
	*n = sizeof(names) / sizeof(*names);
	return names;
}

bool lazy_wants_original_returns(const rtl_binary *exe)
{
	const char *force = getenv("RETICLE_ORIGINAL_RETURNS");
	if (force && *force)
		return atoi(force) != 0;
	/* Go's runtime looks up every return address when it grows or scans a
	 * stack, and OCaml's at every collection (fn_marks_return_tables); V8
	 * (node) walks its frames; backtrace() reports them, and so does every
	 * program that walks its own stack with _Unwind_Backtrace
	 * (Rust's std for a panic's or a captured backtrace), called through
	 * its PLT or through a GOT slot (-z now) */
	size_t nwalkers;
	const char *const *walkers = lazy_stack_walkers(&nwalkers);
	for (size_t i = 0; i < nwalkers; i++)
		if (rtl_binary_imports(exe, walkers[i]))
			return true;
	/* gprof's arcs: a program built with -pg calls mcount at every
	 * entry, which reads its own return address and its caller's and
	 * keeps the pairs inside the program's text only (with code-cache
	 * ones gmon.out had no call graph at all); its SIGPROF histogram
	 * reads the interrupted PC (sigpc.c translates it then) */
	/* gccgo's recover() holds only where the return address of the
	 * function that called it lies in the function that deferred it
	 * (runtime.canrecover, in libgo): with code-cache ones, every
	 * recovered panic went on as unrecovered */
	static const char *const counters[] = { "mcount", "_mcount", "runtime.canrecover" };
	for (size_t i = 0; i < sizeof(counters) / sizeof(*counters); i++)
		if (rtl_binary_imports(exe, counters[i]))
			return true;
	static const char *const names[] = {
		"runtime.morestack", "runtime.morestack.abi0", "runtime.goexit1",
		"backtrace@plt", "backtrace", "_Unwind_Backtrace@plt",
		"mcount", "_mcount",   /* a static -pg program's own */
		"runtime.canrecover",  /* a static gccgo program's own */
	};
	for (size_t i = 0; i < rtl_binary_function_count(exe); i++) {
		const rtl_function *f = rtl_binary_function(exe, i);
		if (fn_marks_return_tables(f))
			return true;
		for (size_t j = 0; j < sizeof(names) / sizeof(names[0]); j++)
			if (f->name && !strcmp(f->name, names[j]))
				return true;
	}
	return false;
}

/* Code of the function's own module: what lies beyond it depends on where
 * the loader put the next library (a jump table's end would too). */
/* Code a jump-table entry may leave its function for: in a known function
 * of the same module (fn_is_function_code). */
static bool ctx_is_code(void *c, uint64_t addr)
{
	struct reloc_ctx *ctx = c;
	struct module *m = proc_module_at(ctx->p, addr);
	return m && m == ctx->m && fn_is_function_code(m->bin, addr - m->bias);
}

static bool ctx_in_function(void *c, uint64_t addr)
{
	struct reloc_ctx *ctx = c;
	return rtl_binary_find_function(ctx->m->bin, addr - ctx->m->bias) != NULL;
}

static bool ctx_is_readonly(void *c, uint64_t addr, size_t len)
{
	struct reloc_ctx *ctx = c;
	struct module *m = proc_module_at(ctx->p, addr);
	return m && rtl_binary_is_readonly(m->bin, addr - m->bias, len);
}

static uint64_t ctx_counter(void *c)
{
	struct reloc_ctx *ctx = c;
	return window_alloc_counter(ctx->w);
}


/* R's RTL_PRIM_CALL int3s (function K of M) into P's sorted list. */
static int record_call_traps(struct proc *p, struct module *m, size_t k, const struct x86_reloc *r)
{
	struct patch_proc *st = p->patch;
	if (!r->ntraps)
		return 0;
	if (rtl_grow(&st->call_traps, &st->capcall_traps, st->ncall_traps + r->ntraps, sizeof(*st->call_traps)))
		return -ENOMEM;
	for (size_t i = 0; i < r->ntraps; i++) {
		struct call_trap t = { r->w.base + r->traps[i].off, r->traps[i].addr, r->traps[i].id,
				       (uint32_t)(m - p->mods), (uint32_t)k, r->traps[i].kind };
		size_t at = st->ncall_traps;
		while (at > 0 && st->call_traps[at - 1].at > t.at)
			at--;
		memmove(st->call_traps + at + 1, st->call_traps + at, (st->ncall_traps - at) * sizeof(t));
		st->call_traps[at] = t;
		st->ncall_traps++;
	}
	return 0;
}

static int record_result(struct proc *p, struct func_state *fs, struct x86_reloc *r)
{
	/* blocks and call sites only for collectors that read them */
	bool structure = p->patch->env->probes->structure;
	size_t nblocks = structure ? r->nblocks : 0, ncalls = structure ? r->ncalls : 0;
	if (rtl_grow(&p->blocks, &p->capblocks, p->nblocks + nblocks, sizeof(*p->blocks)) ||
	    rtl_grow(&p->calls, &p->capcalls, p->ncalls + ncalls, sizeof(*p->calls)) ||
	    rtl_grow(&p->points, &p->cappoints, p->npoints + r->npoints, sizeof(*p->points)))
		return -ENOMEM;
	fs->point0 = (uint32_t)p->npoints;
	fs->npoints = (uint32_t)r->npoints;
	for (size_t k = 0; k < r->npoints; k++) {
		struct point_rec *pr = &p->points[p->npoints++];
		*pr = (struct point_rec){ r->points[k].addr, r->points[k].counter, r->points[k].kind, 0,
					  r->points[k].id, r->points[k].op };
		if (point_in_arcs(pr) && p->patch->env->ev->arc_site(p, pr))
			return -RTL_ERR_NO_SPACE;
	}
	fs->block0 = (uint32_t)p->nblocks;
	fs->nblocks = (uint32_t)nblocks;
	for (size_t b = 0; b < fs->nblocks; b++)
		p->blocks[p->nblocks++] = (struct block_rec){ r->blocks[b].addr, r->blocks[b].ninstrs,
							      r->blocks[b].counter, r->blocks[b].rep_counter,
							      { r->blocks[b].via[0], r->blocks[b].via[1] } };
	fs->call0 = (uint32_t)p->ncalls;
	fs->ncalls = (uint32_t)ncalls;
	for (size_t c = 0; c < fs->ncalls; c++)
		p->calls[p->ncalls++] = (struct call_rec){ r->calls[c].site, r->calls[c].target,
							   fs->block0 + r->calls[c].block };
	if (rtl_grow(&p->patch->sites, &p->patch->capsites, p->patch->nsites + r->nsites, sizeof(*p->patch->sites)))
		return -ENOMEM;
	for (size_t k = 0; k < r->nsites; k++) {
		p->patch->sites[p->patch->nsites].addr = r->w.base + r->sites[k].off;
		p->patch->sites[p->patch->nsites++].keep_flags = r->sites[k].keep_flags;
	}
	fs->entry_counter = r->entry_counter;
	if (r->timer_desc)
		p->patch->env->ev->timer_placed(p, fs, r->timer_desc);
	fs->map_from = r->map_from;
	fs->map_to = r->map_to;
	fs->nmap = (uint32_t)r->nmap;
	r->map_from = r->map_to = NULL;
	free(fs->twin_to);
	fs->twin_to = r->twin_to;
	fs->twin_start = r->twin_start;
	r->twin_to = NULL;
	free(fs->sp_rows);
	fs->sp_rows = r->w.rows;
	fs->nsp_rows = (uint32_t)r->w.nrows;
	r->w.rows = NULL;
	r->w.nrows = r->w.caprows = 0;
	return 0;
}

/* Writes 'jmp rel32' over the int3 at ENTRY. With threads running, the four
 * displacement bytes go first and the opcode last, so that no thread runs
 * a half-written jump; so too in an attached process, whose warm-start
 * batch runs while its thread runs. */
static int patch_entry(struct proc *p, uint64_t entry, uint64_t dest)
{
	int32_t rel = (int32_t)(dest - (entry + PATCH_LEN));
	static const uint8_t jmp = 0xe9;
	if (!p->multithreaded && !p->attached) {   /* its one thread is stopped: one write */
		uint8_t insn[PATCH_LEN] = { jmp };
		memcpy(insn + 1, &rel, 4);
		if (p->patch->defer_entries &&
		    !rtl_grow(&p->patch->entries, &p->patch->capentries, p->patch->nentries + 1, sizeof(*p->patch->entries))) {
			p->patch->entries[p->patch->nentries].at = entry;
			memcpy(p->patch->entries[p->patch->nentries++].insn, insn, PATCH_LEN);
			return 0;
		}
		return proc_patch_write(p, entry, insn, PATCH_LEN);
	}
	int err = proc_patch_write(p, entry + 1, &rel, 4);
	return err ? err : proc_patch_write(p, entry, &jmp, 1);
}

static int by_entry(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

/* A write of /proc/PID/mem per entry jump costs more than copying the text
 * around them (as for arming): spans of at most 256 KiB, one read and one
 * write each, one write per jump where a span cannot be read. A span
 * ends before a page that holds no jump: every page written becomes the
 * process's own copy (a fault and 4 KiB copied, twice over for the read
 * and the write), and cc1's 4,700 listed entries lie on about half of
 * its 5,000 text pages. */
static void flush_entries(struct proc *p)
{
	enum { SPAN = 256 << 10, PAGE = 4096 };
	qsort(p->patch->entries, p->patch->nentries, sizeof(*p->patch->entries), by_entry);
	for (size_t from = 0, k = 1; k <= p->patch->nentries; k++) {
		if (k < p->patch->nentries && p->patch->entries[k].at + PATCH_LEN - p->patch->entries[from].at <= SPAN &&
		    p->patch->entries[k].at / PAGE <= (p->patch->entries[k - 1].at + PATCH_LEN - 1) / PAGE + 1)
			continue;
		uint64_t lo = p->patch->entries[from].at, hi = p->patch->entries[k - 1].at + PATCH_LEN;
		uint8_t *buf = k - from > 1 ? malloc(hi - lo) : NULL;
		if (buf && !os_mem_read(p->mem, lo, buf, hi - lo)) {
			for (size_t i = from; i < k; i++)
				memcpy(buf + (p->patch->entries[i].at - lo), p->patch->entries[i].insn, PATCH_LEN);
			if (!proc_patch_write(p, lo, buf, hi - lo))
				from = k;
		}
		for (size_t i = from; i < k; i++)
			proc_patch_write(p, p->patch->entries[i].at, p->patch->entries[i].insn, PATCH_LEN);
		free(buf);
		from = k;
	}
	p->patch->nentries = 0;
}

void patch_batch_begin(struct proc *p, size_t nfuncs)
{
	p->patch->defer_entries = !p->multithreaded && !p->attached;
	p->patch->in_batch = true;
	/* The records of NFUNCS copies (python3.11's batch: 100,000 blocks)
	 * in one growth each: doubling them copy by copy reached fresh pages
	 * twice over, and a fresh page costs more (1.5 us on this VM) than
	 * the record. Room not written costs nothing. */
	enum { BLOCKS = 64, CALLS = 16, PATCHES = 16 };
	bool structure = p->patch->env->probes->structure;   /* (record_result) */
	size_t blocks = structure ? BLOCKS * nfuncs : 0, calls = structure ? CALLS * nfuncs : 0;
	(void)(rtl_grow(&p->blocks, &p->capblocks, p->nblocks + blocks, sizeof(*p->blocks)) ||
	       rtl_grow(&p->calls, &p->capcalls, p->ncalls + calls, sizeof(*p->calls)) ||
	       rtl_grow(&p->patch->patches, &p->patch->cappatches, p->patch->npatches + PATCHES * nfuncs,
			sizeof(*p->patch->patches)));
}

void patch_batch_end(struct proc *p)
{
	flush_entries(p);
	p->patch->defer_entries = false;
	p->patch->in_batch = false;
}

/* Remembers the branches of a new copy that lead to a function still
 * waiting for its copy (at its entry, or inside it from the same module):
 * they are re-pointed at that function's copy when it is made
 * (back-patching), so that a copy calls a copy without the detour through
 * the original entry's jump, and a .cold part made while its parent's copy
 * was being made rejoins the parent's copy, not its original code. */
static void note_branches(struct proc *p, struct module *m, const struct x86_reloc *r)
{
	for (size_t i = 0; i < r->next; i++) {
		uint64_t dest = r->ext[i].dest;
		struct module *tm;
		const rtl_function *f = proc_function_at(p, dest, &tm);
		if (!f || (f->addr + tm->bias != dest && tm != m))
			continue;
		struct func_state *fs = &tm->fs[f - rtl_binary_function(tm->bin, 0)];
		if ((fs->status != FS_ARMED && fs->status != FS_BUSY) ||
		    rtl_grow(&p->patch->patches, &p->patch->cappatches, p->patch->npatches + 1, sizeof(*p->patch->patches)))
			continue;
		/* a copy calls it: its first call is likely near. Not for
		 * the copies of a warm-start batch: what they call that is
		 * not on the list did not run last time either */
		if (fs->status == FS_ARMED && f->addr + tm->bias == dest && !p->patch->in_batch)
			ahead_want(p->patch->env->ahead, tm->bin, (size_t)(fs - tm->fs));
		p->patch->patches[p->patch->npatches] = (struct branch_patch){ r->w.base + r->ext[i].off, fs->patch_head,
								 (uint16_t)m->win };
		fs->patch_head = (uint32_t)++p->patch->npatches;
	}
}

/* Function K of M has a copy: the branches noted for it go there. Other
 * threads may be running such a branch: the four bytes are stored at once
 * (one store within a cache line is atomic on x86). A call or jump to the
 * entry (or into its first bytes), which other threads may be running
 * into the entry's trap right now, is re-pointed only within one 16-byte
 * block of instruction fetch (a field across two could be fetched half
 * old, half new: x86_increment_off tells why). A jump further into the
 * body (a .cold part's back into its parent) runs only once the copy is
 * made. */
static void back_patch(struct proc *p, struct module *m, size_t k)
{
	struct func_state *fs = &m->fs[k];
	uint64_t entry = rtl_binary_function(m->bin, k)->addr + m->bias;
	for (uint32_t i = fs->patch_head; i; i = p->patch->patches[i - 1].next) {
		const struct branch_patch *bp = &p->patch->patches[i - 1];
		bool running = p->multithreaded || p->attached;   /* a thread may run the copy */
		uint8_t *field = window_local(&p->shm.wins[bp->win], bp->field);
		int32_t old;
		memcpy(&old, field, 4);
		uint64_t dest = bp->field + 4 + (uint64_t)(int64_t)old;
		/* no atomic store across two cache lines; a branch into the
		 * entry's jump bytes, which other threads may run into now,
		 * only within one 16-byte fetch block */
		bool head = dest >= entry && dest < entry + PATCH_LEN;
		if (running && (bp->field / 64 != (bp->field + 3) / 64 ||
				(head && bp->field / 16 != (bp->field + 3) / 16))) {
			/* kept: right for the entry (its jump leads here), not
			 * inside the entry jump's bytes (a mempcpy's copy going
			 * on at memcpy+3): those become the original's again,
			 * behind an int3 at the entry that leads to the copy */
			if (dest > entry && dest < entry + PATCH_LEN)
				keep_heads_whole_as(p, &dest, 1, false);
			continue;
		}
		uint64_t to = dest == entry ? fs->entry : x86_map_lookup(fs->map_from, fs->map_to, fs->nmap, dest);
		int64_t rel = (int64_t)(to - (bp->field + 4));
		if (!to || rel != (int32_t)rel)
			continue;
		if (running)
			*(volatile uint32_t *)field = (uint32_t)(int32_t)rel;
		else   /* the one thread is stopped */
			memcpy(field, &(int32_t){ (int32_t)rel }, 4);
	}
	fs->patch_head = 0;
}

/* Function K of M has a copy now, and its entry leads there. */
static void relocated(struct proc *p, struct module *m, size_t k)
{
	struct func_state *fs = &m->fs[k];
	fs->status = FS_DONE;
	back_patch(p, m, k);
	p->patch->env->ev->relocated(p, m, k);
}

static int instrument(struct proc *p, struct module *m, size_t idx, int depth, bool patch,
		      struct lazy_decoded *pre);

/* A branch from F into the middle of another function (a .cold part jumping
 * back, glibc's shared memmove tails) must reach that function's copy: the
 * original bytes after its entry are overwritten by the entry patch. So such
 * functions are instrumented first, and the branch is redirected to them. */
static void instrument_branch_targets(struct proc *p, const uint64_t *targets, size_t n,
				      const rtl_function *f, struct module *m, int depth)
{
	for (size_t i = 0; i < n; i++) {
		uint64_t t = targets[i];
		struct module *tm;
		const rtl_function *tf = proc_function_at(p, t, &tm);
		if (!tf || tm->win < 0)
			continue;
		size_t k = (size_t)(tf - rtl_binary_function(tm->bin, 0));
		bool entry = tf->addr == t - tm->bias;
		if (!entry && tm == m) {
			tm->fs[k].companion_of = (uint32_t)(f - rtl_binary_function(m->bin, 0)) + 1;
			/* relocated later in this warm-start batch: the branch is
			 * noted and re-pointed then (note_branches). Not with
			 * threads, nor attached (back_patch counts a thread as
			 * running then, even alone): a field across two cache
			 * lines would keep its original target, which the entry
			 * jump overwrites when that lies in the entry's first
			 * five bytes (an attached python3 http.server, one
			 * thread between requests: ld.so's mempcpy's copy went
			 * on inside memcpy's entry jump, SIGSEGV). */
			if (tm->fs[k].queued && !p->multithreaded && !p->attached)
				continue;
		}
		if (entry && (tf->sources & RTL_SRC_PLT)) {
			/* a bound PLT slot: the copy calls its function directly */
			t = plt_target(p, tm, &tm->fs[k], tf);
			if (!t || !proc_entry_at(p, t, &tm, &tf) || tm->win < 0)
				continue;
			k = (size_t)(tf - rtl_binary_function(tm->bin, 0));
		}
		if (entry && tm->fs[k].status == FS_NONE &&
		    (tm->fs[k].reason == too_short || tm->fs[k].reason == guessed)) {
			/* too short for an entry patch, or not known to be code
			 * until now: a copy that relocated callers branch to still
			 * counts every call they make */
			if (!instrument(p, tm, k, depth + 1, false, NULL)) {
				relocated(p, tm, k);
			} else {
				tm->fs[k].status = FS_NONE;   /* its reason says why */
			}
			continue;
		}
		/* Direct callees are relocated now too, up to EAGER_DEPTH calls
		 * away: a trap costs more than relocating a small function that
		 * never runs (half of them do not), and the caller's copy then
		 * calls the callee's copy. A large callee costs more to relocate
		 * than a trap: it waits for its first call. */
		if (tm->fs[k].status != FS_ARMED ||
		    (entry && (depth >= EAGER_DEPTH || tf->size > EAGER_MAX_BYTES || tm->fs[k].edge)))
			continue;
		/* not in the dynamic loader while its r_brk is unknown: r_brk
		 * must keep its int3 (it is FS_NOTIFY once known), and which
		 * function that is only shows once the loader runs */
		if (entry && !p->r_brk && proc_is_loader(p, tm))
			continue;
		if (instrument(p, tm, k, depth + 1, true, NULL)) {
			proc_patch_write(p, tf->addr + tm->bias, &tm->fs[k].orig, 1);
			tm->fs[k].status = FS_SKIPPED;
		} else {
			relocated(p, tm, k);
		}
	}
}

/* The bytes of function K of M as the program would run them: the file's,
 * or, where the loader relocates the text (DT_TEXTREL: absolute addresses in
 * the code), the process's, with the entry's original byte under reticle's
 * int3. Reads /proc/PID/mem with pread: safe beside other threads. */
static int read_code(struct proc *p, struct module *m, size_t k, uint8_t *buf)
{
	const rtl_function *f = rtl_binary_function(m->bin, k);
	if (!rtl_binary_has_textrel(m->bin))
		return rtl_binary_read(m->bin, f->addr, buf, f->size);
	int err = os_mem_read(p->mem, f->addr + m->bias, buf, f->size);
	uint8_t st = m->fs[k].status;
	if (!err && f->size && buf[0] == 0xcc && (st == FS_ARMED || st == FS_BUSY || st == FS_NOTIFY || st == FS_HOOK))
		buf[0] = m->fs[k].orig;
	return err;
}

/* Decodes and analyses function K of M, whose bytes D holds. */
static void analyze_code(struct proc *p, struct module *m, size_t k, struct lazy_decoded *d)
{
	const rtl_function *f = rtl_binary_function(m->bin, k);
	d->cached = dcache_get(m, f, d->code, &d->insns, &d->ninsns);
	if (!d->cached)
		x86_decode_function(d->code, f->size, f->addr + m->bias, &d->insns, &d->ninsns);
	free(d->foreign);   /* analysed again (same_as_fresh) */
	d->foreign = x86_foreign_entries(m->bin, m->bias, f, d->insns, d->ninsns, &d->nforeign, &d->foreign_known,
					 m->foreign, p->patch->env->probes->whole_lines);
	struct reloc_ctx ctx = { p, m, NULL, f };
	struct x86_reloc_env env = {
		.addr = f->addr + m->bias, .size = f->size, .code = d->code,
		.interior = d->interior, .ninterior = d->ninterior,
		.foreign = d->foreign, .nforeign = d->nforeign, .foreign_known = d->foreign_known,
		.read = ctx_read, .is_code = ctx_is_code, .in_function = ctx_in_function,
		.is_readonly = ctx_is_readonly, .ctx = &ctx,
		.insns = d->insns, .ninsns = d->ninsns,
		.original_returns = p->original_returns,
	};
	d->err = x86_analyze(&env, &d->an, &d->reason);
}

static void decode(struct proc *p, struct module *m, size_t k, struct lazy_decoded *d, bool analyzed)
{
	const rtl_function *f = rtl_binary_function(m->bin, k);
	*d = (struct lazy_decoded){ .code = malloc(f->size ? f->size : 1) };
	d->interior = fn_interior_pointers(m->bin, f, m->bias, &d->ninterior);
	if (!d->code || !d->interior) {
		d->err = -ENOMEM;
		return;
	}
	if ((d->err = read_code(p, m, k, d->code))) {
		d->reason = "cannot read its bytes";
		return;
	}
	if (analyzed) {
		analyze_code(p, m, k, d);
		return;
	}
	/* a copy saved by an earlier run, or made ahead, needs no decoding */
	if ((d->copy = ccache_find(m, f, d->code, &d->copy_len)))
		return;
	void *blob;
	/* copies made ahead are made for calls with the copy's return address */
	if (!p->original_returns && ahead_take(p->patch->env->ahead, m->bin, k, &blob, &d->copy_len))
		d->copy = d->made = blob;
	else
		analyze_code(p, m, k, d);
}

void lazy_decode(struct proc *p, struct module *m, size_t k, struct lazy_decoded *d)
{
	decode(p, m, k, d, false);
}

void lazy_analyze(struct proc *p, struct module *m, size_t k, struct lazy_decoded *d)
{
	decode(p, m, k, d, true);
}

void lazy_decoded_free(struct lazy_decoded *d)
{
	x86_analysis_free(d->an);
	free(d->code);
	free(d->insns);
	free(d->interior);
	free(d->foreign);
	free(d->made);
	*d = (struct lazy_decoded){ 0 };
}

/* RETICLE_VERIFY_COPIES=1: every saved copy placed is compared with a
 * fresh emission (a test of the fixups, which a missed one would make
 * point into the previous run's address space). */
/* Where code outside enters D's function (x86_foreign_entries, found by
 * its analysis), into ENV: blocks start there, and cover's swept probes
 * stay there. */
static void foreign_entries_of(struct x86_reloc_env *env, const struct lazy_decoded *d)
{
	env->foreign = d->foreign;
	env->nforeign = d->nforeign;
	env->foreign_known = d->foreign_known;
}

static bool verify_copies(void)
{
	static int on = -1;
	if (on < 0) {
		const char *v = getenv("RETICLE_VERIFY_COPIES");
		on = v && *v && strcmp(v, "0");
	}
	return on;
}

/* How R differs from D's function emitted afresh with ENV (the message
 * in BUF, LEN bytes), NULL if it does not. */
static const char *differs_from_fresh(struct lazy_decoded *d, const struct x86_reloc_env *env,
				      const struct x86_reloc *r, char *buf, size_t len)
{
	struct x86_reloc fresh;
	const char *reason = NULL;
	if (x86_emit(d->an, env, r->w.base, &fresh, &reason))
		return reason ? reason : "no fresh copy";
	const char *why = x86_reloc_differs(r, &fresh, buf, len);
	x86_reloc_free(&fresh);
	return why;
}

/* Whether R, restored from function IDX's saved copy (D) with counters from
 * CTR_MARK on, is what emitting it afresh makes now. */
static bool same_as_fresh(struct proc *p, struct module *m, size_t idx, struct lazy_decoded *d,
			  const struct x86_reloc_env *env, const struct x86_reloc *r, size_t ctr_mark)
{
	struct window *w = &p->shm.wins[m->win];
	size_t used = w->ctr_used;
	const char *why;
	char buf[128];
	struct x86_reloc_env e = *env;
	e.atomic = false;   /* as the copy was saved */
	analyze_code(p, m, idx, d);
	e.insns = d->insns;
	e.ninsns = d->ninsns;
	e.interior = d->interior;
	e.ninterior = d->ninterior;
	w->ctr_used = ctr_mark;   /* the same counters */
	foreign_entries_of(&e, d);
	why = d->err ? "no fresh copy" : differs_from_fresh(d, &e, r, buf, sizeof(buf));
	/* Where a library walks the stack, calls push their original return
	 * address all while the process has one thread, and only where the
	 * return point takes a jump once it has more (soft). A copy saved in
	 * one of these states and placed in the other is right too. */
	if (why && !d->err && p->original_returns_soft) {
		e.original_returns_soft = !e.original_returns_soft;
		w->ctr_used = ctr_mark;
		if (!differs_from_fresh(d, &e, r, buf, sizeof(buf)))
			why = NULL;
	}
	w->ctr_used = used;
	if (why)
		rtl_warn("%s: %s: a saved copy differs from a fresh one: %s", m->path,
			 rtl_binary_function(m->bin, idx)->name, why);
	return !why;
}

/* Relocates function IDX of M (decoded already when PRE is given: its
 * buffers are taken over). */
static int instrument_as(struct proc *p, struct module *m, size_t idx, int depth, bool patch,
			 struct lazy_decoded *pre, struct reinstrumented *again);

static int instrument(struct proc *p, struct module *m, size_t idx, int depth, bool patch,
		      struct lazy_decoded *pre)
{
	return instrument_as(p, m, idx, depth, patch, pre, NULL);
}

/* AGAIN: the function has a copy already, which goes on serving what leads
 * into it (return points in the original code, code pointers): only the
 * new copy is made, its entry jump and the old copy's first instruction
 * are the caller's to write (lazy_reinstrument), and what it starts at
 * its entry is said there. */
static int instrument_as(struct proc *p, struct module *m, size_t idx, int depth, bool patch,
			 struct lazy_decoded *pre, struct reinstrumented *again)
{
	const rtl_function *f = rtl_binary_function(m->bin, idx);
	struct func_state *fs = &m->fs[idx];
	struct window *w = &p->shm.wins[m->win];
	struct reloc_ctx ctx = { p, m, w, f };
	struct x86_reloc r;
	struct lazy_decoded d;
	if (pre) {
		d = *pre;
		*pre = (struct lazy_decoded){ 0 };
	} else {
		lazy_decode(p, m, idx, &d);
	}
	bool restore = d.copy != NULL;
	int err = d.err;
	uint64_t targets[MAX_TARGETS];
	size_t ntargets = 0;

	fs->reason = d.reason;
	if (err)
		goto out;
	fs->status = FS_BUSY;   /* a branch target's own pre-pass must not come back here */
	if (restore && x86_persisted_targets(d.copy, d.copy_len, m->bias, targets, MAX_TARGETS, &ntargets)) {
		restore = false;
		analyze_code(p, m, idx, &d);
		if ((err = d.err))
			goto out;
	}
	if (!restore)
		ntargets = x86_external_targets(d.insns, d.ninsns, f->addr + m->bias, f->size, targets,
						MAX_TARGETS);
	if (depth < 8)
		instrument_branch_targets(p, targets, ntargets, f, m, depth);
	size_t ctr_mark = w->ctr_used;
	/* a copy whose increments are laid out by cache line starts on one
	 * (ahead-made copies are emitted so too, prepare.c) */
	size_t align = p->patch->env->probes->whole_lines ? 64 : 16;
	uint64_t dest = w->addr + ((w->code_used + align - 1) & ~(align - 1));
	struct x86_reloc_env env = {
		.addr = f->addr + m->bias, .size = f->size, .code = d.code,
		.interior = d.interior, .ninterior = d.ninterior,
		.read = ctx_read, .redirect = ctx_redirect, .is_code = ctx_is_code,
		.in_function = ctx_in_function,
		.is_readonly = ctx_is_readonly,
		.keeps_caller = ctx_keeps_caller,
		.new_counter = ctx_counter, .plan = ctx_plan, .ctx = &ctx,
		/* per-thread increments are switched from the plain ones once
		 * placed, after the copy is saved as a single thread's */
		.atomic = p->multithreaded && !p->thread_counters,
		.original_returns = p->original_returns,
		/* single-threaded, hot return traps are made plain calls instead
		 * (patch_breakpoint) */
		.original_returns_soft = p->original_returns_soft && p->multithreaded,
		.insns = d.insns, .ninsns = d.ninsns,
		.signal_id = probe_signal_id(m->bin, idx),
		.mem_point = ctx_mem_point, .mem_untraced = ctx_mem_untraced, .mem_table = ctx_mem_table, .fsgsbase = os_has_fsgsbase(),
		.mem_chain = p->patch->env->mem_chain,
		.entry_pad = p->patch->env->dynamic,
		.whole_lines = p->patch->env->probes->whole_lines,
		.sample_leaf_timers = p->patch->env->probes->sample_leaf_timers,
		.twin = p->patch->env->twins,
		.windows = p->patch->env->windows,
	};
	if (restore) {
		err = x86_restore(d.copy, d.copy_len, &env, dest, m->bias, &r);
		if (!err) {
			bool same = !verify_copies() || same_as_fresh(p, m, idx, &d, &env, &r, ctr_mark);
			p->patch->env->stats->copies_restored++;
			p->patch->env->stats->copies_differing += !same;
			if (d.made) {   /* made ahead: saved for the next run too */
				ccache_keep_blob(m, idx, d.code, d.made, d.copy_len);
				d.made = NULL;
				d.copy = NULL;
			}
		} else {   /* emitted, then */
			w->ctr_used = ctr_mark;
			restore = false;
			analyze_code(p, m, idx, &d);
			if ((err = d.err))
				goto out;
			env.insns = d.insns;
			env.ninsns = d.ninsns;
		}
	}
	if (!restore) {
		foreign_entries_of(&env, &d);
		err = x86_emit(d.an, &env, dest, &r, &fs->reason);
	}
	if (err) {
		rtl_debug("%s: relocation failed (%d) at %#llx: code %zu/%zu counters %zu/%zu", f->name, err,
			  (unsigned long long)dest, w->code_used, w->code_cap, w->ctr_used, w->ctr_cap);
		w->ctr_used = ctr_mark;
		goto out;
	}
	if (window_alloc_code(w, r.w.len, align) != dest &&
	    (!enters_a_head(p, targets, ntargets) || window_alloc_code_reserved(w, r.w.len, align) != dest)) {
		fs->reason = "code cache full";
		err = -RTL_ERR_NO_SPACE;
		w->ctr_used = ctr_mark;
		x86_reloc_free(&r);
		goto out;
	}
	memcpy(window_local(w, dest), r.w.buf, r.w.len);
	bool saved = false;
	if (!restore && !env.atomic && m->ccache && !again) {
		uint64_t ctrs = w->addr + w->code_cap;
		saved = ccache_keep(m, idx, d.code, &r, ctrs + ctr_mark, ctrs + w->ctr_used, targets, ntargets);
	}
	/* saved with single-thread counters, or emitted plain: switched in place */
	if (p->multithreaded && (restore || !env.atomic)) {
		for (size_t i = 0; i < r.nsites; i++)
			patch_switch_site(p, window_local(w, dest + r.sites[i].off), dest + r.sites[i].off,
					  r.sites[i].keep_flags);
		r.nsites = 0;
	}
	note_branches(p, m, &r);
	if (!again) {
		patch_returns(p, m, f, &r);
		patch_code_pointers(p, m, f, r.map_from, r.map_to, r.nmap, POINTERS_TO_NEW_COPY);
	} else if (p->original_returns) {   /* every call of the copy returns through them */
		patch_returns_as(p, m, f, &r, true);
	}
	if (again) {
		again->ntimers = r.nentry_timers < 16 ? r.nentry_timers : 16;
		memcpy(again->timers, r.entry_timers, again->ntimers * sizeof(*again->timers));
	}
	if (!(err = record_result(p, fs, &r)) && !(err = record_call_traps(p, m, idx, &r))) {
		fs->entry = dest;
		fs->code_len = (uint32_t)r.w.len;
		uint64_t entry = f->addr + m->bias;
		struct ret_trap *t = (struct ret_trap *)find_ret_trap(p, entry);
		if (t)   /* an int3 entry (entry_shadowed) made again */
			t->to = dest;
		else if (patch && entry_shadowed(&r, entry))
			err = lazy_return_trap(p, entry, dest);
		else if (patch)
			err = patch_entry(p, entry, dest);
	}
	/* decoded once for the next run too, when its copy is not saved */
	if (!err && !restore && !saved && d.insns && !d.cached && m->dcache && !again)
		dcache_keep(m, idx, d.code, d.insns, d.ninsns);
	x86_reloc_free(&r);
out:
	if (err)
		keep_heads_whole(p, targets, ntargets);
	if (err)
		p->patch->env->stats->functions_skipped++;
	else
		p->patch->env->stats->functions_instrumented++;
	lazy_decoded_free(&d);
	return err;
}

/* r_brk (_dl_debug_state) is often a lone 'ret', too short to patch: it
 * gets an int3 of its own as soon as the loader has published it. */
void lazy_arm_r_brk(struct proc *p)
{
	static const uint8_t int3 = 0xcc;
	struct module *m;
	const rtl_function *f;
	struct func_state *fs = p->r_brk ? proc_entry_at(p, p->r_brk, &m, &f) : NULL;
	if (!fs)
		return;
	if (fs->status == FS_NONE && !rtl_binary_read(m->bin, f->addr, &fs->orig, 1) &&
	    !proc_patch_write(p, p->r_brk, &int3, 1))
		fs->status = FS_NOTIFY;
	else if (fs->status == FS_ARMED)
		fs->status = FS_NOTIFY;
}

/* A live jump at AT (5 bytes, the first an instruction's start) made to
 * lead to DEST while threads may run it: an int3 first (a thread that meets
 * it is sent on by lazy_breakpoint), then the displacement, then the
 * opcode, each store whole. */
static int repoint(struct proc *p, uint64_t at, uint64_t dest)
{
	static const uint8_t int3 = 0xcc, jmp = 0xe9;
	int32_t rel = (int32_t)(dest - (at + PATCH_LEN));
	int err = proc_patch_write(p, at, &int3, 1);
	if (!err)
		err = proc_patch_write(p, at + 1, &rel, 4);
	return err ? err : proc_patch_write(p, at, &jmp, 1);
}

/* The same for a jump at AT in a copy, in window W: through reticle's own
 * mapping of the window (the process maps it read-only and shared, which
 * /proc/PID/mem does not write). */
static void repoint_copy(struct window *w, uint64_t at, uint64_t dest)
{
	volatile uint8_t *b = window_local(w, at);
	int32_t rel = (int32_t)(dest - (at + PATCH_LEN));
	b[0] = 0xcc;
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	memcpy((uint8_t *)b + 1, &rel, 4);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	b[0] = 0xe9;
}

/* Return traps that still lead into an old copy of function K of M (the
 * int3 sigpc.c leaves where a signal handler returns to, in a process with
 * original return addresses) lead to the same instruction of its new copy:
 * a preempted goroutine went on in the old copy, with the old probes. */
static void reaim_traps(struct proc *p, struct module *m, size_t k)
{
	const struct func_state *fs = &m->fs[k];
	const struct patch_proc *st = p->patch;
	size_t *mine = malloc((st->nretired ? st->nretired : 1) * sizeof(*mine)), nmine = 0;
	for (size_t j = 0; mine && j < st->nretired; j++)   /* its old copies: a few */
		if (st->retired[j].mod == (uint32_t)(m - p->mods) && st->retired[j].fn == k)
			mine[nmine++] = j;
	for (size_t i = 0; i < st->nret_traps && nmine; i++) {
		struct ret_trap *t = &st->ret_traps[i];
		for (size_t q = 0; q < nmine; q++) {
			const struct retired_points *r = &st->retired[mine[q]];
			if (t->to < r->entry || t->to >= r->entry + r->code_len)
				continue;
			size_t x = rtl_lower_bound_u64(r->map_to, r->nmap, t->to);
			uint64_t to = x < r->nmap && r->map_to[x] == t->to
					      ? x86_map_lookup(fs->map_from, fs->map_to, fs->nmap, r->map_from[x]) : 0;
			if (to)
				t->to = to;
			break;
		}
	}
	free(mine);
}

int lazy_reinstrument(struct proc *p, struct module *m, size_t k, struct reinstrumented *out)
{
	struct func_state *fs = &m->fs[k];
	*out = (struct reinstrumented){ 0 };
	if (fs->status != FS_DONE || !fs->entry)
		return 0;
	const rtl_function *f = rtl_binary_function(m->bin, k);
	uint64_t old = fs->entry, orig = f->addr + m->bias;
	uint64_t *old_from = fs->map_from, *old_to = fs->map_to;
	struct x86_sp_row *old_rows = fs->sp_rows;
	uint32_t old_nrows = fs->nsp_rows;
	/* its map stays: frames still in the old copy are found and moved by it */
	struct retired_points r = { (uint32_t)(m - p->mods), (uint32_t)k, fs->point0, fs->npoints, old,
				    fs->code_len, fs->nmap, old_from, old_to };
	if (rtl_grow(&p->patch->retired, &p->patch->capretired, p->patch->nretired + 1, sizeof(*p->patch->retired)))
		return -ENOMEM;
	fs->map_from = fs->map_to = NULL;   /* record_result takes the new copy's */
	free(fs->twin_to);   /* a copy with a twin is not made again (memtrace): none to keep */
	fs->twin_to = NULL;
	fs->sp_rows = NULL;
	int err = instrument_as(p, m, k, 0, false, NULL, out);
	if (err) {   /* the old copy goes on */
		out->ntimers = 0;
		fs->status = FS_DONE;
		free(fs->map_from);
		free(fs->map_to);
		free(fs->sp_rows);
		fs->map_from = old_from;
		fs->map_to = old_to;
		fs->sp_rows = old_rows;
		fs->nsp_rows = old_nrows;
		return err;
	}
	free(old_rows);
	p->patch->retired[p->patch->nretired++] = r;
	relocated(p, m, k);
	/* the original entry's jump, then what still leads into the old copy
	 * (calls from copies made before) at its first instruction: a 5-byte
	 * nop where copies are made to be replaced (entry_pad), else an int3
	 * for good */
	if (!find_ret_trap(p, orig))   /* else an int3 entry, re-aimed by instrument_as */
		err = repoint(p, orig, fs->entry);
	/* every old copy of it, not only the last, leads to the new one: no
	 * chain of jumps grows with the changes */
	for (size_t i = 0; i < p->patch->nretired && !err; i++) {
		const struct retired_points *o = &p->patch->retired[i];
		struct window *w = o->mod == r.mod && o->fn == r.fn ? proc_window_at(p, o->entry, PATCH_LEN) : NULL;
		struct ret_trap *t = w ? (struct ret_trap *)find_ret_trap(p, o->entry) : NULL;
		if (!w)
			continue;
		if (t)
			t->to = fs->entry;
		else if ((err = add_ret_trap(p, o->entry, fs->entry)))
			break;
		if (p->patch->env->dynamic)
			repoint_copy(w, o->entry, fs->entry);
		else   /* no nop to write a jump over: an int3 for good */
			*(volatile uint8_t *)window_local(w, o->entry) = 0xcc;
	}
	if (!err)
		reaim_traps(p, m, k);
	return err;
}

int lazy_instrument_now(struct proc *p, struct module *m, size_t k, struct lazy_decoded *pre)
{
	int err = instrument(p, m, k, EAGER_DEPTH, true, pre);
	if (err) {
		proc_patch_write(p, rtl_binary_function(m->bin, k)->addr + m->bias, &m->fs[k].orig, 1);
		m->fs[k].status = FS_SKIPPED;
	} else {
		relocated(p, m, k);
	}
	return err;
}

/* A call of a copy that pushed its original return address, whose
 * return point took no jump and traps at every return (-O0's "call f;
 * nop; leave; ret"): made a plain call, returning into the copy, once it
 * has trapped HOT_RETURN times, where only a library the program needs
 * walks the stack (original_returns_soft) and the one thread is stopped.
 * The sequence before TO becomes 'call T' and a short jump to TO
 * (x86_original_call_to_plain). */
enum { HOT_RETURN = 64 };

static void plain_call_before(struct proc *p, uint64_t to)
{
	struct module *m;
	uint64_t at = to - X86_ORIGINAL_CALL_LEN;
	const struct func_state *fs = proc_copy_at(p, at, &m);
	if (!fs || m->win < 0 || proc_copy_at(p, to - 1, &m) != fs ||
	    !x86_original_call_to_plain(window_local(&p->shm.wins[m->win], at), at))
		return;
	rtl_debug("pid %d: the call returning at %#llx in a copy made a plain call (hot return trap)",
		  (int)p->pid, (unsigned long long)to);
}

enum patch_trap patch_breakpoint(struct proc *p, pid_t tid, uint64_t pc)
{
	uint64_t addr = pc - 1;
	struct module *m;
	const rtl_function *f;
	struct ret_trap *rt = p->patch->nret_traps ? (struct ret_trap *)find_ret_trap(p, addr) : NULL;
	if (rt) {   /* a return into the original code where no jump fitted */
		p->patch->env->stats->traps++;
		if (++rt->hits == HOT_RETURN && p->original_returns_soft && !p->multithreaded && !p->attached)
			plain_call_before(p, rt->to);
		return os_set_pc(tid, rt->to) ? PATCH_TRAP_NOT_MINE : PATCH_TRAP_HANDLED;
	}
	if (p->patch->nprobe_traps && patch_is_probe_trap(p, addr))
		return patch_probe_trap(p, tid, addr);
	if (p->patch->nmove_traps && patch_move_trap(p, tid, addr) == PATCH_TRAP_HANDLED)
		return PATCH_TRAP_HANDLED;
	struct func_state *fs = proc_entry_at(p, addr, &m, &f);

	if (!fs)
		return PATCH_TRAP_NOT_MINE;
	size_t idx = (size_t)(fs - m->fs);

	p->patch->env->stats->traps++;
	if (fs->status == FS_NOTIFY || (fs->status == FS_ARMED && addr == p->r_brk)) {
		fs->status = FS_NOTIFY;
		return PATCH_TRAP_LOADER;
	}
	switch (fs->status) {
	case FS_ARMED: {
		struct timespec t0, t1;
		clock_gettime(CLOCK_MONOTONIC, &t0);
		/* RETICLE_DEBUG_LIMIT=N instruments only the first N functions:
		 * bisecting it finds the function whose copy misbehaves. */
		static long limit = -2;
		if (limit == -2) {
			const char *l = getenv("RETICLE_DEBUG_LIMIT");
			limit = l ? atol(l) : -1;
		}
		p->patch->env->ev->first_call(p, m, addr);
		if (fs->status == FS_DONE) {   /* it was on the warm-start list */
			clock_gettime(CLOCK_MONOTONIC, &t1);
			p->patch->env->stats->instrument_seconds += (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
			return os_set_pc(tid, fs->entry) ? PATCH_TRAP_NOT_MINE : PATCH_TRAP_HANDLED;
		}
		int err = limit == 0 ? -RTL_ERR_UNSUPPORTED : instrument(p, m, idx, 0, true, NULL);
		if (limit > 0)
			limit--;
		clock_gettime(CLOCK_MONOTONIC, &t1);
		p->patch->env->stats->instrument_seconds += (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
		if (err) {
			rtl_debug("%s: %s not instrumented: %s", m->path, f->name,
				  fs->reason ? fs->reason : rtl_strerror(err));
			proc_patch_write(p, addr, &fs->orig, 1);
			fs->status = FS_SKIPPED;
			return os_set_pc(tid, addr) ? PATCH_TRAP_NOT_MINE : PATCH_TRAP_HANDLED;
		}
		relocated(p, m, idx);
		rtl_debug("%s: %s (%#llx) -> %#llx, %u blocks", m->path, f->name,
			  (unsigned long long)addr, (unsigned long long)fs->entry, fs->nblocks);
		return os_set_pc(tid, fs->entry) ? PATCH_TRAP_NOT_MINE : PATCH_TRAP_HANDLED;
	}
	case FS_DONE:      /* another thread hit the int3 while the patch was written */
		return os_set_pc(tid, fs->entry) ? PATCH_TRAP_NOT_MINE : PATCH_TRAP_HANDLED;
	case FS_SKIPPED:
		return os_set_pc(tid, addr) ? PATCH_TRAP_NOT_MINE : PATCH_TRAP_HANDLED;
	default:
		return PATCH_TRAP_NOT_MINE;
	}
}

bool lazy_is_entry_trap(struct proc *p, uint64_t addr)
{
	if ((p->patch->nret_traps && find_ret_trap(p, addr)) || patch_is_probe_trap(p, addr))
		return true;
	struct func_state *fs = proc_entry_at(p, addr, NULL, NULL);
	if (!fs)
		return false;
	uint8_t st = fs->status;
	/* DONE: another thread met the int3 while the jump was being written */
	return st == FS_ARMED || st == FS_NOTIFY || st == FS_DONE || st == FS_BUSY || st == FS_HOOK;
}
