/* Writing a process image into the session's profile: its row in the
 * process tree, its modules, functions, and each collector's measurements,
 * read from the counters in shared memory. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <reticle/collector.h>
#include <reticle/error.h>
#include <reticle/profile.h>
#include "engine/engine.h"
#include "engine/span.h"
#include "collectors/builtin.h"
#include "engine/session_priv.h"
#include "runtime/arc_table.h"
#include "util/array.h"
#include "util/log.h"

/* The profile row of module M, added when first needed. */
static int module_row(struct proc *p, struct module *m, rtl_profile *prof)
{
	if (m->profile_id >= 0)
		return 0;
	return rtl_profile_add_process_module(prof, p->image, m->path, m->bias, &m->profile_id);
}

/* The profile row of function FS (of M, F), added with its state. */
int finish_function_row(struct proc *p, struct module *m, const rtl_function *f, struct func_state *fs,
			rtl_profile *prof, const char *why_not)
{
	if (fs->profile_id >= 0)
		return 0;
	int err = module_row(p, m, prof);
	return err ? err : rtl_profile_add_function(prof, m->profile_id, f->name, f->addr, f->size,
						    fs->status == FS_DONE,
						    fs->status == FS_DONE ? NULL : fs->reason ? fs->reason : why_not,
						    &fs->profile_id);
}

/* Whether F of M is in the run's scope: functions armed for the engine's
 * own needs outside it (the loader's, the program's entry) are left out. */
static bool in_scope(struct proc *p, const struct module *m, const rtl_function *f)
{
	return span_function_in_scope(session_span(p->s), m->path, f);
}

static int add_functions(struct proc *p, rtl_profile *prof)
{
	for (size_t i = 0; i < p->nmods; i++) {
		p->mods[i].profile_id = -1;
		size_t n = rtl_binary_function_count(p->mods[i].bin);
		for (size_t k = 0; k < n; k++)
			p->mods[i].fs[k].profile_id = -1;
	}
	for (size_t i = 0; i < p->nmods; i++) {
		struct module *m = &p->mods[i];
		size_t n = rtl_binary_function_count(m->bin);
		for (size_t k = 0; k < n; k++) {
			struct func_state *fs = &m->fs[k];
			const rtl_function *f = rtl_binary_function(m->bin, k);
			/* measured functions, and in the main executable also the
			 * skipped ones, so that a report can say what was missed */
			bool skipped = fs->status == FS_SKIPPED || (m->is_main && fs->status == FS_NONE &&
								     f->sources != RTL_SRC_PLT);
			if ((fs->status != FS_DONE && !skipped) || !in_scope(p, m, f))
				continue;
			int err = finish_function_row(p, m, f, fs, prof, "never called");
			if (err)
				return err;
		}
	}
	return 0;
}

/* The original address of run-time ADDR in a copy (a table the copy has
 * its own copy of holds copies' addresses), or ADDR. */
static uint64_t original_of(struct proc *p, uint64_t addr)
{
	struct module *m;
	const struct func_state *fs = proc_copy_at(p, addr, &m);
	if (!fs)
		return addr;
	if (addr == fs->entry)
		return rtl_binary_function(m->bin, (size_t)(fs - m->fs))->addr + m->bias;
	const uint64_t *labels = func_state_labels(fs, addr);
	size_t j = rtl_lower_bound_u64(labels, fs->nmap, addr);
	return j < fs->nmap && labels[j] == addr ? fs->map_from[j] : addr;
}

/* The function a call to run-time TARGET runs: the one TARGET is in, or
 * through a PLT stub the one its slot was bound to. Its profile row (*ID)
 * is added when it has none yet (a function reticle did not relocate,
 * reached by calls all the same) when CREATE says the call ran; *ID is -1
 * outside every function. */
