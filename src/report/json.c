/* JSON report: one object with meta, totals, modules, functions (by count:
 * with --all every row, else those counted and those the other tables
 * name; the first --top of them) and call sites. Counts are numbers;
 * addresses are "0x..." strings so that no reader rounds them. */
#include <errno.h>
#include <stdbool.h>
#include <inttypes.h>
#include <stdlib.h>
#include <reticle/error.h>
#include "report/report_priv.h"
#include "util/array.h"
#include "report/samples.h"
#include "report/signals.h"

struct list { FILE *out; int n; };

static void sep(struct list *l)
{
	fputs(l->n++ ? ",\n    " : "\n    ", l->out);
}

static int meta_item(const char *key, const char *value, void *user)
{
	struct list *l = user;

	sep(l);
	rtl_json_string(l->out, key);
	fputs(": ", l->out);
	rtl_json_string(l->out, value);
	return 0;
}

static int process_item(const rtl_profile_process *pr, void *user)
{
	struct list *l = user;
	sep(l);
	fprintf(l->out, "\n    {\"id\": %" PRId64 ", \"parent\": %" PRId64 ", \"pid\": %d, \"kind\": ",
		pr->id, pr->parent, pr->pid);
	rtl_json_string(l->out, pr->kind);
	fputs(", \"command\": ", l->out);
	if (pr->command)
		rtl_json_string(l->out, pr->command);
	else
		fputs("null", l->out);
	if (pr->exit_status >= 0)
		fprintf(l->out, ", \"exit_status\": %d", pr->exit_status);
	else if (pr->exit_status == RTL_PROCESS_RUNNING)
		fputs(", \"exit_status\": null, \"running\": true", l->out);
	else
		fputs(", \"exit_status\": null", l->out);
	fprintf(l->out, ", \"start_ns\": %" PRIu64 ", \"end_ns\": %" PRIu64 ", \"calls\": %" PRIu64
		", \"instrs\": %" PRIu64 "}", pr->start_ns, pr->end_ns, pr->calls, pr->instrs);
	return 0;
}

static int module_item(const rtl_profile_module *m, void *user)
{
	struct list *l = user;

	sep(l);
	fprintf(l->out, "{\"id\": %" PRId64 ", \"path\": ", m->id);
	rtl_json_string(l->out, m->path);
	fprintf(l->out, ", \"load_bias\": \"0x%" PRIx64 "\"}", m->load_bias);
	return 0;
}

static int call_item(const rtl_profile_call *c, void *user)
{
	struct list *l = user;

	sep(l);
	fprintf(l->out, "{\"caller\": %" PRId64 ", \"site\": \"0x%" PRIx64 "\", \"callee\": %"
		PRId64 ", \"count\": %" PRIu64 "}", c->caller, c->site, c->callee, c->count);
	return 0;
}

static int branch_item(const rtl_profile_branch *b, void *user)
{
	struct list *l = user;

	sep(l);
	fprintf(l->out, "{\"function\": %" PRId64 ", \"site\": \"0x%" PRIx64 "\", \"taken\": %" PRIu64
		", \"not_taken\": %" PRIu64 "}", b->function, b->site, b->taken, b->not_taken);
	return 0;
}

static int time_item(const rtl_profile_time *t, void *user)
{
	struct list *l = user;

	sep(l);
	fprintf(l->out, "{\"function\": %" PRId64 ", \"tid\": %d, \"calls\": %" PRIu64
		", \"inclusive\": %.9f, \"exclusive\": %.9f}", t->function, t->tid, t->calls,
		t->inclusive, t->exclusive);
	return 0;
}

static int metric_item(const rtl_profile_metric *m, void *user)
{
	struct list *l = user;

	sep(l);
	fprintf(l->out, "{\"function\": %" PRId64 ", \"name\": ", m->function);
	rtl_json_string(l->out, m->name);
	fprintf(l->out, ", \"site\": \"0x%" PRIx64 "\", \"value\": %.17g}", m->site, m->value);
	return 0;
}

