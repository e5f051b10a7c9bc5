/* The time table of the text report (calltime): functions by exclusive
 * time, all threads added up, with their inclusive time and calls. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "report/report_priv.h"

struct timed {
	int64_t function;
	uint64_t calls;
	double inclusive, exclusive;
	unsigned threads;
};

struct times {
	struct timed *v;
	size_t n, cap;
};

static int add_time(const rtl_profile_time *t, void *user)
{
	struct times *ts = user;
	/* rows come by function: a new one starts a new entry */
	if (!ts->n || ts->v[ts->n - 1].function != t->function) {
		if (ts->n == ts->cap) {
			size_t cap = ts->cap ? 2 * ts->cap : 256;
			struct timed *v = realloc(ts->v, cap * sizeof(*v));
			if (!v)
				return -ENOMEM;
			ts->v = v;
			ts->cap = cap;
		}
		ts->v[ts->n++] = (struct timed){ .function = t->function };
	}
	struct timed *d = &ts->v[ts->n - 1];
	d->calls += t->calls;
	d->inclusive += t->inclusive;
	d->exclusive += t->exclusive;
	d->threads++;
	return 0;
}

static int by_exclusive(const void *a, const void *b)
{
	const struct timed *x = a, *y = b;
	return (x->exclusive < y->exclusive) - (x->exclusive > y->exclusive);
}

int rpt_times(rtl_profile *p, const rtl_report_options *o, FILE *out, int *shown)
{
	struct times ts = { 0 };
	struct rpt_rows rows = { .demangle = !o->no_demangle };
	*shown = 0;
	int err = rtl_profile_foreach_time(p, add_time, &ts);
	if (err || !ts.n)
		goto out;
	if ((err = rpt_rows_load(p, 1, 1, &rows)))
		goto out;
	rpt_rows_sort_by_id(&rows);
	qsort(ts.v, ts.n, sizeof(*ts.v), by_exclusive);
	double total = 0;
	for (size_t i = 0; i < ts.n; i++)
		total += ts.v[i].exclusive;
	fprintf(out, "\ntime (calltime: seconds of wall-clock time, all threads added up)\n");
	fprintf(out, "%10s  %7s  %10s  %12s  %s\n", "exclusive", "share", "inclusive", "calls", "function (module)");
	size_t limit = o->top && o->top < ts.n ? o->top : ts.n;
	for (size_t i = 0; i < limit; i++) {
		const struct timed *t = &ts.v[i];
		const rtl_profile_function *f = rpt_rows_by_id(&rows, t->function);
		char buf[32];
		fprintf(out, "%10.6f  %6.2f%%  %10.6f  %12" PRIu64 "  %s (%s)\n", t->exclusive,
			total > 0 ? 100.0 * t->exclusive / total : 0.0, t->inclusive, t->calls,
			f ? rpt_name(f, buf) : "?", f ? rpt_basename(f->module) : "?");
	}
	if (limit < ts.n)
		fprintf(out, "(%zu more timed function%s: --top N or --top 0 for more)\n", ts.n - limit,
			ts.n - limit == 1 ? "" : "s");
	*shown = 1;
out:
	free(ts.v);
	rpt_rows_free(&rows);
	return err;
}
