/* BOLT's profile (fdata, as perf2bolt writes it and llvm-bolt -data reads
 * it) for one module, from exact counts instead of sampled branch records:
 *
 *   1 FROM_FUNCTION FROM_OFFSET 1 TO_FUNCTION TO_OFFSET MISPREDICTS COUNT
 *
 * offsets in hex from each function's start. Records: both ways out of
 * every conditional branch that ran (edges), the direct jump or the
 * fall-through that ends every executed block (bbcount), and every call
 * between two functions of the module (callgraph or bbcount) for function
 * order. Mispredicts are unknown: 0. Functions are named as llvm-bolt
 * names them: a global symbol by its name, a local one NAME/N, N counting
 * the local symbols of that name in address order (BOLT's uniquify).
 * Code without a symbol has no record. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <elf.h>
#include <reticle/binary.h>
#include <reticle/error.h>
#include "isa/x86_64/insn.h"
#include "report/cg_places.h"
#include "report/report_priv.h"
#include "util/array.h"

struct fd_sym { const char *name; uint64_t addr; size_t index; uint8_t type, bind; };

struct fd_record { size_t from; uint64_t from_off; size_t to; uint64_t to_off, count; };

struct fd_id { int64_t id; size_t fn; };

struct fdata {
	const char *module;           /* path of the module written */
	struct fd_id *ids;            /* its functions' profile ids, sorted */
	rtl_binary *bin;
	const rtl_profile_function *fn;    /* its functions, by address: rows
					    * FIRST to FIRST + NFN - 1 */
	char **bolt;                  /* per function: BOLT's name, or NULL */
	size_t first, nfn;
	struct fd_record *rec;
	size_t nrec, caprec;
	struct cg_places places;
	int64_t module_id;
	struct rpt_rows rows;
};

static int add_sym(const rtl_symbol *s, void *user)
{
	struct { struct fd_sym *v; size_t n, cap; } *t = user;
	if (!s->addr || !*s->name)
		return 0;
	if (rtl_grow(&t->v, &t->cap, t->n + 1, sizeof(*t->v)))
		return -ENOMEM;
	t->v[t->n++] = (struct fd_sym){ s->name, s->addr, s->index, s->type, s->bind };
	return 0;
}

static int by_addr_index(const void *a, const void *b)
{
	const struct fd_sym *x = a, *y = b;
	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	return (x->index > y->index) - (x->index < y->index);
}

/* The function of the module at ADDR exactly (EXACT) or holding it, or
 * (size_t)-1. */
static size_t function_at(const struct fdata *d, uint64_t addr, int exact)
{
	size_t i = rpt_rows_lower_bound(&d->rows, d->module_id, addr + 1) - d->first;
	const rtl_profile_function *f = i ? &d->fn[i - 1] : NULL;
	if (!f || (exact ? f->addr != addr : addr >= f->addr + (f->size ? f->size : 1)))
		return (size_t)-1;
	return i - 1;
}

static const struct fd_sym *sym_base;

/* Locals by name, then address order. */
static int by_name_order(const void *a, const void *b)
{
	size_t x = *(const size_t *)a, y = *(const size_t *)b;
	int c = strcmp(sym_base[x].name, sym_base[y].name);
	return c ? c : (x > y) - (x < y);
}

