/* Two profiles compared function by function (reticle diff): functions are
 * the same when their module's file name and their name are (a rebuilt
 * binary moves addresses, not names; unnamed code, sub_<hex>, matches only
 * within one build). Per function: its count in each (Ir when both
 * profiles have instructions, else calls), the difference, their ratio,
 * and Ir per call in each where both are known; rows by the size of the
 * difference. Functions counted in one profile only are rows too. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <reticle/binary.h>
#include "report/report_priv.h"

struct pair {
	const rtl_profile_function *a, *b;
	double delta;
};

static int by_key(const void *x, const void *y)
{
	const rtl_profile_function *const *p = x, *const *q = y;
	int c = strcmp(rpt_basename((*p)->module), rpt_basename((*q)->module));
	return c ? c : strcmp((*p)->name ? (*p)->name : "", (*q)->name ? (*q)->name : "");
}

static int by_key_addr(const void *x, const void *y)
{
	const rtl_profile_function *const *p = x, *const *q = y;
	int c = by_key(x, y);
	return c ? c : ((*p)->addr > (*q)->addr) - ((*p)->addr < (*q)->addr);
}

/* ROWS' functions as pointers sorted by (module file name, name, address):
 * functions of one name in one module (static ones) pair in address
 * order. */
static const rtl_profile_function **sorted(const struct rpt_rows *rows)
{
	const rtl_profile_function **v = malloc((rows->n + 1) * sizeof(*v));
	for (size_t i = 0; v && i < rows->n; i++)
		v[i] = &rows->fn[i];
	if (v)
		qsort(v, rows->n, sizeof(*v), by_key_addr);
	return v;
}

static uint64_t value(const rtl_profile_function *f, int ir)
{
	return !f ? 0 : ir ? f->instrs : f->calls;
}

static int by_delta(const void *x, const void *y)
{
	const struct pair *p = x, *q = y;
	double a = fabs(p->delta), b = fabs(q->delta);
	if (a != b)
		return a < b ? 1 : -1;
	const rtl_profile_function *f = p->a ? p->a : p->b, *g = q->a ? q->a : q->b;
	return by_key(&f, &g);
}

static void per_call(FILE *out, const rtl_profile_function *f)
{
	if (f && (f->have & RTL_HAVE_CALLS) && (f->have & RTL_HAVE_INSTRS) && f->calls)
		fprintf(out, "  %10.1f", (double)f->instrs / (double)f->calls);
	else
		fprintf(out, "  %10s", "-");
}

static void side_line(FILE *out, const char *tag, rtl_profile *p, const rtl_profile_totals *t, int ir)
{
	const char *cmd = rtl_profile_get_meta(p, "command");
	fprintf(out, "%s: %s\n   %" PRIu64 " functions counted, %" PRIu64 " %s\n", tag, cmd ? cmd : "?",
		t->counted, ir ? t->instrs : t->calls, ir ? "instructions" : "calls");
}

int rtl_report_diff(rtl_profile *a, rtl_profile *b, const rtl_report_options *o, FILE *out)
{
	if (!o)
		o = &rpt_default_options;
	struct rpt_rows ra = { 0 }, rb = { 0 };
	rtl_profile_totals ta, tb;
	const rtl_profile_function **va = NULL, **vb = NULL;
	struct pair *pairs = NULL;
	size_t n = 0;
	int err;
	if ((err = rtl_profile_get_totals(a, &ta)) || (err = rtl_profile_get_totals(b, &tb)) ||
	    (err = rpt_rows_load(a, 0, 0, &ra)) || (err = rpt_rows_load(b, 0, 0, &rb)))
		goto out;
	int ir = (ta.have & RTL_HAVE_INSTRS) && (tb.have & RTL_HAVE_INSTRS);
	if (!ir && !((ta.have & RTL_HAVE_CALLS) && (tb.have & RTL_HAVE_CALLS))) {
		err = -ENODATA;   /* nothing both measured */
		goto out;
	}
	va = sorted(&ra);
	vb = sorted(&rb);
	pairs = malloc((ra.n + rb.n + 1) * sizeof(*pairs));
	if (!va || !vb || !pairs) {
		err = -ENOMEM;
		goto out;
	}
	/* a merge of the two sorted lists */
	for (size_t i = 0, j = 0; i < ra.n || j < rb.n;) {
		int c = i == ra.n ? 1 : j == rb.n ? -1 : by_key(&va[i], &vb[j]);
		struct pair p = { c <= 0 ? va[i] : NULL, c >= 0 ? vb[j] : NULL, 0 };
		i += c <= 0;
		j += c >= 0;
		p.delta = (double)value(p.b, ir) - (double)value(p.a, ir);
		pairs[n++] = p;
	}
	qsort(pairs, n, sizeof(*pairs), by_delta);
	side_line(out, "A", a, &ta, ir);
	side_line(out, "B", b, &tb, ir);
	size_t both = 0;
	for (size_t i = 0; i < n; i++)
		both += pairs[i].a && pairs[i].b;
	fprintf(out, "%zu functions in both, %zu in A only, %zu in B only; rows by the difference of %s\n\n",
		both, ra.n - both, rb.n - both, ir ? "Ir" : "calls");
	fprintf(out, "%16s  %16s  %16s  %8s  %10s  %10s  %s\n", ir ? "Ir A" : "calls A", ir ? "Ir B" : "calls B",
		"B - A", "B/A", "Ir/call A", "Ir/call B", "function (module)");
	size_t limit = o->top && o->top < n ? o->top : n;
	for (size_t i = 0; i < limit; i++) {
		const struct pair *p = &pairs[i];
		const rtl_profile_function *f = p->a ? p->a : p->b;
		uint64_t x = value(p->a, ir), y = value(p->b, ir);
		char buf[32], ratio[16] = "-", *dem = o->no_demangle ? NULL : rtl_demangle(f->name);
		if (x)
			snprintf(ratio, sizeof(ratio), "%.3f", (double)y / (double)x);
		if (p->a)
			fprintf(out, "%16" PRIu64, x);
		else
			fprintf(out, "%16s", "-");
		if (p->b)
			fprintf(out, "  %16" PRIu64, y);
		else
			fprintf(out, "  %16s", "-");
		fprintf(out, "  %+16.0f  %8s", p->delta, ratio);
		per_call(out, p->a);
		per_call(out, p->b);
		fprintf(out, "  %s (%s)\n", dem ? dem : rpt_name(f, buf), rpt_basename(f->module));
		free(dem);
	}
	if (limit < n)
		fprintf(out, "(%zu more: --top N or --top 0 for more)\n", n - limit);
	err = rpt_out_status(out);
out:
	free(va);
	free(vb);
	free(pairs);
	rpt_rows_free(&ra);
	rpt_rows_free(&rb);
	return err;
}
