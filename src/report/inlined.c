/* Inlined code in the text report (--inline): the instructions executed
 * (bbcount's blocks, decoded from the module's file) that DWARF places in
 * an inlined call are counted for the innermost inlined function, as perf
 * report --inline and addr2line -i name them. The function table keeps
 * them in the function they were inlined into (its symbol's); this table
 * says how much of that was whose. Modules without DWARF have no rows. */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <reticle/binary.h>
#include "report/cg_places.h"   /* cgp_insn_len */
#include "util/array.h"

struct insn {
	uint64_t addr, count;
	int64_t host;             /* the function the block is in */
	const char *inlined;      /* innermost inlined function, or NULL */
	int depth;
};

struct module_insns {
	const char *path;         /* a row's string */
	struct insn *v;
	size_t n, cap;
};

struct walk {
	struct rpt_rows rows;     /* by id */
	struct rpt_sources src;   /* the modules' binaries */
	struct module_insns *mods;
	size_t nmods, capmods;
	struct rpt_site_values reps;     /* rep string iterations by block */
	int err;
};

static struct module_insns *module_of(struct walk *w, const char *path)
{
	for (size_t i = w->nmods; i-- > 0;)
		if (!strcmp(w->mods[i].path, path))
			return &w->mods[i];
	if (rtl_grow(&w->mods, &w->capmods, w->nmods + 1, sizeof(*w->mods)))
		return NULL;
	w->mods[w->nmods] = (struct module_insns){ path, NULL, 0, 0 };
	return &w->mods[w->nmods++];
}

static int add_block(const rtl_profile_block *b, void *user)
{
	struct walk *w = user;
	const rtl_profile_function *f = rpt_rows_by_id(&w->rows, b->function);
	if (!f || !b->count || !f->module)
		return 0;
	rtl_binary *bin = rpt_sources_binary(&w->src, f->module);
	if (!bin || !rtl_binary_has_source_lines(bin))
		return 0;
	struct module_insns *m = module_of(w, f->module);
	if (!m || rtl_grow(&m->v, &m->cap, m->n + b->ninstrs, sizeof(*m->v)))
		return -ENOMEM;
	uint64_t at = b->addr, reps = (uint64_t)rpt_site_value_at(&w->reps, b->function, b->addr);
	for (uint32_t i = 0; i < b->ninstrs; i++) {
		bool rep;
		size_t len = cgp_insn_len_rep(bin, at, &rep);
		if (!len)
			break;   /* the file changed since the run: keep what decodes */
		/* a rep string instruction: each iteration an instruction (the
		 * block's, given to its first one) */
		m->v[m->n++] = (struct insn){ at, b->count + (rep ? reps : 0), b->function, NULL, 0 };
		reps = rep ? 0 : reps;
		at += len;
	}
	return 0;
}

static int by_addr(const void *a, const void *b)
{
	const struct insn *x = a, *y = b;
	return (x->addr > y->addr) - (x->addr < y->addr);
}

/* Marks the instructions in R with its function when it is deeper than
 * what holds them yet. */
static int mark_range(const rtl_inline_range *r, void *user)
{
	struct module_insns *m = user;
	size_t lo = 0, hi = m->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (m->v[mid].addr < r->addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = lo; i < m->n && m->v[i].addr < r->end; i++)
		if (r->depth > m->v[i].depth) {
			m->v[i].inlined = r->name;
			m->v[i].depth = r->depth;
		}
	return 0;
}

struct inl_row {
	const char *module, *name;
	uint64_t instrs;
	int64_t host;             /* the host with most of its instructions */
	uint64_t host_instrs;
	size_t nhosts;
};

static int by_row(const void *a, const void *b)
{
	const struct inl_row *x = a, *y = b;
	int c = strcmp(x->module, y->module);
	return c ? c : strcmp(x->name, y->name);
}

static int by_instrs(const void *a, const void *b)
{
	const struct inl_row *x = a, *y = b;
	if (x->instrs != y->instrs)
		return (x->instrs < y->instrs) - (x->instrs > y->instrs);
	return by_row(a, b);
}

struct host_count { const char *name; int64_t host; uint64_t instrs; };

static int by_name_host(const void *a, const void *b)
{
	const struct host_count *x = a, *y = b;
	int c = strcmp(x->name, y->name);
	return c ? c : (x->host > y->host) - (x->host < y->host);
}

/* One row per inlined function of module M: its instructions' Ir, and
 * the functions it was inlined into. */
