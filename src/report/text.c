/* Text report: the run's facts, totals, then functions by count in columns
 * sized to their contents. A column appears only when the profile carries
 * its data (calls from fcount, Ir from bbcount) or, for the source place of
 * each function's entry, when DWARF gives one for some row. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <reticle/error.h>
#include "report/report_priv.h"
#include "report/samples.h"
#include "report/signals.h"

/* Meta keys shown first, with their labels; other keys follow as they are. */
static const char *const known_keys[][2] = {
	{ "command", "command" }, { "pid", "pid" }, { "exit_status", "exit status" },
	{ "collectors", "collectors" },
};

static int is_known(const char *key)
{
	if (!strcmp(key, "schema_version") || !strncmp(key, "memtrace_cache_", 15) ||
	    !strncmp(key, "memtrace_estimate_", 18))
		return 1;   /* (the caches' table, caches.c) */
	for (size_t i = 0; i < sizeof(known_keys) / sizeof(known_keys[0]); i++)
		if (!strcmp(key, known_keys[i][0]))
			return 1;
	return 0;
}

static int other_meta(const char *key, const char *value, void *user)
{
	if (!is_known(key))
		fprintf(user, "%-13s %s\n", key, value ? value : "");
	return 0;
}

static int write_header(rtl_profile *p, const rtl_profile_totals *t, FILE *out)
{
	for (size_t i = 0; i < sizeof(known_keys) / sizeof(known_keys[0]); i++) {
		const char *v = rtl_profile_get_meta(p, known_keys[i][0]);

		if (v)
			fprintf(out, "%-13s %s\n", known_keys[i][1], v);
	}
	int err = rtl_profile_foreach_meta(p, other_meta, out);
	if (err)
		return err;
	if (rtl_profile_selected_process(p)) {
		if ((err = rpt_process_line(p, rtl_profile_selected_process(p), out)))
			return err;
	} else if (t->processes > 1) {
		fprintf(out, "%-13s %" PRIu64 " images, counts added up below (--process ID for one)\n\n",
			"processes", t->processes);
		if ((err = rpt_tree(p, t->have, 20, out)))
			return err;
		fputc('\n', out);
	}
	fprintf(out, "%-13s %" PRIu64 " with counts, %" PRIu64 " in %" PRIu64 " module%s",
		"functions", t->counted, t->functions, t->modules, t->modules == 1 ? "" : "s");
	if (t->uninstrumented && t->have)
		fprintf(out, " (%" PRIu64 " not instrumented)", t->uninstrumented);
	else if (t->uninstrumented)   /* sample, shim or memtrace alone: nothing is counted */
		fprintf(out, " (none counted: no counting collector ran)");
	fputc('\n', out);
	if (t->have & RTL_HAVE_CALLS)
		fprintf(out, "%-13s %" PRIu64 "\n", "calls", t->calls);
	if (t->have & RTL_HAVE_INSTRS)
		fprintf(out, "%-13s %" PRIu64 " (Ir)\n", "instructions", t->instrs);
	return 0;
}

struct widths { int module, addr, name, calls, instrs, source; };

/* A longer name (C++ templates run to hundreds of characters) is printed
 * whole but does not widen the column: its row alone is pushed right. */
#define NAME_COLUMN_MAX 60

static int ndigits(uint64_t v)
{
	int n = 1;

	while (v >= 10) {
		v /= 10;
		n++;
	}
	return n;
}

/* "file.c:12" for each row whose entry DWARF places (basename: the rows
 * stay short), else NULL. Returns how many were found. */
static size_t find_sources(const struct rpt_rows *rows, char **where)
{
	struct rpt_sources s = { 0 };
	size_t found = 0;

	for (size_t i = 0; i < rows->n; i++) {
		const char *file;
		int line;

		where[i] = NULL;
		if (!rpt_source_line(&s, rows->fn[i].module, rows->fn[i].addr, &file, &line) &&
		    asprintf(&where[i], "%s:%d", rpt_basename(file), line) > 0)
			found++;
		else
			where[i] = NULL;
	}
	rpt_sources_free(&s);
	return found;
}

static void measure(const struct rpt_rows *rows, char **where, struct widths *w)
{
	char buf[32];

	*w = (struct widths){ 6, 7, 4, 5, 2, 0 };
	for (size_t i = 0; i < rows->n; i++) {
		const rtl_profile_function *f = &rows->fn[i];
		int n;

		if ((n = (int)strlen(rpt_basename(f->module))) > w->module)
			w->module = n;
		if ((n = snprintf(buf, sizeof(buf), "0x%" PRIx64, f->addr)) > w->addr)
			w->addr = n;
		if ((n = (int)strlen(rpt_name(f, buf))) > w->name && n <= NAME_COLUMN_MAX)
			w->name = n;
		if ((n = ndigits(f->calls)) > w->calls)
			w->calls = n;
		if ((n = ndigits(f->instrs)) > w->instrs)
			w->instrs = n;
		if (where && where[i] && (n = (int)strlen(where[i])) > w->source)
			w->source = n;
	}
}

