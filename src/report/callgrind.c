/* Callgrind export (valgrind.org/docs/manual/cl-format.html) for
 * callgrind_annotate and KCachegrind.
 *
 * Events: Ir (instructions executed, from bbcount), Calls (function
 * entries, from fcount or calltime) and Time (nanoseconds, calltime),
 * whichever the profile has. Positions are link-time
 * instruction addresses, and source lines when DWARF places some executed
 * code (cg_places.h): then fl= is each function's file, fi=/fe= mark
 * instructions of other files (inlined code) and each executed instruction
 * has its own cost line. Self costs are exact: per executed block (its Ir
 * at the block's first address, or per instruction with lines) when the
 * blocks add up to the function's count, else one line at the function's
 * address. Each recorded
 * call site becomes a calls= line with its exact count; the inclusive cost
 * after it is a gprof-style estimate (callgraph.h), except Time's: from
 * calltime's calling-context tree, the inclusive time of the calls from
 * the caller to the callee, shared among the pair's sites by their counts
 * (one line at the caller's entry when no site was recorded). Jumps inside a function
 * are written as callgrind's --collect-jumps=yes writes them: jcnd= for
 * each conditional branch that jumped (edges: times it jumped, of times it
 * ran), jump= for each direct jump that ends an executed block (bbcount),
 * into another function's middle too, not to its start nor out of every
 * function the profile knows (a tail call, through a PLT stub too);
 * fall-throughs are not jumps, nor are indirect jumps (their targets are
 * not counted apart) or rep string instructions. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <reticle/error.h>
#include "report/callgraph.h"
#include "report/cg_places.h"
#include "report/report_priv.h"
#include "util/array.h"

struct cg_block {
	size_t fn;
	uint64_t addr, ir, count;
	uint64_t reps;        /* iterations of its rep string instructions */
	uint32_t ninstrs;
	int placed;           /* its instructions are in places.v from first */
	size_t first;
};

struct export {
	struct rpt_rows rows;            /* every function, by module and address */
	struct { int64_t id; size_t idx; } *by_id;
	uint64_t (*self)[CG_MAX_EVENTS];
	uint64_t *entries;
	struct cg_block *blocks;
	size_t nblocks, cap_blocks, *first_block, *nblocks_of;
	unsigned char *use_blocks, *named;
	struct cg_graph g;
	size_t cap_arcs;
	struct cg_branch { size_t fn; uint64_t site, taken, not_taken; } *branches;
	size_t nbranches, cap_branches;
	int ev_ir, ev_calls, ev_time;    /* column of each event, or -1 */
	uint64_t *time_self, *time_calls;  /* per function, from function_times */
	struct cg_pair { size_t from, to; uint64_t calls, below; double inclusive; } *pairs;
	size_t npairs;                   /* caller-callee arcs of the context tree */
	struct rpt_site_values reps;            /* rep string iterations by block */
	struct cg_ctx {                  /* contexts by id */
		uint64_t id, calls, below;   /* below: calls in its subtree, its own too */
		size_t fn, parent;           /* parent: index, or -1 at a root */
		double inclusive;
	} *ctx;
	size_t nctx, cap_ctx;
	size_t *ob;                      /* per function: its module's ordinal */
	unsigned char *ob_named;         /* per module ordinal */
	struct cg_places places;
	int lines;                       /* positions: instr line */
	uint32_t fl, file;               /* the current fl= and file (fi=/fe=) */
	int err;
};