static int rows_of(struct module_insns *m, struct inl_row **rows, size_t *n, size_t *cap)
{
	struct host_count *hc = NULL;
	size_t nh = 0, caph = 0;
	for (size_t i = 0; i < m->n; i++) {
		if (!m->v[i].inlined)
			continue;
		if (rtl_grow(&hc, &caph, nh + 1, sizeof(*hc))) {
			free(hc);
			return -ENOMEM;
		}
		hc[nh++] = (struct host_count){ m->v[i].inlined, m->v[i].host, m->v[i].count };
	}
	qsort(hc, nh, sizeof(*hc), by_name_host);
	for (size_t i = 0; i < nh;) {
		if (rtl_grow(rows, cap, *n + 1, sizeof(**rows))) {
			free(hc);
			return -ENOMEM;
		}
		struct inl_row *r = &(*rows)[(*n)++];
		*r = (struct inl_row){ m->path, hc[i].name, 0, 0, 0, 0 };
		for (size_t j = i; j < nh && !strcmp(hc[j].name, r->name);) {
			uint64_t sum = 0;
			int64_t host = hc[j].host;
			for (; j < nh && !strcmp(hc[j].name, r->name) && hc[j].host == host; j++)
				sum += hc[j].instrs;
			r->instrs += sum;
			r->nhosts++;
			if (sum > r->host_instrs) {
				r->host_instrs = sum;
				r->host = host;
			}
			i = j;
		}
	}
	free(hc);
	return 0;
}

int rpt_inlined(rtl_profile *p, const rtl_report_options *o, FILE *out)
{
	struct walk w = { .rows = { .demangle = !o->no_demangle } };
	struct inl_row *rows = NULL;
	size_t nrows = 0, caprows = 0;
	rtl_profile_totals t;
	int err = rtl_profile_get_totals(p, &t);
	if (!err && !(t.have & RTL_HAVE_INSTRS)) {
		fputs("\ninlined code: needs instruction counts (run with -c bbcount or cover)\n", out);
		return 0;
	}
	if (err || (err = rpt_rows_load(p, 0, 1, &w.rows)))
		goto out;
	rpt_rows_sort_by_id(&w.rows);
	if ((err = rpt_site_values_load(p, RPT_REP_METRIC, &w.reps)) || (err = rtl_profile_foreach_block(p, -1, add_block, &w)))
		goto out;
	for (size_t i = 0; i < w.nmods && !err; i++) {
		struct module_insns *m = &w.mods[i];
		qsort(m->v, m->n, sizeof(*m->v), by_addr);
		rtl_binary *bin = rpt_sources_binary(&w.src, m->path);
		if (bin && (err = rtl_binary_foreach_inline_range(bin, mark_range, m)) == -ENOENT)
			err = 0;
		if (!err)
			err = rows_of(m, &rows, &nrows, &caprows);
	}
	if (err)
		goto out;
	qsort(rows, nrows, sizeof(*rows), by_instrs);
	fputs("\ninlined code (Ir of the instructions DWARF places in inlined calls, by the innermost\n"
	      "inlined function; the table above counts them in the function they were inlined into)\n", out);
	if (!nrows) {
		fputs("(none: no executed code of a module with DWARF was inlined)\n", out);
		goto out;
	}
	fprintf(out, "%16s  %7s  %s\n", "Ir", "share", "function (module) <- inlined into");
	size_t limit = o->top && o->top < nrows ? o->top : nrows;
	for (size_t i = 0; i < limit; i++) {
		const rtl_profile_function *host = rpt_rows_by_id(&w.rows, rows[i].host);
		char buf[32], *dem = o->no_demangle ? NULL : rtl_demangle(rows[i].name);
		fprintf(out, "%16" PRIu64 "  %6.2f%%  %s (%s) <- %s", rows[i].instrs,
			t.instrs ? 100.0 * (double)rows[i].instrs / (double)t.instrs : 0.0,
			dem ? dem : rows[i].name, rpt_basename(rows[i].module), host ? rpt_name(host, buf) : "?");
		if (rows[i].nhosts > 1)
			fprintf(out, " and %zu more", rows[i].nhosts - 1);
		fputc('\n', out);
		free(dem);
	}
	if (limit < nrows)
		fprintf(out, "(%zu more: --top N or --top 0 for more)\n", nrows - limit);
out:
	for (size_t i = 0; i < w.nmods; i++)
		free(w.mods[i].v);
	free(w.mods);
	free(rows);
	rpt_sources_free(&w.src);
	rpt_rows_free(&w.rows);
	rpt_site_values_free(&w.reps);
	return err;
}