static void function_item(FILE *out, const rtl_profile_function *f, const rtl_profile_totals *t)
{
	char buf[32];

	fprintf(out, "{\"id\": %" PRId64 ", \"module_id\": %" PRId64 ", \"module\": ",
		f->id, f->module_id);
	rtl_json_string(out, f->module);
	fprintf(out, ", \"address\": \"0x%" PRIx64 "\", \"size\": %" PRIu64 ", \"name\": ",
		f->addr, f->size);
	rtl_json_string(out, rpt_name(f, buf));
	if (f->have & RTL_HAVE_CALLS)
		fprintf(out, ", \"calls\": %" PRIu64, f->calls);
	if (f->have & RTL_HAVE_INSTRS)
		fprintf(out, ", \"instrs\": %" PRIu64 ", \"share\": %.6f", f->instrs,
			t->instrs ? (double)f->instrs / (double)t->instrs : 0.0);
	fprintf(out, ", \"instrumented\": %s", f->instrumented ? "true" : "false");
	if (f->reason) {
		fputs(", \"reason\": ", out);
		rtl_json_string(out, f->reason);
	}
	fputc('}', out);
}

static void write_totals(FILE *out, const rtl_profile_totals *t)
{
	fprintf(out, "  \"totals\": {\"functions\": %" PRIu64 ", \"counted\": %" PRIu64
		", \"modules\": %" PRIu64 ", \"blocks\": %" PRIu64 ", \"call_sites\": %" PRIu64,
		t->functions, t->counted, t->modules, t->blocks, t->call_sites);
	if (t->have & RTL_HAVE_CALLS)
		fprintf(out, ", \"calls\": %" PRIu64, t->calls);
	if (t->have & RTL_HAVE_INSTRS)
		fprintf(out, ", \"instrs\": %" PRIu64, t->instrs);
	fputs("},\n", out);
}

/* The program's own signals (shim): seconds and runs per value. */
static int write_signals(rtl_profile *p, FILE *out)
{
	struct rpt_signals s;
	int err = rpt_signals_load(p, &s);
	for (size_t i = 0; !err && i < s.n; i++)
		fprintf(out, "%s\n    {\"value\": %" PRIu64 ", \"seconds\": %.9f, \"runs\": %" PRIu64 "}",
			i ? "," : "", s.v[i].value, s.v[i].seconds, s.v[i].runs);
	if (!err)
		free(s.v);
	return err;
}

/* The sample collector's functions by self samples, or null. */
static int write_samples(rtl_profile *p, const rtl_report_options *o, FILE *out)
{
	struct rpt_sampled s;
	int err = rpt_sampled_load(p, o, &s);
	if (err == -ENODATA) {
		fputs("null", out);
		return 0;
	}
	if (err)
		return err;
	fprintf(out, "{\"count\": %" PRIu64 ", \"seconds\": %.9f, \"functions\": [", s.samples, s.seconds);
	size_t limit = o->top && o->top < s.n ? o->top : s.n;
	for (size_t i = 0; i < limit; i++) {
		const struct rpt_sampled_fn *f = &s.fn[i];
		const rtl_profile_function *row = rpt_rows_by_id(&s.tree.rows, f->function);
		fprintf(out, "%s\n    {\"module\": ", i ? "," : "");
		rtl_json_string(out, row && row->module ? row->module : "?");
		fputs(", \"name\": ", out);
		rtl_json_string(out, row && row->name ? row->name : "?");
		fprintf(out, ", \"address\": %" PRIu64 ", \"self\": %" PRIu64 ", \"total\": %" PRIu64
			", \"self_seconds\": %.9f, \"total_seconds\": %.9f}", row ? row->addr : 0, f->self, f->total,
			f->self_seconds, f->total_seconds);
	}
	fputs("\n  ]}", out);
	rpt_sampled_free(&s);
	return 0;
}

/* The function ids the other tables name (call sites, branches, times,
 * metrics), sorted, duplicates kept. */
struct ids {
	uint64_t *v;
	size_t n, cap;
};

static int note_id(struct ids *s, int64_t id)
{
	if (rtl_grow(&s->v, &s->cap, s->n + 1, sizeof(*s->v)))
		return -ENOMEM;
	s->v[s->n++] = (uint64_t)id;
	return 0;
}

static int call_ids(const rtl_profile_call *c, void *u) { return note_id(u, c->caller) ?: note_id(u, c->callee); }
static int branch_id(const rtl_profile_branch *b, void *u) { return note_id(u, b->function); }
static int time_id(const rtl_profile_time *t, void *u) { return note_id(u, t->function); }
static int metric_id(const rtl_profile_metric *m, void *u) { return note_id(u, m->function); }

