/* Copies made again while their functions run (rtl_session_reinstrument),
 * and timers that start on frames already open.
 *
 * A timer inserted while its function is on some thread's stack must time
 * that frame from the insertion on (Paradyn does it with an inferior call
 * at the insertion point). Here every thread of the process is held, moved
 * out of snippet code, and its stack walked while the old copies still
 * have their maps; the copies are made again; then, for each open frame
 * of a function whose new copy starts a numbered timer at its entry (one
 * that starts there unconditionally and whose latency nothing reads), a
 * frame of that timer is opened in the thread's area as if the function
 * had been entered at the insertion. So that its return closes it, the
 * frame must return through the new copy: the thread's pc (when it is in
 * the function itself) and the return address its callee will return to
 * are moved from the old copy to the same instruction of the new one. In
 * a process with original return addresses the return addresses are the
 * original code's, whose return points lead to the newest copy already. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <reticle/error.h>
#include "engine/engine.h"
#include "isa/x86_64/relocate.h"
#include "os/linux/os.h"
#include "patch/patch.h"
#include "runtime/thread_area.h"
#include "sample/sample.h"
#include "util/array.h"
#include "util/log.h"

enum { MAX_FRAMES = 512 };

struct wanted_fn {
	struct module *m;
	size_t k;
	struct reinstrumented made;
	bool ok;                  /* made again */
	int8_t offsets;           /* offset_dispatch: -1 not yet known */
};

struct walked {
	struct thread *t;
	bool movable;             /* held by reticle's interrupt: its pc may move */
	size_t n;
	uint64_t frames[MAX_FRAMES], cfas[MAX_FRAMES];
};

static struct wanted_fn *wanted_at(struct wanted_fn *w, size_t n, struct module *m, size_t k)
{
	for (size_t i = 0; i < n; i++)
		if (w[i].m == m && w[i].k == k)
			return &w[i];
	return NULL;
}

/* Whether W's function dispatches through a table of offsets from a
 * label: a register may hold the old copy's label, to which the new copy
 * would add its own offsets. Such a frame finishes in its old copy. */
static bool offset_dispatch(struct proc *p, struct wanted_fn *w)
{
	if (w->offsets < 0) {   /* once per function, not per frame of it */
		struct lazy_decoded d;
		lazy_analyze(p, w->m, w->k, &d);
		w->offsets = !d.err && d.an && x86_cfg_has_offset_tables(d.an);
		lazy_decoded_free(&d);
	}
	return w->offsets;
}

/* Where the code at AT in an old copy of W's function goes on in its new
 * copy: the same instruction's code (its snippets first), or its own bytes
 * when AT is at them; 0 if AT is not in an old copy of it or not at such a
 * place. */
static uint64_t in_new_copy(struct proc *p, struct wanted_fn *w, uint64_t at)
{
	const struct func_state *fs = &w->m->fs[w->k];
	struct copy_map c;
	uint64_t orig;
	bool own;
	if (!copy_map_at(p, at, &c) || c.m != w->m || c.k != w->k || c.entry == fs->entry ||
	    !copy_original(p, at, &orig, &own) || offset_dispatch(p, w))
		return 0;
	uint64_t to = x86_map_lookup(fs->map_from, fs->map_to, fs->nmap, orig);
	if (!to || !own)
		return to;
	/* its own bytes end where the next instruction's code starts */
	size_t i = copy_map_index(&c, at);
	uint64_t len = i + 1 < c.n ? c.from[i + 1] - c.from[i] : 0;
	uint64_t next = len ? x86_map_lookup(fs->map_from, fs->map_to, fs->nmap, c.from[i + 1]) : 0;
	uint8_t a[16], b[16];
	if (!next || len > sizeof(a) || next - len < to || os_mem_read(p->mem, at, a, len) ||
	    os_mem_read(p->mem, next - len, b, len) || memcmp(a, b, len))
		return 0;
	return next - len;
}