static int callee_of(struct proc *p, uint64_t target, rtl_profile *prof, bool create, int64_t *id,
		     uint64_t *link_target)
{
	struct module *m;
	const rtl_function *f = proc_function_at(p, target, &m);
	if (!f) {
		target = original_of(p, target);
		f = proc_function_at(p, target, &m);
	}
	*id = -1;
	*link_target = target;
	if (!f)
		return 0;
	struct func_state *fs = &m->fs[f - rtl_binary_function(m->bin, 0)];
	if ((f->sources & RTL_SRC_PLT) && fs->entry && fs->entry != target) {
		struct module *tm;
		const rtl_function *tf = proc_function_at(p, fs->entry, &tm);
		if (tf) {
			target = fs->entry;
			m = tm;
			f = tf;
			fs = &m->fs[f - rtl_binary_function(m->bin, 0)];
		}
	}
	*link_target = target - m->bias;
	int err = create ? finish_function_row(p, m, f, fs, prof, "not relocated") : 0;
	*id = fs->profile_id;
	return err;
}

/* Scratch arrays for the views of one function at a time. */
struct scratch {
	struct rtl_block_view *bv;
	struct rtl_call_view *cv;
	struct rtl_counter_view *ctr;
	struct rtl_target_view *tv;
	struct rtl_context_view *xv;
	struct rtl_key_view *kv;
	const struct point_rec **pts;   /* the function's point records, old copies' too */
	size_t bcap, ccap, ctrcap, tcap, xcap, kcap, ptcap, npts;
	struct arcs arcs;
	struct contexts contexts;
};

static void add_retired(const struct point_rec *pr, void *ctx)
{
	struct scratch *sc = ctx;
	if (!rtl_grow(&sc->pts, &sc->ptcap, sc->npts + 1, sizeof(*sc->pts)))
		sc->pts[sc->npts++] = pr;
}

/* Function K of M's point records into SC's pts: its copy's, and those of
 * the copies made before it (lazy_reinstrument). */
static int points_of(struct proc *p, struct module *m, size_t k, struct scratch *sc)
{
	const struct func_state *fs = &m->fs[k];
	sc->npts = 0;
	if (rtl_grow(&sc->pts, &sc->ptcap, fs->npoints, sizeof(*sc->pts)))
		return -ENOMEM;
	for (uint32_t i = 0; i < fs->npoints; i++)
		sc->pts[sc->npts++] = &p->points[fs->point0 + i];
	if (patch_has_retired(p))
		patch_each_retired_point(p, (size_t)(m - p->mods), k, add_retired, sc);
	return 0;
}

/* Every snippet's counter of FS (link-time addresses), sorted. */
static size_t counter_views(struct proc *p, struct module *m, size_t k, const struct scratch *sc,
			    struct rtl_counter_view *v)
{
	const struct func_state *fs = &m->fs[k];
	size_t n = 0;
	if (fs->entry_counter)
		v[n++] = (struct rtl_counter_view){ RTL_POINT_ENTRY, RTL_PRIM_COUNT,
						    rtl_binary_function(m->bin, k)->addr,
						    span_count(p, fs->entry_counter), 0 };
	for (uint32_t b = 0; b < fs->nblocks; b++) {
		const struct block_rec *br = &p->blocks[fs->block0 + b];
		if (br->counter)
			v[n++] = (struct rtl_counter_view){ RTL_POINT_BLOCK, RTL_PRIM_COUNT, br->addr - m->bias,
							    span_count(p, br->counter), 0 };
		if (br->rep_counter)
			v[n++] = (struct rtl_counter_view){ RTL_POINT_REP_ITERATIONS, RTL_PRIM_COUNT,
							    br->addr - m->bias, span_count(p, br->rep_counter), 0 };
	}
	for (size_t i = 0; i < sc->npts; i++) {
		const struct point_rec *pr = sc->pts[i];
		if (point_in_arcs(pr))
			continue;   /* its words are no count (targets_of, keys_of) */
		v[n++] = (struct rtl_counter_view){ pr->kind, RTL_PRIM_COUNT, pr->addr - m->bias,
						    span_count(p, pr->counter), pr->id };
	}
	rtl_counters_sort(v, n);
	return n;
}

static int cmp_target(const void *a, const void *b)
{
	const struct rtl_target_view *x = a, *y = b;
	if (x->site != y->site)
		return x->site < y->site ? -1 : 1;
	if (x->callee != y->callee)
		return x->callee < y->callee ? -1 : 1;
	return (x->target > y->target) - (x->target < y->target);
}

