/* Writing a process image into the session's profile: its row in the
 * process tree, its modules, functions, and each collector's measurements,
 * read from the counters in shared memory. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <reticle/collector.h>
#include <reticle/error.h>
#include <reticle/profile.h>
#include "engine/engine.h"
#include "engine/session_priv.h"
#include "util/array.h"

/* Profile id of the function whose entry is run-time TARGET, -1 if none. */
static int64_t callee_id(struct proc *p, uint64_t target)
{
	struct func_state *fs = proc_entry_at(p, target, NULL, NULL);
	return fs ? fs->profile_id : -1;
}

static int add_functions(struct proc *p, rtl_profile *prof)
{
	for (size_t i = 0; i < p->nmods; i++) {
		struct module *m = &p->mods[i];
		size_t n = rtl_binary_function_count(m->bin);
		int64_t mid = -1;
		for (size_t k = 0; k < n; k++) {
			struct func_state *fs = &m->fs[k];
			const rtl_function *f = rtl_binary_function(m->bin, k);
			fs->profile_id = -1;
			/* measured functions, and in the main executable also the
			 * skipped ones, so that a report can say what was missed */
			bool skipped = fs->status == FS_SKIPPED || (m->is_main && fs->status == FS_NONE &&
								     f->sources != RTL_SRC_PLT);
			if (fs->status != FS_DONE && !skipped)
				continue;
			int err;
			if (mid < 0 && (err = rtl_profile_add_process_module(prof, p->image, m->path, m->bias, &mid)))
				return err;
			err = rtl_profile_add_function(prof, mid, f->name, f->addr, f->size,
						       fs->status == FS_DONE,
						       fs->status == FS_DONE ? NULL
						       : fs->reason ? fs->reason : "never called",
						       &fs->profile_id);
			if (err)
				return err;
		}
	}
	return 0;
}

/* Scratch arrays for the views of one function at a time. */
struct scratch {
	struct rtl_block_view *bv;
	struct rtl_call_view *cv;
	struct rtl_counter_view *ctr;
	size_t bcap, ccap, ctrcap;
};

static int cmp_counter(const void *a, const void *b)
{
	const struct rtl_counter_view *x = a, *y = b;
	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	return (x->kind > y->kind) - (x->kind < y->kind);
}

/* Every snippet's counter of FS (link-time addresses), sorted. */
static size_t counter_views(struct proc *p, struct module *m, size_t k, struct rtl_counter_view *v)
{
	const struct func_state *fs = &m->fs[k];
	size_t n = 0;
	if (fs->entry_counter)
		v[n++] = (struct rtl_counter_view){ RTL_POINT_ENTRY, RTL_PRIM_COUNT,
						    rtl_binary_function(m->bin, k)->addr,
						    proc_read_counter(p, fs->entry_counter) };
	for (uint32_t b = 0; b < fs->nblocks; b++) {
		const struct block_rec *br = &p->blocks[fs->block0 + b];
		if (br->counter)
			v[n++] = (struct rtl_counter_view){ RTL_POINT_BLOCK, RTL_PRIM_COUNT, br->addr - m->bias,
							    proc_read_counter(p, br->counter) };
		if (br->rep_counter)
			v[n++] = (struct rtl_counter_view){ RTL_POINT_REP_ITERATIONS, RTL_PRIM_COUNT,
							    br->addr - m->bias, proc_read_counter(p, br->rep_counter) };
	}
	for (uint32_t i = 0; i < fs->npoints; i++) {
		const struct point_rec *pr = &p->points[fs->point0 + i];
		v[n++] = (struct rtl_counter_view){ pr->kind, RTL_PRIM_COUNT, pr->addr - m->bias,
						    proc_read_counter(p, pr->counter) };
	}
	qsort(v, n, sizeof(*v), cmp_counter);
	return n;
}

static int finish_function(struct proc *p, struct module *m, size_t k, rtl_profile *prof,
			   struct scratch *sc)
{
	const rtl_function *f = rtl_binary_function(m->bin, k);
	struct func_state *fs = &m->fs[k];
	size_t nctr = 1 + 2 * (size_t)fs->nblocks + fs->npoints;
	if (rtl_grow(&sc->bv, &sc->bcap, fs->nblocks, sizeof(*sc->bv)) ||
	    rtl_grow(&sc->cv, &sc->ccap, fs->ncalls, sizeof(*sc->cv)) ||
	    rtl_grow(&sc->ctr, &sc->ctrcap, nctr, sizeof(*sc->ctr)))
		return -ENOMEM;
	for (uint32_t b = 0; b < fs->nblocks; b++) {
		const struct block_rec *br = &p->blocks[fs->block0 + b];
		sc->bv[b] = (struct rtl_block_view){ br->addr - m->bias, br->ninstrs,
						     br->counter ? proc_read_counter(p, br->counter) : 0,
						     br->rep_counter ? proc_read_counter(p, br->rep_counter) : 0 };
	}
	for (uint32_t c = 0; c < fs->ncalls; c++) {
		const struct call_rec *cr = &p->calls[fs->call0 + c];
		sc->cv[c] = (struct rtl_call_view){ cr->site - m->bias, callee_id(p, cr->target),
						    cr->block - fs->block0 };
	}
	struct rtl_function_view view = {
		.id = fs->profile_id, .module = m->path, .name = f->name, .addr = f->addr,
		.size = f->size, .entries = fs->entry_counter ? proc_read_counter(p, fs->entry_counter) : 0,
		.blocks = sc->bv, .nblocks = fs->nblocks, .calls = sc->cv, .ncalls = fs->ncalls,
		.counters = sc->ctr, .ncounters = counter_views(p, m, k, sc->ctr),
	};
	for (size_t c = 0; c < session_ncollectors(p->s); c++) {
		int err = session_collector(p->s, c)->finish(&view, prof);
		if (err)
			return err;
	}
	return 0;
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
	int err = rtl_profile_add_process(prof, &row);
	if (!err)
		err = add_functions(p, prof);
	for (size_t i = 0; !err && i < p->nmods; i++) {
		struct module *m = &p->mods[i];
		size_t n = rtl_binary_function_count(m->bin);
		for (size_t k = 0; !err && k < n; k++)
			if (m->fs[k].status == FS_DONE)
				err = finish_function(p, m, k, prof, &sc);
	}
	free(sc.bv);
	free(sc.cv);
	free(sc.ctr);
	return err;
}