/* BOLT's name of every function that starts at a symbol. */
static int name_functions(struct fdata *d)
{
	struct { struct fd_sym *v; size_t n, cap; } t = { 0 };
	size_t *locals = NULL, nlocals = 0;
	unsigned *nth = NULL;
	int err = rtl_binary_foreach_symbol(d->bin, add_sym, &t);
	if (err == -ENOENT)
		err = 0;
	if (err || !t.n)
		goto out;
	qsort(t.v, t.n, sizeof(*t.v), by_addr_index);
	/* N of NAME/N: the local's rank among the locals of its name */
	locals = malloc(t.n * sizeof(*locals));
	nth = calloc(t.n, sizeof(*nth));
	if (!locals || !nth) {
		err = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < t.n; i++)
		if (t.v[i].bind == STB_LOCAL)
			locals[nlocals++] = i;
	sym_base = t.v;
	qsort(locals, nlocals, sizeof(*locals), by_name_order);
	for (size_t i = 0; i < nlocals; i++)
		nth[locals[i]] = i && !strcmp(t.v[locals[i - 1]].name, t.v[locals[i]].name) ? nth[locals[i - 1]] + 1 : 1;
	for (size_t i = 0; i < t.n && !err; i++) {
		const struct fd_sym *s = &t.v[i];
		if (s->type != STT_FUNC && s->type != STT_GNU_IFUNC)
			continue;
		size_t f = function_at(d, s->addr, 1);
		if (f == (size_t)-1 || (d->bolt[f] && s->bind == STB_LOCAL))
			continue;   /* a global name of the same address wins */
		char *name = NULL;
		if (s->bind == STB_LOCAL ? asprintf(&name, "%s/%u", s->name, nth[i]) < 0 : !(name = strdup(s->name)))
			err = -ENOMEM;
		free(d->bolt[f]);
		d->bolt[f] = name;
	}
out:
	free(locals);
	free(nth);
	free(t.v);
	return err;
}

static int add_record(struct fdata *d, uint64_t from, uint64_t to, uint64_t count, int to_entry)
{
	size_t f = function_at(d, from, 0), g = function_at(d, to, to_entry);
	if (!count || f == (size_t)-1 || g == (size_t)-1 || !d->bolt[f] || !d->bolt[g])
		return 0;
	if (rtl_grow(&d->rec, &d->caprec, d->nrec + 1, sizeof(*d->rec)))
		return -ENOMEM;
	d->rec[d->nrec++] = (struct fd_record){ f, from - d->fn[f].addr, g, to - d->fn[g].addr, count };
	return 0;
}

static int by_id(const void *a, const void *b)
{
	const struct fd_id *x = a, *y = b;
	return (x->id > y->id) - (x->id < y->id);
}

/* The index of the module's function of profile id ID, or (size_t)-1. */
static size_t function_of(const struct fdata *d, int64_t id)
{
	struct fd_id key = { id, 0 };
	const struct fd_id *hit = d->nfn ? bsearch(&key, d->ids, d->nfn, sizeof(key), by_id) : NULL;
	return hit ? hit->fn : (size_t)-1;
}

static int add_branch(const rtl_profile_branch *b, void *user)
{
	struct fdata *d = user;
	uint8_t code[15];
	struct x86_insn in;
	size_t len = function_of(d, b->function) == (size_t)-1 ? 0 : cgp_decode(d->bin, b->site, code, &in);
	if (function_of(d, b->function) == (size_t)-1 || !len || (in.kind != X86_JCC && in.kind != X86_LOOP))
		return 0;
	int err = add_record(d, b->site, in.target, b->taken, 0);
	return err ? err : add_record(d, b->site, b->site + len, b->not_taken, 0);
}

static int add_block(const rtl_profile_block *b, void *user)
{
	struct fdata *d = user;
	struct x86_insn in;
	uint64_t site;
	if (!b->count || function_of(d, b->function) == (size_t)-1 ||
	    cgp_block_last(&d->places, d->module, b->addr, b->ninstrs, 0, &site, &in))
		return 0;
	switch (in.kind) {
	case X86_JMP:
		return add_record(d, site, in.target, b->count, 0);
	case X86_OTHER:       /* the next block starts here: a fall-through */
		return add_record(d, site, site + in.len, b->count, 0);
	default:              /* conditional branches: edges; calls return inside BOLT's block */
		return 0;
	}
}

static int add_call(const rtl_profile_call *c, void *user)
{
	struct fdata *d = user;
	size_t g = function_of(d, c->callee);
	if (g == (size_t)-1 || function_of(d, c->caller) == (size_t)-1)
		return 0;
	return add_record(d, c->site, d->fn[g].addr, c->count, 1);
}

