/* Plug-in collectors' own measures (the metrics table) in the text report:
 * one table per metric name, functions by the sum of their values. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "report/report_priv.h"
#include "util/array.h"

struct summed {
	char *name;           /* owned by the first entry of its name */
	int64_t function;
	double value;
	size_t sites;
};

struct sums {
	struct summed *v;
	size_t n, cap;
};

static int add_metric(const rtl_profile_metric *m, void *user)
{
	struct sums *s = user;
	struct summed *last = s->n ? &s->v[s->n - 1] : NULL;
	if (!strcmp(m->name, RPT_LOOP_METRIC) || !strcmp(m->name, RPT_REP_METRIC))
		return 0;   /* loops.c lists them per loop; rep iterations are in the instructions */
	/* rows come by name, then function */
	if (last && !strcmp(last->name, m->name) && last->function == m->function) {
		last->value += m->value;
		last->sites++;
		return 0;
	}
	if (s->n == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 256;
		struct summed *v = realloc(s->v, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		s->v = v;
		s->cap = cap;
		last = s->n ? &s->v[s->n - 1] : NULL;
	}
	char *name = last && !strcmp(last->name, m->name) ? last->name : strdup(m->name);
	if (!name)
		return -ENOMEM;
	s->v[s->n++] = (struct summed){ name, m->function, m->value, 1 };
	return 0;
}

static int by_value(const void *a, const void *b)
{
	const struct summed *x = a, *y = b;
	return (x->value < y->value) - (x->value > y->value);
}

static void write_metric(FILE *out, struct summed *v, size_t n, const struct rpt_rows *rows,
			 size_t top)
{
	double total = 0;
	for (size_t i = 0; i < n; i++)
		total += v[i].value;
	qsort(v, n, sizeof(*v), by_value);
	fprintf(out, "\nmetric %s (a collector's own measure, summed per function)\n", v[0].name);
	fprintf(out, "%16s  %7s  %6s  %s\n", "value", "share", "sites", "function (module)");
	size_t limit = top && top < n ? top : n;
	for (size_t i = 0; i < limit; i++) {
		const rtl_profile_function *f = rpt_rows_by_id(rows, v[i].function);
		char buf[32];
		fprintf(out, "%16.15g  %6.2f%%  %6zu  %s (%s)\n", v[i].value,
			total != 0 ? 100.0 * v[i].value / total : 0.0, v[i].sites,
			f ? rpt_name(f, buf) : "?", f ? rpt_basename(f->module) : "?");
	}
	if (limit < n)
		fprintf(out, "(%zu more function%s: --top N or --top 0 for more)\n", n - limit,
			n - limit == 1 ? "" : "s");
}

int rpt_metrics(rtl_profile *p, const rtl_report_options *o, FILE *out)
{
	struct sums s = { 0 };
	struct rpt_rows rows = { .demangle = !o->no_demangle };
	int err = rtl_profile_foreach_metric(p, add_metric, &s);
	if (err || !s.n || (err = rpt_rows_load(p, 1, 1, &rows)))
		goto out;
	rpt_rows_sort_by_id(&rows);
	for (size_t i = 0, j; i < s.n; i = j) {
		for (j = i + 1; j < s.n && s.v[j].name == s.v[i].name; j++)
			;
		char *name = s.v[i].name;   /* the sort below moves its owner */
		write_metric(out, s.v + i, j - i, &rows, o->top);
		for (size_t k = i; k < j; k++)
			s.v[k].name = name;
	}
out:
	for (size_t i = 0; i < s.n; i++)
		if (!i || s.v[i].name != s.v[i - 1].name)
			free(s.v[i].name);
	free(s.v);
	rpt_rows_free(&rows);
	return err;
}

static int add_site_value(const rtl_profile_metric *m, void *user)
{
	struct rpt_site_values *r = user;
	if (strcmp(m->name, r->name))
		return 0;
	if (rtl_grow(&r->v, &r->cap, r->n + 1, sizeof(*r->v)))
		return -ENOMEM;
	r->v[r->n++] = (struct rpt_site_value){ m->function, m->site, m->value };
	return 0;
}

int rpt_site_values_load(rtl_profile *p, const char *name, struct rpt_site_values *r)
{
	*r = (struct rpt_site_values){ .name = name };
	return rtl_profile_foreach_metric(p, add_site_value, r);   /* by function, then site */
}

double rpt_site_value_at(const struct rpt_site_values *r, int64_t function, uint64_t site)
{
	size_t lo = 0, hi = r->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct rpt_site_value *x = &r->v[mid];
		if (x->function < function || (x->function == function && x->site < site))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < r->n && r->v[lo].function == function && r->v[lo].site == site ? r->v[lo].value : 0;
}

void rpt_site_values_free(struct rpt_site_values *r)
{
	free(r->v);
	*r = (struct rpt_site_values){ 0 };
}
