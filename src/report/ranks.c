/* Load imbalance across the ranks of a merged profile (reticle merge of an
 * MPI job's per-rank profiles): per function, its count on each rank (Ir,
 * or calls without instruction counts; a rank where it did not run counts
 * 0), their mean, the least and the most loaded rank, max/mean and the
 * coefficient of variation; rows by how far the busiest rank is above the
 * mean, which is what the others wait for at the next synchronisation. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <reticle/binary.h>
#include "report/report_priv.h"
#include "util/array.h"

struct rank_row {
	char *module, *name;
	uint64_t addr;
	double sum, sumsq, max, min;
	int64_t max_rank, min_rank;
	size_t nranks;            /* ranks where it ran */
	double excess;            /* max - mean */
};

struct rank_load {
	struct rank_row *v;
	size_t n, cap;
	int64_t *ranks;           /* distinct, sorted */
	size_t nranks, capranks;
	int instrs;               /* count Ir (else calls) */
	int counted;              /* some rank counted either (not with callgraph or edges alone) */
	int err;
};

static int note_rank(struct rank_load *l, int64_t rank)
{
	for (size_t i = 0; i < l->nranks; i++)
		if (l->ranks[i] == rank)
			return 0;
	if (rtl_grow(&l->ranks, &l->capranks, l->nranks + 1, sizeof(*l->ranks)))
		return -ENOMEM;
	l->ranks[l->nranks++] = rank;
	return 0;
}

static int have_kind(const rtl_profile_rank_count *r, void *user)
{
	struct rank_load *l = user;
	l->instrs |= (r->have & RTL_HAVE_INSTRS) != 0;
	l->counted |= (r->have & (RTL_HAVE_INSTRS | RTL_HAVE_CALLS)) != 0;
	return note_rank(l, r->rank);
}

static int add_count(const rtl_profile_rank_count *r, void *user)
{
	struct rank_load *l = user;
	struct rank_row *last = l->n ? &l->v[l->n - 1] : NULL;
	if (!(r->have & (l->instrs ? RTL_HAVE_INSTRS : RTL_HAVE_CALLS)))
		return 0;   /* not counted there: as where it did not run */
	double v = (double)(l->instrs ? r->instrs : r->calls);
	if (!last || last->addr != r->addr || strcmp(last->module, r->module)) {
		if (rtl_grow(&l->v, &l->cap, l->n + 1, sizeof(*l->v)))
			return -ENOMEM;
		last = &l->v[l->n++];
		*last = (struct rank_row){ strdup(r->module), r->name ? strdup(r->name) : NULL, r->addr, 0, 0,
					   -1, 0, -1, -1, 0, 0 };
		if (!last->module)
			return -ENOMEM;
	}
	last->sum += v;
	last->sumsq += v * v;
	last->nranks++;
	if (v > last->max) {
		last->max = v;
		last->max_rank = r->rank;
	}
	if (last->min_rank < 0 || v < last->min) {
		last->min = v;
		last->min_rank = r->rank;
	}
	return 0;
}

static int by_excess(const void *a, const void *b)
{
	double x = ((const struct rank_row *)a)->excess, y = ((const struct rank_row *)b)->excess;
	return (x < y) - (x > y);
}

int rpt_ranks(rtl_profile *p, const rtl_report_options *o, FILE *out)
{
	struct rank_load l = { 0 };
	int err = rtl_profile_foreach_rank_count(p, have_kind, &l);
	if (err || l.nranks < 2 || !l.counted)
		goto out;
	if ((err = rtl_profile_foreach_rank_count(p, add_count, &l)))
		goto out;
	/* a rank where a function did not run has it at 0 */
	for (size_t i = 0; i < l.n; i++) {
		if (l.v[i].nranks < l.nranks) {
			l.v[i].min = 0;
			l.v[i].min_rank = -1;
		}
		l.v[i].excess = l.v[i].max - l.v[i].sum / (double)l.nranks;
	}
	qsort(l.v, l.n, sizeof(*l.v), by_excess);
	fprintf(out, "\nload imbalance across %zu ranks (%s per rank; rows by how far the busiest rank is "
		"above the mean)\n", l.nranks, l.instrs ? "Ir" : "calls");
	fprintf(out, "%14s  %14s %5s  %14s %5s  %8s  %6s  %s\n", "mean", "min", "rank", "max", "rank", "max/mean",
		"cv", "function (module)");
	size_t limit = o->top && o->top < l.n ? o->top : l.n;
	for (size_t i = 0; i < limit; i++) {
		const struct rank_row *r = &l.v[i];
		double n = (double)l.nranks, mean = r->sum / n;
		double var = r->sumsq / n - mean * mean, cv = mean > 0 ? sqrt(var > 0 ? var : 0) / mean : 0;
		char buf[32], minr[24] = "-", *dem = o->no_demangle || !r->name ? NULL : rtl_demangle(r->name);
		if (r->min_rank >= 0)
			snprintf(minr, sizeof(minr), "%" PRId64, r->min_rank);
		rtl_profile_function f = { .name = r->name, .addr = r->addr };
		fprintf(out, "%14.0f  %14.0f %5s  %14.0f %5" PRId64 "  %8.3f  %6.3f  %s (%s)\n", mean, r->min, minr,
			r->max, r->max_rank, mean > 0 ? r->max / mean : 0, cv, dem ? dem : rpt_name(&f, buf),
			rpt_basename(r->module));
		free(dem);
	}
	if (limit < l.n)
		fprintf(out, "(%zu more: --top N or --top 0 for more)\n", l.n - limit);
out:
	for (size_t i = 0; i < l.n; i++) {
		free(l.v[i].module);
		free(l.v[i].name);
	}
	free(l.v);
	free(l.ranks);
	return err;
}