/* Thread T's pc, in an old copy of W's function, moves to its new copy. */
static void move_pc(struct proc *p, struct wanted_fn *w, struct thread *t)
{
	uint64_t pc;
	if (os_get_pc(t->tid, &pc))
		return;
	bool restart = os_syscall_restarts(t->tid);
	uint64_t to = in_new_copy(p, w, restart ? pc - 2 : pc);
	if (to && !os_set_pc(t->tid, to + (restart ? 2 : 0)))
		rtl_debug("tid %d: from %#llx into the new copy at %#llx", (int)t->tid, (unsigned long long)pc,
			  (unsigned long long)to + (restart ? 2 : 0));
}

/* The return address at SLOT, into an old copy of W's function, is made
 * the same place in its new copy. */
static void move_return(struct proc *p, struct wanted_fn *w, uint64_t slot)
{
	uint64_t ret, to;
	if (os_mem_read(p->mem, slot, &ret, 8) || !(to = in_new_copy(p, w, ret)))
		return;
	if (!os_mem_write(p->mem, slot, &to, 8))
		rtl_debug("pid %d: return address %#llx at %#llx into the new copy: %#llx", (int)p->pid,
			  (unsigned long long)ret, (unsigned long long)slot, (unsigned long long)to);
}

/* Opens W's timers on frame I of walk K (frame I runs W's function). How
 * many frames were opened. */
static size_t open_frame(struct proc *p, const struct walked *k, size_t i, struct wanted_fn *w, uint64_t now,
			 bool *full)
{
	uint64_t sp = k->cfas[i] - 8, ret;
	if (!k->cfas[i] || k->t->area <= 0 || os_mem_read(p->mem, sp, &ret, 8))
		return 0;
	uint8_t *a = thread_area_local(&p->areas, (unsigned)k->t->area);
	size_t opened = 0;
	for (size_t j = 0; j < w->made.ntimers; j++) {
		uint64_t timer = TA_WORDS + (uint64_t)w->made.timers[j] * sizeof(struct ta_timer);
		int rc = thread_area_open_frame(a, sp, ret, timer, now);
		opened += rc == 0;
		*full |= rc < 0;
	}
	if (opened && i == 0 && k->movable)
		move_pc(p, w, k->t);
	else if (opened && !p->original_returns && i > 0 && k->cfas[i - 1])
		move_return(p, w, k->cfas[i - 1] - 8);
	return opened;
}

/* Holds P's threads and walks their stacks: *OUT (one per thread). */
static size_t walk_all(struct proc *p, struct hold *h, size_t nh, struct walked **out)
{
	struct walked *ws = calloc(nh ? nh : 1, sizeof(*ws));
	struct unw_mods *unw = unw_mods_new();
	size_t n = 0;
	for (size_t i = 0; ws && unw && i < nh; i++) {
		struct thread *t = proc_thread(p, h[i].tid);
		if (!t || h[i].how == HOLD_GONE || t->area <= 0)
			continue;
		struct walked *k = &ws[n];
		k->t = t;
		/* out of snippet code first: the originals' unwind rules hold at
		 * an instruction */
		uint64_t orig;
		bool own, restart;
		k->movable = h[i].how == HOLD_STOPPED && !os_sigtrap_pending(t->tid) &&
			     copy_settle(p, t, &orig, &own, &restart);
		k->n = stack_walk(p, t->tid, unw, k->frames, k->cfas, MAX_FRAMES);
		rtl_debug("tid %d: %zu frames walked%s", (int)t->tid, k->n, k->movable ? "" : " (its pc stays)");
		n += k->n > 0;
	}
	if (unw)
		unw_mods_free(unw);
	*out = ws;
	return n;
}

struct wanted_list {
	bool (*want)(const char *module, const char *name, uint64_t addr, void *ctx);
	void *ctx;
	struct wanted_fn *fns;
	size_t n, cap;
};

static bool add_wanted(struct proc *p, struct module *m, size_t k, void *ctx)
{
	(void)p;
	struct wanted_list *l = ctx;
	const rtl_function *f = rtl_binary_function(m->bin, k);
	if (!l->want(m->path, f->name, f->addr, l->ctx))
		return true;
	if (rtl_grow(&l->fns, &l->cap, l->n + 1, sizeof(*l->fns)))
		return false;
	l->fns[l->n++] = (struct wanted_fn){ .m = m, .k = k, .offsets = -1 };
	return true;
}