static bool named(const struct ids *s, int64_t id)
{
	size_t i = rtl_lower_bound_u64(s->v, s->n, (uint64_t)id);
	return i < s->n && s->v[i] == (uint64_t)id;
}

/* The rows of the functions list: every function with --all; else those
 * counted and those another table names (a calltime profile has times,
 * not counts: its ids must have their rows), the first o->top of them. */
static int load_rows(rtl_profile *p, const rtl_report_options *o, struct rpt_rows *rows)
{
	struct ids s = { 0 };
	unsigned long top = rows->limit;
	int err;

	if (o->all)
		return rpt_rows_load(p, 1, 0, rows);
	if ((err = rtl_profile_foreach_call(p, call_ids, &s)) || (err = rtl_profile_foreach_branch(p, branch_id, &s)) ||
	    (err = rtl_profile_foreach_time(p, time_id, &s)) || (err = rtl_profile_foreach_metric(p, metric_id, &s)) ||
	    (err = rtl_radix_sort_u64(s.v, s.n, sizeof(*s.v), 0) ? -ENOMEM : 0))
		goto out;
	rows->limit = 0;
	if ((err = rpt_rows_load(p, !!s.n, 0, rows)))
		goto out;
	size_t k = 0;
	for (size_t i = 0; i < rows->n; i++) {
		rtl_profile_function *f = &rows->fn[i];
		if ((f->calls || f->instrs || named(&s, f->id)) && (!top || k < top)) {
			rows->fn[k++] = *f;
			continue;
		}
		free((char *)f->module);
		free((char *)f->name);
		free((char *)f->reason);
	}
	rows->n = k;
out:
	rows->limit = top;
	free(s.v);
	return err;
}

int rtl_report_json(rtl_profile *p, const rtl_report_options *o, FILE *out)
{
	if (!o)
		o = &rpt_default_options;
	struct rpt_rows rows = { .limit = o->top };
	struct list l = { out, 0 };
	rtl_profile_totals t;
	int err;

	if ((err = rtl_profile_get_totals(p, &t)) || (err = load_rows(p, o, &rows)))
		goto out;
	fprintf(out, "{\n  \"schema_version\": %d,\n  \"meta\": {", RTL_PROFILE_SCHEMA_VERSION);
	if ((err = rtl_profile_foreach_meta(p, meta_item, &l)))
		goto out;
	fputs("\n  },\n", out);
	write_totals(out, &t);
	fputs("  \"processes\": [", out);
	l.n = 0;
	if ((err = rtl_profile_foreach_process(p, process_item, &l)))
		goto out;
	fputs("\n  ],\n  \"modules\": [", out);
	l.n = 0;
	if ((err = rtl_profile_foreach_module(p, module_item, &l)))
		goto out;
	fputs("\n  ],\n  \"functions\": [", out);
	l.n = 0;
	for (size_t i = 0; i < rows.n; i++) {
		sep(&l);
		function_item(out, &rows.fn[i], &t);
	}
	fputs("\n  ],\n  \"call_sites\": [", out);
	l.n = 0;
	if ((err = rtl_profile_foreach_call(p, call_item, &l)))
		goto out;
	/* the other collectors' tables, empty when they did not run */
	fputs("\n  ],\n  \"branches\": [", out);
	l.n = 0;
	if ((err = rtl_profile_foreach_branch(p, branch_item, &l)))
		goto out;
	fputs("\n  ],\n  \"times\": [", out);
	l.n = 0;
	if ((err = rtl_profile_foreach_time(p, time_item, &l)))
		goto out;
	fputs("\n  ],\n  \"metrics\": [", out);
	l.n = 0;
	if ((err = rtl_profile_foreach_metric(p, metric_item, &l)))
		goto out;
	fputs("\n  ],\n  \"samples\": ", out);
	if ((err = write_samples(p, o, out)))
		goto out;
	fputs(",\n  \"signals\": [", out);
	if ((err = write_signals(p, out)))
		goto out;
	fputs("\n  ]", out);
	fputs("\n}\n", out);
	err = rpt_out_status(out);
out:
	rpt_rows_free(&rows);
	return err;
}
