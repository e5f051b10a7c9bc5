/* The patcher's state of a process image: made, copied into a fork child,
 * freed; the point records of copies made again; counter increments made
 * atomic when the process gets a second thread. */
#include <stdlib.h>
#include <string.h>
#include "isa/x86_64/writer.h"
#include "patch/patch.h"
#include "util/array.h"
#include "util/log.h"

bool patch_proc_init(struct proc *p, const struct patch_env *env)
{
	p->patch = calloc(1, sizeof(*p->patch));
	if (p->patch)
		p->patch->env = env;
	return p->patch != NULL;
}

/* *DST a copy of the N elements of SRC, *CAP its room. */
static bool dup_into(void **dst, size_t *cap, const void *src, size_t n, size_t elem)
{
	*dst = rtl_dup_array(src, n, elem);
	*cap = n ? n : 1;
	return *dst != NULL;
}

bool patch_proc_fork(const struct proc *p, struct proc *c)
{
	const struct patch_proc *a = p->patch;
	struct patch_proc *b = c->patch;
	/* deferred entries stay the parent's: a fork happens outside a batch */
	bool ok = dup_into((void **)&b->retired, &b->capretired, a->retired, a->nretired, sizeof(*a->retired)) &&
		  dup_into((void **)&b->call_traps, &b->capcall_traps, a->call_traps, a->ncall_traps,
			   sizeof(*a->call_traps)) &&
		  dup_into((void **)&b->ret_traps, &b->capret_traps, a->ret_traps, a->nret_traps,
			   sizeof(*a->ret_traps)) &&
		  dup_into((void **)&b->patches, &b->cappatches, a->patches, a->npatches, sizeof(*a->patches)) &&
		  dup_into((void **)&b->sites, &b->capsites, a->sites, a->nsites, sizeof(*a->sites)) &&
		  dup_into((void **)&b->plt_watch, &b->capplt_watch, a->plt_watch, a->nplt_watch,
			   sizeof(*a->plt_watch)) &&
		  dup_into((void **)&b->probe_traps, &b->capprobe_traps, a->probe_traps, a->nprobe_traps,
			   sizeof(*a->probe_traps)) &&
		  dup_into((void **)&b->move_traps, &b->capmove_traps, a->move_traps, a->nmove_traps,
			   sizeof(*a->move_traps));
	for (size_t i = 0; ok && i < a->nretired; i++) {   /* each its own maps */
		struct retired_points *r = &b->retired[i];
		r->map_from = rtl_dup_array(r->map_from, r->nmap, sizeof(uint64_t));
		r->map_to = rtl_dup_array(r->map_to, r->nmap, sizeof(uint64_t));
		if (!r->map_from || !r->map_to) {
			free(r->map_from);
			free(r->map_to);
			r->map_from = r->map_to = NULL;
			r->nmap = 0;
		}
	}
	if (ok) {
		b->nretired = a->nretired;
		b->ncall_traps = a->ncall_traps;
		b->nret_traps = a->nret_traps;
		b->npatches = a->npatches;
		b->nsites = a->nsites;
		b->nplt_watch = a->nplt_watch;
		b->nprobe_traps = a->nprobe_traps;
		b->probe_traps_unsorted = a->probe_traps_unsorted;
		b->nmove_traps = a->nmove_traps;
		b->move_traps_unsorted = a->move_traps_unsorted;
	}
	return ok;
}

void patch_proc_free(struct proc *p)
{
	struct patch_proc *st = p->patch;
	if (!st)
		return;
	free(st->sites);
	free(st->patches);
	free(st->ret_traps);
	for (size_t i = 0; i < st->nretired; i++) {
		free(st->retired[i].map_from);
		free(st->retired[i].map_to);
	}
	free(st->retired);
	free(st->call_traps);
	free(st->plt_watch);
	free(st->probe_traps);
	free(st->move_traps);
	free(st->entries);
	free(st);
	p->patch = NULL;
}

void patch_each_retired_point(struct proc *p, size_t mod, size_t fn,
			      void (*each)(const struct point_rec *pr, void *ctx), void *ctx)
{
	const struct patch_proc *st = p->patch;
	for (size_t i = 0; i < st->nretired; i++) {
		const struct retired_points *r = &st->retired[i];
		if (r->mod == mod && r->fn == fn)
			for (uint32_t k = 0; k < r->npoints; k++)
				each(&p->points[r->point0 + k], ctx);
	}
}

const struct call_trap *patch_call_trap_at(const struct proc *p, uint64_t at)
{
	const struct patch_proc *st = p->patch;
	size_t lo = 0, hi = st ? st->ncall_traps : 0;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (st->call_traps[mid].at < at)
			lo = mid + 1;
		else
			hi = mid;
	}
	return st && lo < st->ncall_traps && st->call_traps[lo].at == at ? &st->call_traps[lo] : NULL;
}

const struct retired_points *patch_retired_at(const struct proc *p, uint64_t pc)
{
	const struct patch_proc *st = p->patch;
	for (size_t i = 0; st && i < st->nretired; i++)
		if (pc >= st->retired[i].entry && pc < st->retired[i].entry + st->retired[i].code_len)
			return &st->retired[i];
	return NULL;
}

bool patch_has_retired(const struct proc *p)
{
	return p->patch->nretired > 0;
}

void patch_switch_site(struct proc *p, uint8_t *site, uint64_t at, bool keep_flags)
{
	uint64_t counter = p->thread_counters ? x86_switch_counter(site, at, keep_flags) : 0;
	struct window *w = counter ? proc_window_at(p, counter, 8) : NULL;
	int64_t disp = w ? window_slab_disp(w, counter) : -1;
	if (disp >= 0)
		x86_switch_per_thread(site, keep_flags, (int32_t)disp);
	else
		x86_switch_atomic(site, keep_flags);
}

void patch_go_multithreaded(struct proc *p)
{
	struct patch_proc *st = p->patch;
	if (p->multithreaded)
		return;
	for (size_t i = 0; i < st->nsites; i++) {
		struct window *w = proc_window_at(p, st->sites[i].addr, 2);
		uint8_t *site = w ? window_local(w, st->sites[i].addr) : NULL;
		/* one swept away already (sweep.c) stays away */
		if (site && (st->sites[i].keep_flags ? site[0] == 0x66 && site[1] == 0x90 : site[0] == 0x3e && site[1] == 0x48))
			patch_switch_site(p, site, st->sites[i].addr, st->sites[i].keep_flags);
	}
	st->nsites = 0;
	p->multithreaded = true;
	rtl_debug("pid %d has threads: counter increments are %s now", (int)p->pid,
		  p->thread_counters ? "per thread" : "atomic");
}
