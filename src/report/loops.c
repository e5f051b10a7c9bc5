/* The loops table of the text report (the loops collector): every loop by
 * its iterations, the times its back-edge jumped (the metric
 * "loop_iterations" at the back-edge's address), with the function and the
 * source line of the back-edge where DWARF places it. */
#include <inttypes.h>
#include <stdlib.h>
#include "report/report_priv.h"

static int by_iterations(const void *a, const void *b)
{
	const struct rpt_site_value *x = a, *y = b;
	if (x->value != y->value)
		return x->value < y->value ? 1 : -1;
	return (x->site > y->site) - (x->site < y->site);
}

int rpt_loops(rtl_profile *p, const rtl_report_options *o, FILE *out)
{
	struct rpt_site_values l;
	struct rpt_rows rows = { .demangle = !o->no_demangle };
	struct rpt_sources src = { 0 };
	int err = rpt_site_values_load(p, RPT_LOOP_METRIC, &l);
	if (err || !l.n || (err = rpt_rows_load(p, 1, 1, &rows)))
		goto out;
	rpt_rows_sort_by_id(&rows);
	qsort(l.v, l.n, sizeof(*l.v), by_iterations);
	fprintf(out, "\nloops (iterations: the times each back-edge jumped)\n%16s  %18s  %-24s  %s\n",
		"iterations", "back-edge", "source", "function (module)");
	size_t limit = o->top && o->top < l.n ? o->top : l.n;
	for (size_t i = 0; i < limit; i++) {
		const rtl_profile_function *f = rpt_rows_by_id(&rows, l.v[i].function);
		const char *file = NULL;
		int line = 0;
		char buf[32], place[24] = "-";
		if (f && !rpt_source_line(&src, f->module, l.v[i].site, &file, &line))
			snprintf(place, sizeof(place), "%.15s:%d", rpt_basename(file), line);
		fprintf(out, "%16.0f  %#18" PRIx64 "  %-24s  %s (%s)\n", l.v[i].value, l.v[i].site, place,
			f ? rpt_name(f, buf) : "?", f ? rpt_basename(f->module) : "?");
	}
	if (limit < l.n)
		fprintf(out, "(%zu more loops: --top N or --top 0 for more)\n", l.n - limit);
out:
	rpt_site_values_free(&l);
	rpt_rows_free(&rows);
	rpt_sources_free(&src);
	return err;
}