/* The targets of FS's indirect call sites, from the arc tables. */
static int targets_of(struct proc *p, struct module *m, const struct func_state *fs,
		      rtl_profile *prof, struct scratch *sc, size_t *out)
{
	size_t n = 0;
	for (uint32_t i = 0; i < fs->npoints; i++) {
		const struct point_rec *pr = &p->points[fs->point0 + i];
		if (pr->kind != RTL_POINT_INDIRECT_TARGET)
			continue;
		const struct arc_entry *e;
		size_t k = arcs_of_site(p, &sc->arcs, pr, &e);
		if (rtl_grow(&sc->tv, &sc->tcap, n + k, sizeof(*sc->tv)))
			return -ENOMEM;
		for (size_t j = 0; j < k; j++) {
			struct rtl_target_view *t = &sc->tv[n++];
			uint64_t target = e[j].key & ((1ull << ARC_SITE_SHIFT) - 1);
			int err = callee_of(p, target, prof, true, &t->callee, &t->target);
			if (err)
				return err;
			t->site = pr->addr - m->bias;
			t->count = e[j].count;
		}
	}
	qsort(sc->tv, n, sizeof(*sc->tv), cmp_target);
	*out = n;
	return 0;
}

static int cmp_key(const void *a, const void *b)
{
	const struct rtl_key_view *x = a, *y = b;
	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	if (x->kind != y->kind)
		return x->kind < y->kind ? -1 : 1;
	if (x->id != y->id)
		return x->id < y->id ? -1 : 1;
	return (x->key > y->key) - (x->key < y->key);
}

/* The values of FS's RTL_PRIM_COUNT_BY snippets, from the arc tables
 * (sign-extended from their 47 bits). */
static int keys_of(struct proc *p, struct module *m, struct scratch *sc, size_t *out)
{
	size_t n = 0;
	for (size_t i = 0; i < sc->npts; i++) {
		const struct point_rec *pr = sc->pts[i];
		if (pr->op != RTL_PRIM_COUNT_BY)
			continue;
		const struct arc_entry *e;
		size_t k = arcs_of_site(p, &sc->arcs, pr, &e);
		if (rtl_grow(&sc->kv, &sc->kcap, n + k, sizeof(*sc->kv)))
			return -ENOMEM;
		for (size_t j = 0; j < k; j++)
			sc->kv[n++] = (struct rtl_key_view){ pr->kind, pr->id, pr->addr - m->bias,
							     arc_key_value(e[j].key), e[j].count };
	}
	qsort(sc->kv, n, sizeof(*sc->kv), cmp_key);
	*out = n;
	return 0;
}

/* Blocks left without a counter where probes are swept (cover alone:
 * x86_cfg_implied_blocks) ran when one of the blocks they lead to ran.
 * Those are dominated by them, so a pass from the last block back settles
 * most; passes repeat while one changes (counts only go from 0 to 1). */
static void implied_runs(const struct block_rec *br, struct rtl_block_view *bv, uint32_t n)
{
	for (bool changed = true; changed;) {
		changed = false;
		for (uint32_t b = n; b-- > 0;)
			for (int k = 0; k < 2 && br[b].via[0] && !bv[b].count; k++) {
				uint32_t s = br[b].via[k];
				if (s && s <= n && bv[s - 1].count) {
					bv[b].count = 1;
					changed = true;
				}
			}
	}
}

