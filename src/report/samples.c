/* The sample collector's results by function: self samples (taken in the
 * function itself) and total samples (taken while it was on the stack,
 * counted once however deep its recursion), for the text and JSON
 * reports. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "report/cct.h"
#include "report/samples.h"

static int by_self(const void *a, const void *b)
{
	const struct rpt_sampled_fn *x = a, *y = b;
	if (x->self_seconds != y->self_seconds)
		return x->self_seconds < y->self_seconds ? 1 : -1;
	if (x->self != y->self)
		return x->self < y->self ? 1 : -1;
	if (x->total != y->total)
		return x->total < y->total ? 1 : -1;
	return (x->function > y->function) - (x->function < y->function);
}

/* The entry of FUNCTION in S, made if new; INDEX (SIZE slots, a power of
 * two above twice the entries) finds it by id. */
static struct rpt_sampled_fn *entry(struct rpt_sampled *s, size_t *index, size_t size, int64_t function)
{
	size_t mask = size - 1, h = (size_t)((uint64_t)function * 0x9e3779b97f4a7c15ull >> 20) & mask;
	for (; index[h] != SIZE_MAX; h = (h + 1) & mask)
		if (s->fn[index[h]].function == function)
			return &s->fn[index[h]];
	index[h] = s->n;
	s->fn[s->n] = (struct rpt_sampled_fn){ .function = function };
	return &s->fn[s->n++];
}

int rpt_sampled_load(rtl_profile *p, const rtl_report_options *o, struct rpt_sampled *s)
{
	memset(s, 0, sizeof(*s));
	rtl_report_options so = o ? *o : rpt_default_options;
	so.samples = 1;
	int err = cct_load(p, 0, &so, &s->tree);
	if (err)
		return err;
	const struct cct *t = &s->tree;
	size_t n = t->count, size = 16;
	while (size < 2 * n)
		size *= 2;
	/* the samples under each node (its seconds are its inclusive time) */
	uint64_t *incl = calloc(n ? n : 1, sizeof(*incl));
	size_t *index = malloc(size * sizeof(*index));
	s->fn = malloc((n ? n : 1) * sizeof(*s->fn));
	if (!incl || !index || !s->fn) {
		err = -ENOMEM;
		goto out;
	}
	memset(index, 0xff, size * sizeof(*index));
	for (size_t i = n; i-- > 0;) {   /* callees come after their callers */
		incl[i] += t->n[i].calls;
		if (t->n[i].parent != CCT_NONE)
			incl[t->n[i].parent] += incl[i];
		s->samples += t->n[i].calls;
		s->seconds += t->n[i].exclusive;
	}
	for (size_t i = 0; i < n; i++) {
		const struct cct_node *node = &t->n[i];
		struct rpt_sampled_fn *f = entry(s, index, size, node->function);
		f->self += node->calls;
		f->self_seconds += node->exclusive;
		/* total: only the outermost frame of the function on a path */
		size_t up = node->parent;
		while (up != CCT_NONE && t->n[up].function != node->function)
			up = t->n[up].parent;
		if (up == CCT_NONE) {
			f->total += incl[i];
			f->total_seconds += node->inclusive;
		}
	}
	qsort(s->fn, s->n, sizeof(*s->fn), by_self);
out:
	free(incl);
	free(index);
	if (err)
		rpt_sampled_free(s);
	return err;
}

void rpt_sampled_free(struct rpt_sampled *s)
{
	cct_free(&s->tree);
	free(s->fn);
	memset(s, 0, sizeof(*s));
}

int rpt_samples(rtl_profile *p, const rtl_report_options *o, FILE *out)
{
	struct rpt_sampled s;
	int err = rpt_sampled_load(p, o, &s);
	if (err == -ENODATA)
		return 0;
	if (err)
		return err;
	const char *ev = rtl_profile_get_meta(p, "sample_event");
	char event[64];
	snprintf(event, sizeof(event), "%s", ev ? ev : "?");
	const char *freq = rtl_profile_get_meta(p, "sample_freq");
	char hz[32];
	snprintf(hz, sizeof(hz), "%s", freq ? freq : "?");
	const char *lost = rtl_profile_get_meta(p, "sample_lost");
	unsigned long long nlost = lost ? strtoull(lost, NULL, 10) : 0;
	fprintf(out, "\nsamples (sample: %s at %s Hz, %" PRIu64 " samples = %.3f s", event, hz, s.samples, s.seconds);
	if (nlost)
		fprintf(out, ", %llu lost", nlost);
	fprintf(out, "; shares of the time they stand for)\n");
	fprintf(out, "%7s  %7s  %10s  %10s  %s\n", "self", "total", "self s", "samples", "function (module)");
	size_t limit = o->top && o->top < s.n ? o->top : s.n;
	for (size_t i = 0; i < limit; i++) {
		const struct rpt_sampled_fn *f = &s.fn[i];
		const rtl_profile_function *row = rpt_rows_by_id(&s.tree.rows, f->function);
		char buf[32];
		/* shares of the time the samples stand for (their periods: a
		 * shim sample stands for the cycles since the one before) */
		double self = s.seconds > 0 ? f->self_seconds / s.seconds : s.samples ? (double)f->self / (double)s.samples : 0;
		double total = s.seconds > 0 ? f->total_seconds / s.seconds
					     : s.samples ? (double)f->total / (double)s.samples : 0;
		fprintf(out, "%6.2f%%  %6.2f%%  %10.6f  %10" PRIu64 "  %s (%s)\n", 100.0 * self, 100.0 * total,
			f->self_seconds, f->self, row ? rpt_name(row, buf) : "?", row ? rpt_basename(row->module) : "?");
	}
	if (limit < s.n)
		fprintf(out, "(%zu more sampled function%s: --top N or --top 0 for more)\n", s.n - limit,
			s.n - limit == 1 ? "" : "s");
	rpt_sampled_free(&s);
	return 0;
}
