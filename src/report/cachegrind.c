/* Cachegrind export (cg_annotate's input, valgrind's cachegrind format)
 * from the memtrace collector's measures: per instruction its data reads
 * (loads and modifies: cachegrind counts a modify as one read), writes and
 * L1D misses of the first cache configuration by kind (the metrics
 * mem_loads, mem_modifies, mem_stores, mem_misses_read and
 * mem_misses_write), placed on source lines by DWARF (cg_places.h; "???"
 * and line 0 where there is none), summed per file, function and line.
 * Events: Dr D1mr Dw D1mw; `summary:` adds them up. */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <reticle/error.h>
#include "report/cg_places.h"
#include "report/report_priv.h"
#include "util/array.h"

enum { DR, D1MR, DW, D1MW, NEV };

struct cost {
	int64_t fn;
	uint32_t file, line;
	uint64_t v[NEV];
};

struct gather {
	struct cost *c;
	size_t n, cap;
	bool any;
};

static int event_of(const char *name)
{
	if (!strcmp(name, "mem_loads") || !strcmp(name, "mem_modifies"))
		return DR;
	if (!strcmp(name, "mem_stores"))
		return DW;
	if (!strcmp(name, "mem_misses_read"))
		return D1MR;
	if (!strcmp(name, "mem_misses_write"))
		return D1MW;
	return -1;
}

/* Every memtrace metric, by function and site (places come later). */
static int take(const rtl_profile_metric *m, void *user)
{
	struct gather *g = user;
	int ev = event_of(m->name);
	if (ev < 0)
		return 0;
	if (rtl_grow(&g->c, &g->cap, g->n + 1, sizeof(*g->c)))
		return -ENOMEM;
	g->c[g->n] = (struct cost){ m->function, 0, 0, { 0 } };
	g->c[g->n].v[ev] = (uint64_t)m->value;
	/* the site, until placed, in file and line */
	g->c[g->n].file = (uint32_t)(m->site >> 32);
	g->c[g->n].line = (uint32_t)m->site;
	g->n++;
	g->any = true;
	return 0;
}

static int by_place(const void *a, const void *b)
{
	const struct cost *x = a, *y = b;
	if (x->file != y->file)
		return x->file < y->file ? -1 : 1;
	if (x->fn != y->fn)
		return x->fn < y->fn ? -1 : 1;
	return x->line < y->line ? -1 : x->line > y->line;
}

struct head {
	char cmd[512], cache[160];
};

static int meta_line(const char *key, const char *value, void *user)
{
	struct head *h = user;
	if (!strcmp(key, "command"))
		snprintf(h->cmd, sizeof(h->cmd), "%s", value);
	else if (!strcmp(key, "memtrace_cache_0_l1d") || !strcmp(key, "memtrace_cache_0_l1"))
		/* "NAME: loads ..." (the name may hold colons of its own) */
		snprintf(h->cache, sizeof(h->cache), "%.*s",
			 (int)(strstr(value, ": loads") ? strstr(value, ": loads") - value : (long)strlen(value)), value);
	return 0;
}

int rtl_report_cachegrind(rtl_profile *p, const rtl_report_options *o, FILE *out)
{
	(void)o;
	struct gather g = { 0 };
	struct rpt_rows rows = { 0 };
	struct cg_places places = { 0 };
	int err = rtl_profile_foreach_metric(p, take, &g);
	if (!err && !g.any)
		err = -ENODATA;   /* nothing to write: not a memtrace profile */
	if (!err)
		err = rpt_rows_load(p, 1, 0, &rows);
	if (err)
		goto out;
	rpt_rows_sort_by_id(&rows);
	for (size_t i = 0; i < g.n && !err; i++) {
		const rtl_profile_function *f = rpt_rows_by_id(&rows, g.c[i].fn);
		uint64_t site = (uint64_t)g.c[i].file << 32 | g.c[i].line;
		struct cg_place pl = { 0 };
		if (f && (err = cgp_addr(&places, f->module, site, &pl)))
			break;
		g.c[i].file = pl.file;
		g.c[i].line = pl.line;
	}
	if (err)
		goto out;
	qsort(g.c, g.n, sizeof(*g.c), by_place);
	/* cg_annotate wants the desc: lines, then cmd:, then events: */
	struct head h = { "", "" };
	if ((err = rtl_profile_foreach_meta(p, meta_line, &h)))
		goto out;
	fprintf(out, "desc: D1 cache: %s\ncmd: %s\nevents: Dr D1mr Dw D1mw\n", h.cache[0] ? h.cache : "?",
		h.cmd[0] ? h.cmd : "?");
	uint64_t sum[NEV] = { 0 };
	uint32_t file = UINT32_MAX;
	int64_t fn = INT64_MIN;
	for (size_t i = 0; i < g.n;) {
		/* one line of costs per file, function and line */
		size_t j = i;
		uint64_t v[NEV] = { 0 };
		for (; j < g.n && !by_place(&g.c[i], &g.c[j]); j++)
			for (int e = 0; e < NEV; e++)
				v[e] += g.c[j].v[e];
		if (g.c[i].file != file) {
			file = g.c[i].file;
			fn = INT64_MIN;
			fprintf(out, "fl=%s\n", places.nfiles > file ? places.files[file] : "???");
		}
		if (g.c[i].fn != fn) {
			fn = g.c[i].fn;
			const rtl_profile_function *f = rpt_rows_by_id(&rows, fn);
			char buf[32];
			fprintf(out, "fn=%s\n", f ? rpt_name(f, buf) : "???");
		}
		fprintf(out, "%u", g.c[i].line);
		for (int e = 0; e < NEV; e++) {
			fprintf(out, " %" PRIu64, v[e]);
			sum[e] += v[e];
		}
		fputc('\n', out);
		i = j;
	}
	fprintf(out, "summary: %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 "\n", sum[DR], sum[D1MR], sum[DW],
		sum[D1MW]);
	err = rpt_out_status(out);
out:
	free(g.c);
	rpt_rows_free(&rows);
	cgp_free(&places);
	return err;
}