static int finish_function(struct proc *p, struct module *m, size_t k, rtl_profile *prof,
			   struct scratch *sc)
{
	const rtl_function *f = rtl_binary_function(m->bin, k);
	struct func_state *fs = &m->fs[k];
	if (points_of(p, m, k, sc) ||
	    rtl_grow(&sc->bv, &sc->bcap, fs->nblocks, sizeof(*sc->bv)) ||
	    rtl_grow(&sc->cv, &sc->ccap, fs->ncalls, sizeof(*sc->cv)) ||
	    rtl_grow(&sc->ctr, &sc->ctrcap, 1 + 2 * (size_t)fs->nblocks + sc->npts, sizeof(*sc->ctr)))
		return -ENOMEM;
	for (uint32_t b = 0; b < fs->nblocks; b++) {
		const struct block_rec *br = &p->blocks[fs->block0 + b];
		sc->bv[b] = (struct rtl_block_view){ br->addr - m->bias, br->ninstrs,
						     br->counter ? span_count(p, br->counter) : 0,
						     br->rep_counter ? span_count(p, br->rep_counter) : 0 };
		if (p->sweeping && sc->bv[b].count)
			sc->bv[b].count = 1;   /* ran: removed probes stopped counting */
	}
	implied_runs(p->blocks + fs->block0, sc->bv, fs->nblocks);
	size_t nctr = counter_views(p, m, k, sc, sc->ctr);
	for (uint32_t c = 0; c < fs->ncalls; c++) {
		const struct call_rec *cr = &p->calls[fs->call0 + c];
		uint32_t b = cr->block - fs->block0;
		sc->cv[c] = (struct rtl_call_view){ cr->site - m->bias, -1, b };
		const struct rtl_counter_view *before = rtl_counter_find(sc->ctr, nctr, RTL_POINT_CALL_BEFORE,
									 cr->site - m->bias);
		bool ran = sc->bv[b].count || (before && before->value);
		uint64_t ignored;
		int err = callee_of(p, cr->target, prof, ran, &sc->cv[c].callee, &ignored);
		if (err)
			return err;
	}
	size_t ntargets, ntimers = 0, nkeys;
	int err = targets_of(p, m, fs, prof, sc, &ntargets);
	if (!err)
		err = keys_of(p, m, sc, &nkeys);
	if (err)
		return err;
	struct rtl_timer_view *timers = fs->timer ? timers_view(p, fs, &ntimers) : NULL;
	size_t ncontexts = 0;
	const struct context_rec *cr = fs->timer ? timers_contexts_of(&sc->contexts, fs, &ncontexts) : NULL;
	if (rtl_grow(&sc->xv, &sc->xcap, ncontexts, sizeof(*sc->xv))) {
		free(timers);
		return -ENOMEM;
	}
	for (size_t i = 0; i < ncontexts; i++)
		sc->xv[i] = cr[i].v;
	struct rtl_function_view view = {
		.id = fs->profile_id, .module = m->path, .name = f->name, .addr = f->addr,
		.size = f->size, .entries = fs->entry_counter ? span_count(p, fs->entry_counter) : 0,
		.blocks = sc->bv, .nblocks = fs->nblocks, .calls = sc->cv, .ncalls = fs->ncalls,
		.counters = sc->ctr, .ncounters = nctr,
		.targets = sc->tv, .ntargets = ntargets, .keys = sc->kv, .nkeys = nkeys,
		.timers = timers, .ntimers = ntimers,
		.contexts = sc->xv, .ncontexts = ncontexts,
	};
	if (p->sweeping && view.entries)
		view.entries = 1;
	for (size_t c = 0; c < session_ncollectors(p->s) && !err; c++)
		if (session_collector(p->s, c)->finish)
			err = session_collector(p->s, c)->finish(&view, prof);
	free(timers);
	return err;
}

/* The run's context in the profile: "span" (FROM..TO, "start" and "end"
 * for none), "modules" and "functions" (the scope's globs, comma-separated). */
static int span_meta(const struct span_def *d, rtl_profile *prof)
{
	char a[300], b[300], text[620];
	int err = 0;
	if (d->from.kind || d->to.kind) {
		snprintf(text, sizeof(text), "%s..%s", d->from.kind ? span_edge_text(&d->from, a, sizeof(a)) : "start",
			 d->to.kind ? span_edge_text(&d->to, b, sizeof(b)) : "end");
		err = rtl_profile_set_meta(prof, "span", text);
	}
	char *const *lists[] = { d->modules, d->functions };
	const char *keys[] = { "modules", "functions" };
	for (size_t l = 0; l < 2 && !err; l++) {
		if (!lists[l])
			continue;
		text[0] = 0;
		for (size_t i = 0; lists[l][i]; i++)
			snprintf(text + strlen(text), sizeof(text) - strlen(text), "%s%s", i ? "," : "", lists[l][i]);
		err = rtl_profile_set_meta(prof, keys[l], text);
	}
	return err;
}

