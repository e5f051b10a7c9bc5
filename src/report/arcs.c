/* The hottest call arcs (the callgraph collector): caller -> callee with
 * their calls, summed over the caller's call sites, in the text report.
 * Without it a callgraph run's report showed no counts at all. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <reticle/binary.h>
#include "report/report_priv.h"
#include "util/array.h"

struct arc {
	int64_t caller, callee;
	uint64_t calls;
};

struct arcs {
	struct arc *v;
	size_t n, cap;
};

/* Call sites come by caller, site, then callee: an arc's sites are summed
 * once sorted by (caller, callee). */
static int add_site(const rtl_profile_call *c, void *user)
{
	struct arcs *a = user;
	if (!c->count)
		return 0;
	if (rtl_grow(&a->v, &a->cap, a->n + 1, sizeof(*a->v)))
		return -ENOMEM;
	a->v[a->n++] = (struct arc){ c->caller, c->callee, c->count };
	return 0;
}

static int by_pair(const void *x, const void *y)
{
	const struct arc *a = x, *b = y;
	if (a->caller != b->caller)
		return a->caller < b->caller ? -1 : 1;
	return (a->callee > b->callee) - (a->callee < b->callee);
}

static int by_calls(const void *x, const void *y)
{
	const struct arc *a = x, *b = y;
	return (a->calls < b->calls) - (a->calls > b->calls);
}

static const char *name_of(const struct rpt_rows *rows, int64_t id, int demangle, char buf[32], char **dem)
{
	const rtl_profile_function *f = rpt_rows_by_id(rows, id);
	*dem = NULL;
	if (!f)
		return "?";
	if (demangle && f->name)
		*dem = rtl_demangle(f->name);
	return *dem ? *dem : rpt_name(f, buf);
}

int rpt_arcs(rtl_profile *p, const rtl_report_options *o, FILE *out)
{
	struct arcs a = { 0 };
	struct rpt_rows rows = { 0 };
	int err = rtl_profile_foreach_call(p, add_site, &a);
	if (err || !a.n)
		goto out;
	qsort(a.v, a.n, sizeof(*a.v), by_pair);
	size_t n = 0;
	for (size_t i = 0; i < a.n; i++) {
		if (n && a.v[n - 1].caller == a.v[i].caller && a.v[n - 1].callee == a.v[i].callee)
			a.v[n - 1].calls += a.v[i].calls;
		else
			a.v[n++] = a.v[i];
	}
	qsort(a.v, n, sizeof(*a.v), by_calls);
	if ((err = rpt_rows_load(p, 1, 0, &rows)))
		goto out;
	rpt_rows_sort_by_id(&rows);
	size_t limit = o->top ? (o->top < n ? o->top : n) : n;
	fprintf(out, "\ncalls between functions (callgraph; %zu arcs)\n%14s  %s\n", n, "calls", "caller -> callee");
	for (size_t i = 0; i < limit; i++) {
		char b1[32], b2[32], *d1, *d2;
		const char *from = name_of(&rows, a.v[i].caller, !o->no_demangle, b1, &d1);
		const char *to = name_of(&rows, a.v[i].callee, !o->no_demangle, b2, &d2);
		fprintf(out, "%14" PRIu64 "  %s -> %s\n", a.v[i].calls, from, to);
		free(d1);
		free(d2);
	}
	if (limit < n)
		fprintf(out, "(%zu more arcs: --top N or --top 0 for more)\n", n - limit);
out:
	rpt_rows_free(&rows);
	free(a.v);
	return err;
}