/* Share of the total of the main count: Ir when present, else calls. */
static double share(const rtl_profile_function *f, const rtl_profile_totals *t)
{
	if (t->have & RTL_HAVE_INSTRS)
		return t->instrs ? 100.0 * (double)f->instrs / (double)t->instrs : 0;
	return t->calls ? 100.0 * (double)f->calls / (double)t->calls : 0;
}

static void write_row(FILE *out, const rtl_profile_function *f, const char *where,
		      const struct widths *w, const rtl_profile_totals *t)
{
	char addr[32], buf[32];

	snprintf(addr, sizeof(addr), "0x%" PRIx64, f->addr);
	fprintf(out, "%-*s  %*s  %-*s", w->module, rpt_basename(f->module), w->addr, addr,
		w->name, rpt_name(f, buf));
	if (t->have & RTL_HAVE_CALLS) {
		if (f->have & RTL_HAVE_CALLS)
			fprintf(out, "  %*" PRIu64, w->calls, f->calls);
		else
			fprintf(out, "  %*s", w->calls, "-");
	}
	if (t->have & RTL_HAVE_INSTRS) {
		if (f->have & RTL_HAVE_INSTRS)
			fprintf(out, "  %*" PRIu64, w->instrs, f->instrs);
		else
			fprintf(out, "  %*s", w->instrs, "-");
	}
	if (t->have)
		fprintf(out, "  %6.2f%%", share(f, t));
	if (w->source)
		fprintf(out, "  %-*s", f->instrumented ? 0 : w->source, where ? where : "-");
	if (!f->instrumented)
		fprintf(out, "  not instrumented: %s", f->reason ? f->reason : "unknown reason");
	fputc('\n', out);
}

static void write_table(FILE *out, const struct rpt_rows *rows, const rtl_profile_totals *t)
{
	char **where = calloc(rows->n, sizeof(*where));
	struct widths w;

	if (!where || !find_sources(rows, where)) {
		free(where);
		where = NULL;
	}
	measure(rows, where, &w);
	fprintf(out, "\n%-*s  %*s  %-*s", w.module, "module", w.addr, "address", w.name, "name");
	if (t->have & RTL_HAVE_CALLS)
		fprintf(out, "  %*s", w.calls, "calls");
	if (t->have & RTL_HAVE_INSTRS)
		fprintf(out, "  %*s", w.instrs, "Ir");
	if (t->have)
		fprintf(out, "  %7s", "share");
	if (w.source)
		fprintf(out, "  %s", "source");
	fputc('\n', out);
	for (size_t i = 0; i < rows->n; i++)
		write_row(out, &rows->fn[i], where ? where[i] : NULL, &w, t);
	for (size_t i = 0; where && i < rows->n; i++)
		free(where[i]);
	free(where);
}

int rtl_report_text(rtl_profile *p, const rtl_report_options *o, FILE *out)
{
	struct rpt_rows rows = { 0 };
	rtl_profile_totals t;
	uint64_t avail;
	int err;

	if (!o)
		o = &rpt_default_options;
	rows.limit = o->top;
	rows.demangle = !o->no_demangle;

	if ((err = rtl_profile_get_totals(p, &t)) || (err = write_header(p, &t, out)) ||
	    (err = rpt_rows_load(p, o->all, 0, &rows)))
		goto out;
	if (rows.n)
		write_table(out, &rows, &t);
	avail = o->all ? t.functions : t.counted;
	if (avail > rows.n)
		fprintf(out, "(%" PRIu64 " more function%s: --top N or --top 0 for more)\n",
			avail - rows.n, avail - rows.n == 1 ? "" : "s");
	int timed;
	if ((err = rpt_arcs(p, o, out)) || (err = rpt_caches(p, out)) || (err = rpt_times(p, o, out, &timed)) || (err = rpt_samples(p, o, out)) || (err = rpt_signals(p, o, out)) || (err = rpt_metrics(p, o, out)) ||
	    (err = rpt_loops(p, o, out)) || (err = rpt_ranks(p, o, out)) ||
	    (o->inlined && (err = rpt_inlined(p, o, out))))
		goto out;
	err = rpt_out_status(out);
out:
	rpt_rows_free(&rows);
	return err;
}