int session_write_meta(const struct rtl_session *s, rtl_profile *prof, pid_t pid,
		       const char *command, int status)
{
	char buf[64], names[256] = "";
	for (size_t c = 0; c < session_ncollectors(s); c++) {
		if (c)
			strncat(names, ",", sizeof(names) - strlen(names) - 1);
		strncat(names, session_collector(s, c)->name, sizeof(names) - strlen(names) - 1);
	}
	int err = rtl_profile_set_meta(prof, "collectors", names);
	snprintf(buf, sizeof(buf), "%d", (int)pid);
	if (!err)
		err = rtl_profile_set_meta(prof, "pid", buf);
	snprintf(buf, sizeof(buf), "%d", status);
	if (!err)
		err = rtl_profile_set_meta(prof, "exit_status", buf);
	if (!err && command)
		err = rtl_profile_set_meta(prof, "command", command);
	if (!err)
		err = rtl_profile_set_meta(prof, "tool", "reticle 0.1.0");
	if (!err && session_aslr(s))
		err = rtl_profile_set_meta(prof, "aslr", session_aslr(s));
	if (!err)
		err = span_meta(session_span(s), prof);
	char *const *meta = session_meta(s);
	for (size_t i = 0; !err && meta && meta[i] && meta[i + 1]; i += 2)
		err = rtl_profile_set_meta(prof, meta[i], meta[i + 1]);
	return err;
}

/* The collectors' finish_image(): the image's numbered timers. */
static int finish_image(struct proc *p, rtl_profile *prof)
{
	const struct rtl_session *s = p->s;
	bool wanted = false;
	for (size_t c = 0; c < session_ncollectors(s); c++)
		wanted |= session_collector(s, c)->finish_image != NULL;
	if (!wanted)
		return 0;
	struct rtl_image_view v = { p->pid, p->tsc_hz, NULL, 0 };
	struct rtl_timer_view *t = timers_numbered(p, &v.ntimers);
	if (!t)
		return -ENOMEM;
	v.timers = t;
	int err = 0;
	for (size_t c = 0; c < session_ncollectors(s) && !err; c++)
		if (session_collector(s, c)->finish_image)
			err = session_collector(s, c)->finish_image(&v, prof);
	free(t);
	return err;
}

int proc_write_profile(struct proc *p, rtl_profile *prof, uint64_t end_ns)
{
	struct scratch sc = { 0 };
	rtl_profile_process row = {
		.id = p->image, .parent = p->parent_image, .pid = p->pid, .kind = p->kind,
		.command = p->command, .exit_status = p->status, .start_ns = p->start_ns,
		.end_ns = end_ns,
	};
	timers_harvest_all(p);   /* the threads left: the image ends */
	p->tsc_hz = timers_tsc_hz(p->s);   /* measured once: every time of the image at one rate */
	int err = rtl_profile_add_process(prof, &row);
	if (!err)
		err = add_functions(p, prof);
	if (!err)
		err = span_arcs(p, &sc.arcs);
	if (!err)
		err = timers_contexts(p, &sc.contexts);
	for (size_t i = 0; !err && i < p->nmods; i++) {
		struct module *m = &p->mods[i];
		size_t n = rtl_binary_function_count(m->bin);
		for (size_t k = 0; !err && k < n; k++)
			if (m->fs[k].status == FS_DONE && in_scope(p, m, rtl_binary_function(m->bin, k)))
				err = finish_function(p, m, k, prof, &sc);
	}
	if (!err)
		err = finish_image(p, prof);
	if (!err)
		err = samples_write(p, prof);
	if (!err)
		err = shim_write(p, prof);
	if (!err)
		err = memtrace_write(p, prof);
	if (!err)
		err = bbv_write(p, prof);
	free(sc.bv);
	free(sc.cv);
	free(sc.ctr);
	free(sc.tv);
	free(sc.xv);
	free(sc.kv);
	free(sc.pts);
	free(sc.contexts.r);
	arcs_free(&sc.arcs);
	return err;
}