static int cmp_record(const void *a, const void *b)
{
	const struct fd_record *x = a, *y = b;
	if (x->from != y->from)
		return x->from < y->from ? -1 : 1;
	if (x->from_off != y->from_off)
		return x->from_off < y->from_off ? -1 : 1;
	if (x->to != y->to)
		return x->to < y->to ? -1 : 1;
	return (x->to_off > y->to_off) - (x->to_off < y->to_off);
}

/* The module written: O->module (its path as the profile has it, or its
 * basename), else the first module of the run (the program). */
static int pick_module(struct fdata *d, const rtl_report_options *o)
{
	const rtl_profile_function *pick = NULL;
	for (size_t i = 0; i < d->rows.n; i++) {
		const rtl_profile_function *f = &d->rows.fn[i];
		if (o->module && strcmp(f->module, o->module) && strcmp(rpt_basename(f->module), o->module))
			continue;
		if (!pick || f->module_id < pick->module_id)
			pick = f;
	}
	if (!pick)
		return -ENOENT;
	d->module = pick->module;
	d->module_id = pick->module_id;
	return 0;
}

int rtl_report_fdata(rtl_profile *p, const rtl_report_options *o, FILE *out)
{
	struct fdata d = { 0 };
	rtl_profile_totals t;
	int err;
	if (!o)
		o = &rpt_default_options;
	if ((err = rtl_profile_get_totals(p, &t)) || (err = rpt_rows_load(p, 1, 1, &d.rows)))
		goto out;
	if ((err = pick_module(&d, o)))
		goto out;
	d.bolt = calloc(d.rows.n + 1, sizeof(*d.bolt));
	d.ids = malloc((d.rows.n + 1) * sizeof(*d.ids));
	if (!d.bolt || !d.ids) {
		err = -ENOMEM;
		goto out;
	}
	/* rows are by module, then address: the module's are one run */
	d.first = rpt_rows_lower_bound(&d.rows, d.module_id, 0);
	d.fn = d.rows.fn + d.first;
	while (d.first + d.nfn < d.rows.n && d.fn[d.nfn].module_id == d.module_id) {
		d.ids[d.nfn] = (struct fd_id){ d.fn[d.nfn].id, d.nfn };
		d.nfn++;
	}
	if (d.nfn)
		qsort(d.ids, d.nfn, sizeof(*d.ids), by_id);
	if (!(d.bin = rpt_sources_binary(&d.places.src, d.module))) {
		err = -ENOENT;
		goto out;
	}
	if ((err = name_functions(&d)) || (err = rtl_profile_foreach_branch(p, add_branch, &d)) ||
	    (err = rtl_profile_foreach_block(p, -1, add_block, &d)) ||
	    (err = rtl_profile_foreach_call(p, add_call, &d)))
		goto out;
	if (!d.nrec) {
		/* nothing named: a stripped binary, whose counts are there but
		 * cannot be given to BOLT by name */
		bool named = false;
		for (size_t f = 0; f < d.nfn && !named; f++)
			named = d.bolt[f] != NULL;
		err = named || !d.nfn ? -ENODATA : -ENOTSUP;
		goto out;
	}
	qsort(d.rec, d.nrec, sizeof(*d.rec), cmp_record);
	for (size_t i = 0; i < d.nrec; i++) {
		const struct fd_record *r = &d.rec[i];
		uint64_t count = r->count;
		/* the same edge twice (a branch's target is also the fall-through) */
		while (i + 1 < d.nrec && !cmp_record(r, &d.rec[i + 1]))
			count += d.rec[++i].count;
		fprintf(out, "1 %s %" PRIx64 " 1 %s %" PRIx64 " 0 %" PRIu64 "\n", d.bolt[r->from], r->from_off,
			d.bolt[r->to], r->to_off, count);
	}
	err = rpt_out_status(out);
out:
	for (size_t i = 0; d.bolt && i < d.rows.n; i++)
		free(d.bolt[i]);
	free(d.bolt);
	free(d.ids);
	free(d.rec);
	cgp_free(&d.places);
	rpt_rows_free(&d.rows);
	return err;
}