long reinstrument_running(struct proc *p, bool (*want)(const char *module, const char *name, uint64_t addr, void *ctx),
			  void *ctx)
{
	struct wanted_list l = { want, ctx, NULL, 0, 0 };
	if (!each_relocated(p, add_wanted, &l)) {
		free(l.fns);
		return -ENOMEM;
	}
	struct wanted_fn *fns = l.fns;
	size_t nfns = l.n;
	if (!nfns)
		return 0;
	/* timed: every thread held and its stack walked before the copies change */
	struct hold *h = NULL;
	struct walked *ws = NULL;
	size_t nh = 0, nws = 0;
	uint64_t t0 = os_tsc();
	if (p->areas.addr && session_can_hold(p)) {   /* else frames open at the next entry */
		nh = session_hold(p->s, p, &h);
		nws = walk_all(p, h, nh, &ws);
	}
	long made = 0;
	for (size_t i = 0; i < nfns; i++) {
		const rtl_function *f = rtl_binary_function(fns[i].m->bin, fns[i].k);
		int err = lazy_reinstrument(p, fns[i].m, fns[i].k, &fns[i].made);
		if (err)
			rtl_warn("pid %d: %s: its copy could not be made again (%s): the old one serves on", (int)p->pid,
				 f->name ? f->name : "?", rtl_strerror(err));
		fns[i].ok = !err;
		made += !err;
	}
	size_t opened = 0;
	bool full = false;
	for (size_t i = 0; i < nws; i++)
		for (size_t j = 0; j < ws[i].n; j++) {
			struct module *m;
			const rtl_function *f = proc_function_at(p, ws[i].frames[j], &m);
			struct wanted_fn *w = f ? wanted_at(fns, nfns, m, (size_t)(f - rtl_binary_function(m->bin, 0))) : NULL;
			if (w && w->ok && w->made.ntimers)
				opened += open_frame(p, &ws[i], j, w, t0, &full);
		}
	if (full)
		rtl_warn("pid %d: a thread's stack of timed frames is full: a frame open at the change is not timed",
			 (int)p->pid);
	if (opened)
		rtl_debug("pid %d: %zu timer frames opened on functions already running", (int)p->pid, opened);
	if (h)
		session_unhold(p->s, p, h, nh, os_tsc() - t0);
	free(ws);
	free(fns);
	return made;
}

void open_frames_attached(struct proc *p)
{
	if (!p->areas.addr)
		return;
	struct unw_mods *unw = unw_mods_new();
	struct walked *k = malloc(sizeof(*k));
	uint64_t now = os_tsc();
	size_t opened = 0;
	bool full = false;
	for (size_t i = 0; unw && k && i < p->nthreads; i++) {
		struct thread *t = &p->threads[i];
		if (t->area <= 0)
			continue;
		uint8_t *a = thread_area_local(&p->areas, (unsigned)t->area);
		k->n = stack_walk(p, t->tid, unw, k->frames, k->cfas, MAX_FRAMES);
		for (size_t j = 0; j < k->n; j++) {
			struct module *m;
			const rtl_function *f = proc_function_at(p, k->frames[j], &m);
			const struct func_state *fs = f ? &m->fs[f - rtl_binary_function(m->bin, 0)] : NULL;
			uint64_t ret;
			/* timer 0 takes what did not fit: not a function's own */
			if (!fs || fs->status != FS_DONE || fs->timer <= TA_WORDS || !k->cfas[j] ||
			    os_mem_read(p->mem, k->cfas[j] - 8, &ret, 8))
				continue;
			int rc = thread_area_open_frame(a, k->cfas[j] - 8, ret, fs->timer, now);
			opened += rc == 0;
			full |= rc < 0;
		}
	}
	if (full)
		rtl_warn("pid %d: a thread's stack of timed frames is full: a frame open at the attach is not timed",
			 (int)p->pid);
	rtl_debug("pid %d: %zu timer frames opened on functions running at the attach", (int)p->pid, opened);
	free(k);
	if (unw)
		unw_mods_free(unw);
}
