/* Indirect call arcs: numbering each site in its window's arc table
 * (runtime/arc_table.h), and reading the tables when a process image ends. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "engine/engine.h"
#include "runtime/arc_table.h"
#include "util/array.h"
#include "util/log.h"

/* The window of a site's words, and its index in P's windows (*IDX). */
static struct window *window_of(struct proc *p, uint64_t words, size_t *idx)
{
	struct window *w = proc_window_at(p, words, 16);
	if (w && idx)
		*idx = (size_t)(w - p->shm.wins);
	return w;
}

/* The site's two words: its key prefix and its window's table. */
static void write_words(struct window *w, const struct point_rec *pr)
{
	uint64_t *words = window_local(w, pr->counter);
	words[0] = (uint64_t)pr->site << ARC_SITE_SHIFT;
	words[1] = window_arcs(w);
}

int arcs_site_init(struct proc *p, struct point_rec *pr)
{
	struct window *w = window_of(p, pr->counter, NULL);
	if (!w || !window_arcs(w))
		return -ENOSPC;   /* every window has a table (proc.c add_window) */
	/* numbers 1 .. ARC_MAX_SITES - 1 are a site's own; the sites past
	 * them share ARC_MAX_SITES, whose targets mix and are given to none
	 * (arcs_of_site): said once per module */
	if (w->narc_sites < ARC_MAX_SITES - 1) {
		w->narc_sites++;
	} else if (w->narc_sites == ARC_MAX_SITES - 1) {
		w->narc_sites = ARC_MAX_SITES;
		rtl_log(1, "pid %d: more than %d indirect call sites in one module: the calls of the "
			"later ones are not counted by target", (int)p->pid, ARC_MAX_SITES - 1);
	}
	pr->site = w->narc_sites;
	write_words(w, pr);
	return 0;
}

void arcs_refresh(struct proc *p)
{
	for (size_t i = 0; i < p->npoints; i++) {
		const struct point_rec *pr = &p->points[i];
		struct window *w;
		if (point_in_arcs(pr) && (w = window_of(p, pr->counter, NULL)))
			write_words(w, pr);
	}
}

static int cmp_entry(const void *a, const void *b)
{
	const struct arc_entry *x = a, *y = b;
	return (x->key > y->key) - (x->key < y->key);
}

int arcs_collect(struct proc *p, struct arcs *out)
{
	memset(out, 0, sizeof(*out));
	out->nwins = p->shm.nwins;
	out->wins = calloc(out->nwins ? out->nwins : 1, sizeof(*out->wins));
	if (!out->wins)
		return -ENOMEM;
	for (size_t i = 0; i < p->shm.nwins; i++) {
		struct window *w = &p->shm.wins[i];
		if (!w->narc_sites)
			continue;
		const volatile uint64_t *head = window_local(w, window_arcs(w) - ARC_HEADER);
		if (head[1])
			rtl_log(1, "pid %d: the arc table of a module was full: %llu indirect calls "
				"not counted by target", (int)p->pid, (unsigned long long)head[1]);
		const struct arc_entry *t = window_local(w, window_arcs(w));
		size_t n = 0;
		for (size_t k = 0; k < ARC_ENTRIES; k++)
			n += t[k].key && t[k].count;
		struct arc_entry *v = malloc((n ? n : 1) * sizeof(*v));
		if (!v)
			return -ENOMEM;
		n = 0;
		for (size_t k = 0; k < ARC_ENTRIES; k++)
			if (t[k].key && t[k].count)
				v[n++] = t[k];
		qsort(v, n, sizeof(*v), cmp_entry);
		out->wins[i].v = v;
		out->wins[i].n = n;
	}
	return 0;
}

size_t arcs_of_site(struct proc *p, const struct arcs *a, const struct point_rec *pr,
		    const struct arc_entry **first)
{
	size_t wi;
	if (pr->site >= ARC_MAX_SITES || !window_of(p, pr->counter, &wi) || wi >= a->nwins || !a->wins[wi].v)
		return 0;   /* (a shared number: its targets are several sites') */
	const struct arc_entry *v = a->wins[wi].v;
	size_t n = a->wins[wi].n, lo = 0, hi = n;
	uint64_t prefix = (uint64_t)pr->site << ARC_SITE_SHIFT;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (v[mid].key < prefix)
			lo = mid + 1;
		else
			hi = mid;
	}
	size_t end = lo;
	while (end < n && v[end].key >> ARC_SITE_SHIFT == pr->site)
		end++;
	*first = v + lo;
	return end - lo;
}

void arcs_free(struct arcs *a)
{
	for (size_t i = 0; i < a->nwins; i++)
		free(a->wins[i].v);
	free(a->wins);
	memset(a, 0, sizeof(*a));
}