static int cmp_id(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

/* Index of the function with profile id ID, or (size_t)-1. */
static size_t find(const struct export *x, int64_t id)
{
	size_t lo = 0, hi = x->rows.n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (x->by_id[mid].id == id)
			return x->by_id[mid].idx;
		if (x->by_id[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return (size_t)-1;
}

static int add_block(const rtl_profile_block *b, void *user)
{
	struct export *x = user;
	size_t fn = find(x, b->function);

	if (fn == (size_t)-1)
		return 0;
	if (rtl_grow(&x->blocks, &x->cap_blocks, x->nblocks + 1, sizeof(*x->blocks)))
		return -ENOMEM;
	uint64_t reps = (uint64_t)rpt_site_value_at(&x->reps, b->function, b->addr);
	x->blocks[x->nblocks++] = (struct cg_block){ .fn = fn, .addr = b->addr, .count = b->count,
						     .ir = (uint64_t)b->ninstrs * b->count + reps,
						     .reps = reps, .ninstrs = b->ninstrs };
	return 0;
}

static int add_arc(const rtl_profile_call *c, void *user)
{
	struct export *x = user;
	size_t from = find(x, c->caller), to = find(x, c->callee);

	if (from == (size_t)-1 || to == (size_t)-1 || !c->count)
		return 0;
	if (rtl_grow(&x->g.arcs, &x->cap_arcs, x->g.narcs + 1, sizeof(*x->g.arcs)))
		return -ENOMEM;
	x->g.arcs[x->g.narcs++] = (struct cg_arc){ .from = from, .to = to, .site = c->site,
						   .count = c->count };
	return 0;
}

static int add_time(const rtl_profile_time *t, void *user)
{
	struct export *x = user;
	size_t fn = find(x, t->function);

	if (fn != (size_t)-1) {
		x->time_self[fn] += t->exclusive > 0 ? (uint64_t)llround(t->exclusive * 1e9) : 0;
		x->time_calls[fn] += t->calls;
	}
	x->ev_time = 0;   /* there are times: load() gives the event a column */
	return 0;
}

/* Contexts come by id, a parent before its children. */
static int add_context(const rtl_profile_context *c, void *user)
{
	struct export *x = user;
	size_t fn = find(x, c->function), lo = 0, hi = x->nctx;

	if (fn == (size_t)-1)
		return 0;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (x->ctx[mid].id < c->parent)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (rtl_grow(&x->ctx, &x->cap_ctx, x->nctx + 1, sizeof(*x->ctx)))
		return -ENOMEM;
	/* a thread's first timed call is nobody's callee */
	size_t parent = c->parent && lo < x->nctx && x->ctx[lo].id == c->parent ? lo : (size_t)-1;
	x->ctx[x->nctx++] = (struct cg_ctx){ c->id, c->calls, c->calls, fn, parent, c->inclusive };
	return 0;
}

/* The pairs (caller's function, callee's) of the tree, with their calls,
 * the calls made below them (callgrind's inclusive Calls) and time. */
static int make_pairs(struct export *x)
{
	for (size_t i = x->nctx; i-- > 0;)
		if (x->ctx[i].parent != (size_t)-1)
			x->ctx[x->ctx[i].parent].below += x->ctx[i].below;
	x->pairs = malloc((x->nctx + 1) * sizeof(*x->pairs));
	if (!x->pairs)
		return -ENOMEM;
	for (size_t i = 0; i < x->nctx; i++) {
		const struct cg_ctx *c = &x->ctx[i];
		if (c->parent != (size_t)-1)
			x->pairs[x->npairs++] = (struct cg_pair){ x->ctx[c->parent].fn, c->fn, c->calls, c->below,
								  c->inclusive };
	}
	return 0;
}

static int cmp_pair(const void *a, const void *b)
{
	const struct cg_pair *x = a, *y = b;

	if (x->from != y->from)
		return x->from < y->from ? -1 : 1;
	return (x->to > y->to) - (x->to < y->to);
}

static int cmp_arc(const void *a, const void *b);

/* Time on the calls= lines: each caller-callee pair's inclusive time
 * shared among its recorded sites by their counts (the arcs are sorted by
 * caller); a pair without a site gets an arc at the caller's entry. An arc
 * the tree does not have (a callee without a timer) carries no time: the
 * tree already gives it to the timed functions below it. */
static int exact_times(struct export *x)
{
	size_t narcs = x->g.narcs, a = 0;
	int err = make_pairs(x);

	if (err)
		return err;
	for (size_t i = 0; i < narcs; i++)
		x->g.arcs[i].cost[x->ev_time] = 0;
	if (x->npairs)
		qsort(x->pairs, x->npairs, sizeof(*x->pairs), cmp_pair);
	for (size_t i = 0, j; i < x->npairs; i = j) {
		struct cg_pair s = x->pairs[i];
		for (j = i + 1; j < x->npairs && x->pairs[j].from == s.from && x->pairs[j].to == s.to; j++) {
			s.calls += x->pairs[j].calls;
			s.below += x->pairs[j].below;
			s.inclusive += x->pairs[j].inclusive;
		}
		uint64_t ns = s.inclusive > 0 ? (uint64_t)llround(s.inclusive * 1e9) : 0, sites = 0, given = 0;
		while (a < narcs && x->g.arcs[a].from < s.from)
			a++;
		size_t last = (size_t)-1;
		for (size_t k = a; k < narcs && x->g.arcs[k].from == s.from; k++)
			if (x->g.arcs[k].to == s.to) {
				sites += x->g.arcs[k].count;
				last = k;
			}
		for (size_t k = a; sites && k < narcs && x->g.arcs[k].from == s.from; k++)
			if (x->g.arcs[k].to == s.to) {
				uint64_t share = k == last ? ns - given :
					(uint64_t)((double)ns * (double)x->g.arcs[k].count / (double)sites);
				x->g.arcs[k].cost[x->ev_time] = share;
				given += share;
			}
		if (sites)
			continue;
		if (rtl_grow(&x->g.arcs, &x->cap_arcs, x->g.narcs + 1, sizeof(*x->g.arcs)))
			return -ENOMEM;
		struct cg_arc *n = &x->g.arcs[x->g.narcs++];
		*n = (struct cg_arc){ .from = s.from, .to = s.to, .site = x->rows.fn[s.from].addr, .count = s.calls };
		n->cost[x->ev_time] = ns;
		/* no site: no estimate either; the tree gives Calls below it */
		if (x->ev_calls >= 0)
			n->cost[x->ev_calls] = s.below;
	}
	if (x->g.narcs > narcs)
		qsort(x->g.arcs, x->g.narcs, sizeof(*x->g.arcs), cmp_arc);
	return 0;
}

static int add_branch(const rtl_profile_branch *b, void *user)
{
	struct export *x = user;
	size_t fn = find(x, b->function);

	if (fn == (size_t)-1 || !b->taken)
		return 0;
	if (rtl_grow(&x->branches, &x->cap_branches, x->nbranches + 1, sizeof(*x->branches)))
		return -ENOMEM;
	x->branches[x->nbranches++] = (struct cg_branch){ fn, b->site, b->taken, b->not_taken };
	return 0;
}

static int cmp_branch(const void *a, const void *b)
{
	const struct cg_branch *x = a, *y = b;

	if (x->fn != y->fn)
		return x->fn < y->fn ? -1 : 1;
	return (x->site > y->site) - (x->site < y->site);
}

static int cmp_block(const void *a, const void *b)
{
	const struct cg_block *x = a, *y = b;

	if (x->fn != y->fn)
		return x->fn < y->fn ? -1 : 1;
	return (x->addr > y->addr) - (x->addr < y->addr);
}

static int cmp_arc(const void *a, const void *b)
{
	const struct cg_arc *x = a, *y = b;

	if (x->from != y->from)
		return x->from < y->from ? -1 : 1;
	if (x->site != y->site)
		return x->site < y->site ? -1 : 1;
	return (x->to > y->to) - (x->to < y->to);
}

/* Self costs: Ir from the function row, or from its blocks when the row
 * has none; blocks are used for positions only when they agree. */
static void self_costs(struct export *x)
{
	size_t b = 0;

	for (size_t v = 0; v < x->rows.n; v++) {
		const rtl_profile_function *f = &x->rows.fn[v];
		uint64_t sum = 0;

		x->first_block[v] = b;
		for (; b < x->nblocks && x->blocks[b].fn == v; b++)
			sum += x->blocks[b].ir;
		x->nblocks_of[v] = b - x->first_block[v];
		if (x->ev_ir >= 0) {
			x->self[v][x->ev_ir] = f->have & RTL_HAVE_INSTRS ? f->instrs : sum;
			x->use_blocks[v] = x->nblocks_of[v] && x->self[v][x->ev_ir] == sum;
		}
		if (x->ev_calls >= 0)
			x->self[v][x->ev_calls] = f->have & RTL_HAVE_CALLS ? f->calls : x->time_calls[v];
		if (x->ev_time >= 0)
			x->self[v][x->ev_time] = x->time_self[v];
		x->entries[v] = f->have & RTL_HAVE_CALLS ? f->calls : x->time_calls[v];
	}
}

/* Source places of the instructions of blocks that give self costs. */
static int place_blocks(struct export *x)
{
	for (size_t b = 0; b < x->nblocks; b++) {
		struct cg_block *k = &x->blocks[b];
		int r;

		if (!x->use_blocks[k->fn] || !k->count)
			continue;
		r = cgp_block(&x->places, x->rows.fn[k->fn].module, k->addr, k->ninstrs, &k->first);
		if (r < 0)
			return r;
		k->placed = !r;
	}
	x->lines = x->places.known;
	return 0;
}

static int load(struct export *x, rtl_profile *p, const rtl_profile_totals *t)
{
	size_t n;
	int err, nev = 0;

	x->ev_ir = x->ev_calls = x->ev_time = -1;
	if ((err = rpt_rows_load(p, 1, 1, &x->rows)) || (err = rpt_site_values_load(p, RPT_REP_METRIC, &x->reps)))
		return err;
	n = x->rows.n + 1;
	x->time_self = calloc(n, sizeof(*x->time_self));
	x->time_calls = calloc(n, sizeof(*x->time_calls));
	if (!x->time_self || !x->time_calls)
		return -ENOMEM;
	x->by_id = calloc(n, sizeof(*x->by_id));
	x->self = calloc(n, sizeof(*x->self));
	x->entries = calloc(n, sizeof(*x->entries));
	x->first_block = calloc(n, sizeof(size_t));
	x->nblocks_of = calloc(n, sizeof(size_t));
	x->use_blocks = calloc(n, 1);
	x->named = calloc(n, 1);
	x->ob = calloc(n, sizeof(*x->ob));
	x->ob_named = calloc(n, 1);
	if (!x->by_id || !x->self || !x->entries || !x->first_block || !x->nblocks_of ||
	    !x->use_blocks || !x->named || !x->ob || !x->ob_named)
		return -ENOMEM;
	for (size_t v = 0; v < x->rows.n; v++) {
		x->by_id[v].id = x->rows.fn[v].id;
		x->by_id[v].idx = v;
		/* Rows come by module, so a new module id starts a new ordinal
		 * (ids themselves are never used as indices). */
		x->ob[v] = v && x->rows.fn[v].module_id != x->rows.fn[v - 1].module_id ?
			   x->ob[v - 1] + 1 : v ? x->ob[v - 1] : 0;
	}
	qsort(x->by_id, x->rows.n, sizeof(*x->by_id), cmp_id);
	if ((err = rtl_profile_foreach_time(p, add_time, x)))
		return err;
	int timed = x->ev_time == 0;
	if ((t->have & RTL_HAVE_INSTRS) || t->blocks || (!(t->have & RTL_HAVE_CALLS) && !timed))
		x->ev_ir = nev++;
	if ((t->have & RTL_HAVE_CALLS) || timed)
		x->ev_calls = nev++;
	x->ev_time = timed ? nev++ : -1;
	x->g.nevents = nev;
	if (timed && (err = rtl_profile_foreach_context(p, add_context, x)))
		return err;
	if ((err = rtl_profile_foreach_block(p, -1, add_block, x)) ||
	    (err = rtl_profile_foreach_call(p, add_arc, x)) ||
	    (err = rtl_profile_foreach_branch(p, add_branch, x)))
		return err;
	if (x->nbranches)
		qsort(x->branches, x->nbranches, sizeof(*x->branches), cmp_branch);
	if (x->nblocks)     /* qsort(NULL, 0) is undefined */
		qsort(x->blocks, x->nblocks, sizeof(*x->blocks), cmp_block);
	self_costs(x);
	if ((err = place_blocks(x)))
		return err;
	x->g.n = x->rows.n;
	x->g.self = (const uint64_t (*)[CG_MAX_EVENTS])x->self;
	x->g.entries = x->entries;
	if ((err = cg_estimate(&x->g)))
		return err;
	/* Output order: by caller, then call site. */
	if (x->g.narcs)
		qsort(x->g.arcs, x->g.narcs, sizeof(*x->g.arcs), cmp_arc);
	return x->ev_time >= 0 && x->nctx ? exact_times(x) : 0;
}

static void free_export(struct export *x)
{
	rpt_rows_free(&x->rows);
	rpt_site_values_free(&x->reps);
	free(x->by_id);
	free(x->time_self);
	free(x->time_calls);
	free(x->pairs);
	free(x->ctx);
	free(x->self);
	free(x->entries);
	free(x->blocks);
	free(x->first_block);
	free(x->nblocks_of);
	free(x->use_blocks);
	free(x->named);
	free(x->g.arcs);
	free(x->branches);
	free(x->ob);
	free(x->ob_named);
	cgp_free(&x->places);
}

static void write_costs(FILE *out, const struct export *x, const struct cg_place *at,
			const uint64_t *c)
{
	fprintf(out, "0x%" PRIx64, at->addr);
	if (x->lines)
		fprintf(out, " %" PRIu32, at->line);
	for (int e = 0; e < x->g.nevents; e++)
		fprintf(out, " %" PRIu64, c[e]);
	fputc('\n', out);
}

static int all_zero(const struct export *x, const uint64_t *c)
{
	for (int e = 0; e < x->g.nevents; e++)
		if (c[e])
			return 0;
	return 1;
}

/* TEXT on one line: a line break inside it would end the line early, so
 * it becomes a blank. */
static void write_one_line(FILE *out, const char *text)
{
	for (const char *c = text ? text : "???"; *c; c++)
		fputc(*c == '\n' || *c == '\r' ? ' ' : *c, out);
	fputc('\n', out);
}

/* "(id) name" the first time an id is used, "(id)" afterwards. */
static void write_name(FILE *out, const char *key, uint64_t id, unsigned char *named,
		       const char *name)
{
	fprintf(out, "%s=(%" PRIu64 ")", key, id);
	if (*named) {
		fputc('\n', out);
		return;
	}
	*named = 1;
	fputc(' ', out);
	write_one_line(out, name);
}

/* The place of ADDR in function V's module; with no lines, ADDR alone. */
static struct cg_place place_of(struct export *x, size_t v, uint64_t addr)
{
	struct cg_place at = { addr, 0, 0 };

	if (x->lines && cgp_addr(&x->places, x->rows.fn[v].module, addr, &at) && !x->err)
		x->err = -ENOMEM;
	return at;
}

static void write_file(FILE *out, struct export *x, const char *key, uint32_t file)
{
	write_name(out, key, file + 1, &x->places.named[file], x->places.files[file]);
}

/* fi= (or fe=, back to the function's own file) before costs in FILE. */
static void switch_file(FILE *out, struct export *x, uint32_t file)
{
	if (!x->lines || file == x->file)
		return;
	write_file(out, x, file == x->fl ? "fe" : "fi", file);
	x->file = file;
}

static void write_fn_name(FILE *out, struct export *x, const char *key, size_t v)
{
	char buf[32];

	write_name(out, key, v + 1, &x->named[v], rpt_name(&x->rows.fn[v], buf));
}

static void write_self(FILE *out, struct export *x, size_t v)
{
	const rtl_profile_function *f = &x->rows.fn[v];
	uint64_t c[CG_MAX_EVENTS] = { 0 };
	/* Calls and Time go on the entry's line */
	int entry_done = x->ev_calls < 0 && x->ev_time < 0;

	for (size_t k = 0; x->use_blocks[v] && k < x->nblocks_of[v]; k++) {
		const struct cg_block *b = &x->blocks[x->first_block[v] + k];
		struct cg_place whole = { b->addr, 0, 0 };
		/* placed: one cost line per instruction, else one for the block */
		size_t n = b->placed ? b->ninstrs : 1;
		uint64_t reps = b->reps;

		for (size_t i = 0; i < n; i++) {
			const struct cg_place *at = b->placed ? &x->places.v[b->first + i] : &whole;
			bool rep = false;

			/* a rep string instruction: each iteration an Ir (the
			 * block's, on its first one) */
			if (b->placed && reps)
				cgp_insn_len_rep(rpt_sources_binary(&x->places.src, f->module), at->addr, &rep);
			memset(c, 0, sizeof(c));
			c[x->ev_ir] = b->placed ? b->count + (rep ? reps : 0) : b->ir;
			reps = rep ? 0 : reps;
			if (!entry_done && at->addr == f->addr) {
				if (x->ev_calls >= 0)
					c[x->ev_calls] = x->self[v][x->ev_calls];
				if (x->ev_time >= 0)
					c[x->ev_time] = x->self[v][x->ev_time];
				entry_done = 1;
			}
			if (all_zero(x, c))
				continue;
			switch_file(out, x, at->file);
			write_costs(out, x, at, c);
		}
	}
	memcpy(c, x->self[v], sizeof(c));
	if (x->use_blocks[v])
		c[x->ev_ir] = 0;
	if (entry_done && x->ev_calls >= 0)
		c[x->ev_calls] = 0;
	if (entry_done && x->ev_time >= 0)
		c[x->ev_time] = 0;
	if (!all_zero(x, c)) {
		struct cg_place at = place_of(x, v, f->addr);

		switch_file(out, x, at.file);
		write_costs(out, x, &at, c);
	}
}

static void write_arc(FILE *out, struct export *x, const struct cg_arc *a)
{
	const rtl_profile_function *caller = &x->rows.fn[a->from], *callee = &x->rows.fn[a->to];
	struct cg_place site = place_of(x, a->from, a->site), entry = place_of(x, a->to, callee->addr);

	switch_file(out, x, site.file);
	if (callee->module_id != caller->module_id)
		write_name(out, "cob", x->ob[a->to] + 1, &x->ob_named[x->ob[a->to]],
			   callee->module);
	if (x->lines)
		write_file(out, x, "cfi", entry.file);
	write_fn_name(out, x, "cfn", a->to);
	fprintf(out, "calls=%" PRIu64 " 0x%" PRIx64, a->count, callee->addr);
	if (x->lines)
		fprintf(out, " %" PRIu32, entry.line);
	fputc('\n', out);
	write_costs(out, x, &site, a->cost);
}

/* Whether a function of module MODULE starts at ADDR. */
static int starts_function(const struct export *x, int64_t module, uint64_t addr)
{
	size_t i = rpt_rows_lower_bound(&x->rows, module, addr);

	return i < x->rows.n && x->rows.fn[i].module_id == module && x->rows.fn[i].addr == addr;
}

/* The function of module MODULE that holds ADDR, or (size_t)-1. */
static size_t function_at(const struct export *x, int64_t module, uint64_t addr)
{
	size_t i = rpt_rows_lower_bound(&x->rows, module, addr + 1);
	const rtl_profile_function *f = i ? &x->rows.fn[i - 1] : NULL;

	return f && f->module_id == module && addr >= f->addr && addr < f->addr + f->size ? i - 1
											  : (size_t)-1;
}

/* One jump= or jcnd= line and the position of its instruction. */
static void write_jump(FILE *out, struct export *x, size_t v, uint64_t site, uint64_t target,
		       uint64_t taken, const uint64_t *executed)
{
	struct cg_place from = place_of(x, v, site), to = place_of(x, v, target);

	const rtl_profile_function *f = &x->rows.fn[v];
	size_t into = target >= f->addr && target < f->addr + f->size ? v : function_at(x, f->module_id, target);

	switch_file(out, x, from.file);
	if (x->lines && to.file != from.file)
		write_file(out, x, "jfi", to.file);
	if (into != v && into != (size_t)-1)
		write_fn_name(out, x, "jfn", into);
	if (executed)
		fprintf(out, "jcnd=%" PRIu64 "/%" PRIu64 " 0x%" PRIx64, taken, *executed, target);
	else
		fprintf(out, "jump=%" PRIu64 " 0x%" PRIx64, taken, target);
	if (x->lines)
		fprintf(out, " %" PRIu32, to.line);
	fprintf(out, "\n0x%" PRIx64, site);
	if (x->lines)
		fprintf(out, " %" PRIu32, from.line);
	fputc('\n', out);
}

/* Function V's jumps, by site; *B walks the branches. */
static void write_jumps(FILE *out, struct export *x, size_t v, size_t *b)
{
	const rtl_profile_function *f = &x->rows.fn[v];
	size_t k = 0, nk = x->nblocks_of[v];
	uint64_t target, site;

	while (*b < x->nbranches && x->branches[*b].fn < v)
		++*b;
	for (;;) {
		const struct cg_block *blk = k < nk ? &x->blocks[x->first_block[v] + k] : NULL;
		const struct cg_branch *br = *b < x->nbranches && x->branches[*b].fn == v ?
					     &x->branches[*b] : NULL;
		if (!blk && !br)
			return;
		/* a block ends before the next one starts: its jump comes first */
		if (blk && (!br || blk->addr <= br->site)) {
			k++;
			/* a jump to another function's start is a tail call,
			 * which callgrind counts as a call; one into another's
			 * middle (a part split off, .cold) is a jump. A jump out
			 * to code of no function in the profile (a PLT stub:
			 * `jmp free@plt`) is a tail call too */
			uint64_t last = blk->placed ? x->places.v[blk->first + blk->ninstrs - 1].addr : 0;
			if (blk->count && !cgp_block_jump(&x->places, f->module, blk->addr, blk->ninstrs,
							  last, &site, &target) &&
			    ((target >= f->addr && target < f->addr + f->size) ||
			     (function_at(x, f->module_id, target) != (size_t)-1 &&
			      !starts_function(x, f->module_id, target))))
				write_jump(out, x, v, site, target, blk->count, NULL);
			continue;
		}
		++*b;
		uint64_t executed = br->taken + br->not_taken;
		if (!cgp_branch_target(&x->places, f->module, br->site, &target) &&
		    target >= f->addr && target < f->addr + f->size)
			write_jump(out, x, v, br->site, target, br->taken, &executed);
	}
}

static void write_header(FILE *out, rtl_profile *p, const struct export *x)
{
	const char *v;

	fputs("# callgrind format\nversion: 1\ncreator: reticle 0.1.0\n", out);
	if ((v = rtl_profile_get_meta(p, "pid")) && *v) {
		fputs("pid: ", out);
		write_one_line(out, v);
	}
	if ((v = rtl_profile_get_meta(p, "command")) && *v) {
		fputs("cmd: ", out);
		write_one_line(out, v);
	}
	if ((v = rtl_profile_get_meta(p, "collectors")) && *v) {
		fputs("desc: Collectors: ", out);
		write_one_line(out, v);
	}
	fputs("desc: Note: self costs and call counts are exact; the inclusive cost of a call"
	      " is a gprof-style estimate", out);
	fputs(x->ev_time >= 0 && x->nctx ? ", but for Time (exact, from the calling-context tree)\n" : "\n", out);
	if (x->ev_time >= 0)
		fputs("event: Time : Wall-clock time (ns)\n", out);
	fputs(x->lines ? "positions: instr line\nevents:" : "positions: instr\nevents:", out);
	if (x->ev_ir >= 0)
		fputs(" Ir", out);
	if (x->ev_calls >= 0)
		fputs(" Calls", out);
	if (x->ev_time >= 0)
		fputs(" Time", out);
	fputs("\nsummary:", out);
	for (int e = 0; e < x->g.nevents; e++) {
		uint64_t sum = 0;

		for (size_t v = 0; v < x->rows.n; v++)
			sum += x->self[v][e];
		fprintf(out, " %" PRIu64, sum);
	}
	fputc('\n', out);
}

static void write_body(FILE *out, struct export *x)
{
	uint64_t total[CG_MAX_EVENTS] = { 0 };
	size_t ob = (size_t)-1, a = 0, b = 0;

	if (!x->lines)
		fputs("fl=(1) ???\n", out);
	x->fl = x->file = (uint32_t)-1;
	for (size_t v = 0; v < x->rows.n; v++) {
		const rtl_profile_function *f = &x->rows.fn[v];
		size_t first_arc = a;

		for (int e = 0; e < x->g.nevents; e++)
			total[e] += x->self[v][e];
		while (a < x->g.narcs && x->g.arcs[a].from == v)
			a++;
		if (all_zero(x, x->self[v]) && a == first_arc)
			continue;
		if (x->ob[v] != ob) {
			ob = x->ob[v];
			fputc('\n', out);
			write_name(out, "ob", ob + 1, &x->ob_named[ob], f->module);
		}
		if (x->lines) {
			/* the function's own file: that of its entry */
			uint32_t fl = place_of(x, v, f->addr).file;

			if (fl != x->file)
				write_file(out, x, "fl", fl);
			x->fl = x->file = fl;
		}
		write_fn_name(out, x, "fn", v);
		write_self(out, x, v);
		write_jumps(out, x, v, &b);
		for (size_t k = first_arc; k < a; k++)
			write_arc(out, x, &x->g.arcs[k]);
	}
	fputs("\ntotals:", out);
	for (int e = 0; e < x->g.nevents; e++)
		fprintf(out, " %" PRIu64, total[e]);
	fputc('\n', out);
}

int rtl_report_callgrind(rtl_profile *p, const rtl_report_options *o, FILE *out)
{
	struct export x = { 0 };
	rtl_profile_totals t;
	int err;

	if (!o)
		o = &rpt_default_options;

	x.rows.demangle = !o->no_demangle;
	if (!(err = rtl_profile_get_totals(p, &t)) && !(err = load(&x, p, &t))) {
		write_header(out, p, &x);
		write_body(out, &x);
		err = rpt_out_status(out);
	}
	free_export(&x);
	return err;
}
