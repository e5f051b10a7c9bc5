/* Saved copies: a relocation result as a position-free blob, and back.
 *
 * Blob: a head of counts, the copy's bytes, then arrays of small records
 * (each array padded to 8 bytes): fields to rewrite, branches out, counter
 * switch sites, blocks, rep counters, call sites, return points, the
 * instruction map, branch targets outside the function, counters at other
 * points (branch edges), the snippets' %rsp moves (x86_sp_row). Addresses are
 * offsets in the function or in the copy, link-time addresses in the
 * module (below 4 GiB), or counter indices. A python3.11 copy takes about
 * 1.7 times its code's size. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <reticle/error.h>
#include "isa/x86_64/persist.h"
#include "util/array.h"

enum space {
	SP_COPY,      /* an offset in the copy */
	SP_COUNTER,   /* the function's counter of that index */
	SP_MODULE,    /* a link-time address in the module */
	SP_REDIRECT,  /* where a link-time address of the module leads now (env->redirect) */
};

struct rec_head {
	uint32_t code_len, ncounters, nfix, next, nsites, nblocks, nreps, ncalls, nrets, nmap;
	uint32_t ntargets, ntables;
	int32_t entry_counter;    /* counter index, -1 for none */
	uint32_t npoints;
	int32_t timer_desc;       /* counter index, -1 for none */
	uint32_t nrows;           /* %rsp moves */
};

struct rec_fix {
	uint32_t off;             /* of the field in the copy */
	uint8_t kind, space;      /* enum x86_fix_kind, enum space */
	uint16_t zero;
	uint32_t base;            /* X86_FIX_REL32: copy offset the displacement counts from */
	uint32_t value;           /* in SPACE */
};

struct rec_ext { uint32_t off, orig; };   /* rel32 at OFF, to link-time ORIG */
enum { SITE_KEEP_FLAGS = 1u << 31 };      /* a rec_site: offset | SITE_KEEP_FLAGS */
struct rec_block { uint32_t first; int32_t counter; uint32_t via[2]; };   /* FIRST: instruction index */
struct rec_rep { uint32_t block; int32_t counter; };
struct rec_call { uint32_t site, block, target; };       /* SITE: offset; TARGET: link-time */
struct rec_ret { uint32_t from, to; };   /* offset in the function, offset in the copy */
struct rec_point { uint32_t at; uint8_t kind, pad[3]; int32_t counter; };   /* AT: offset in the function */
/* the map, an entry per instruction: its length, and how far after the
 * previous one's (the copy's start for the first) its copy starts */
enum { MAP_DELTA_BITS = 12, MAP_DELTA_MAX = (1 << MAP_DELTA_BITS) - 1 };

struct rec {
	const struct rec_head *h;
	const uint8_t *code;
	const struct rec_fix *fix;
	const struct rec_ext *ext;
	const uint32_t *sites;
	const struct rec_block *blocks;
	const struct rec_rep *reps;
	const struct rec_call *calls;
	const struct rec_ret *rets;
	const uint16_t *map;
	const uint32_t *targets;   /* link-time */
	const struct rec_point *points;
	const struct x86_sp_row *rows;
};

enum { MAX_COUNT = 1 << 24 };

static uint64_t arr(uint64_t n, size_t size)
{
	return (n * size + 7) & ~(uint64_t)7;
}

static uint64_t rec_size(const struct rec_head *h)
{
	return sizeof(*h) + arr(h->code_len, 1) + arr(h->nfix, sizeof(struct rec_fix)) +
	       arr(h->next, sizeof(struct rec_ext)) + arr(h->nsites, 4) +
	       arr(h->nblocks, sizeof(struct rec_block)) + arr(h->nreps, sizeof(struct rec_rep)) +
	       arr(h->ncalls, sizeof(struct rec_call)) + arr(h->nrets, sizeof(struct rec_ret)) +
	       arr(h->nmap, 2) + arr(h->ntargets, 4) + arr(h->npoints, sizeof(struct rec_point)) +
	       arr(h->nrows, sizeof(struct x86_sp_row));
}

/* Points R's arrays into BLOB (a head already there). */
static void layout(const uint8_t *blob, struct rec *r)
{
	const struct rec_head *h = (const void *)blob;
	const uint8_t *p = blob + sizeof(*h);
#define NEXT(field, n, size) (r->field = (const void *)p, p += arr(n, size))
	r->h = h;
	NEXT(code, h->code_len, 1);
	NEXT(fix, h->nfix, sizeof(*r->fix));
	NEXT(ext, h->next, sizeof(*r->ext));
	NEXT(sites, h->nsites, 4);
	NEXT(blocks, h->nblocks, sizeof(*r->blocks));
	NEXT(reps, h->nreps, sizeof(*r->reps));
	NEXT(calls, h->ncalls, sizeof(*r->calls));
	NEXT(rets, h->nrets, sizeof(*r->rets));
	NEXT(map, h->nmap, 2);
	NEXT(targets, h->ntargets, 4);
	NEXT(points, h->npoints, sizeof(*r->points));
	NEXT(rows, h->nrows, sizeof(*r->rows));
#undef NEXT
}

static unsigned fix_width(uint8_t kind)
{
	return kind == X86_FIX_ABS64 ? 8 : 4;
}

static bool counter_ok(int32_t c, uint32_t n)
{
	return c == -1 || (c >= 0 && (uint32_t)c < n);
}

/* Whether BLOB's arrays are all inside it. */
static bool parse_sizes(const void *blob, size_t len, struct rec *r)
{
	const struct rec_head *h = blob;
	if (len < sizeof(*h) || (uintptr_t)blob % 8 || h->code_len > MAX_COUNT ||
	    h->ncounters > MAX_COUNT || h->nfix > MAX_COUNT || h->next > MAX_COUNT ||
	    h->nsites > MAX_COUNT || h->nblocks > MAX_COUNT || h->nreps > MAX_COUNT ||
	    h->ncalls > MAX_COUNT || h->nrets > MAX_COUNT || h->nmap > MAX_COUNT ||
	    h->ntargets > MAX_COUNT || h->npoints > MAX_COUNT || h->nrows > MAX_COUNT || rec_size(h) != len)
		return false;
	layout(blob, r);
	return true;
}

/* Whether BLOB is a well-formed record: every offset inside the copy, every
 * index inside its array (the file's hashes catch damage, not this; the
 * map is checked as it is read). */
static bool parse(const void *blob, size_t len, struct rec *r)
{
	if (!parse_sizes(blob, len, r))
		return false;
	const struct rec_head *h = r->h;
	uint32_t cl = h->code_len;
	/* an entry counter, one a block, one a block with rep instructions and
	 * one or two a point (an indirect call's target count has two words):
	 * a damaged count must not take the window's counters */
	if (!counter_ok(h->entry_counter, h->ncounters) || !counter_ok(h->timer_desc, h->ncounters) ||
	    !h->nmap || h->ncounters > 2 + (uint64_t)h->nblocks + h->nreps + 2 * (uint64_t)h->npoints)
		return false;
	for (uint32_t i = 0; i < h->npoints; i++)
		if (r->points[i].counter < 0 || !counter_ok(r->points[i].counter, h->ncounters) ||
		    r->points[i].kind >= RTL_POINT_KIND_COUNT ||
		    (r->points[i].kind == RTL_POINT_INDIRECT_TARGET &&
		     !counter_ok(r->points[i].counter + 1, h->ncounters)))
			return false;
	for (uint32_t i = 0; i < h->nfix; i++) {
		const struct rec_fix *f = &r->fix[i];
		if (f->kind > X86_FIX_HI32 || f->space > SP_REDIRECT || f->off > cl ||
		    cl - f->off < fix_width(f->kind) || (f->kind == X86_FIX_REL32 && f->base > cl) ||
		    (f->space == SP_COUNTER && f->value >= h->ncounters) ||
		    (f->space == SP_COPY && f->value > cl))
			return false;
	}
	for (uint32_t i = 0; i < h->next; i++)
		if (r->ext[i].off > cl || cl - r->ext[i].off < 4)
			return false;
	for (uint32_t i = 0; i < h->nsites; i++)
		if ((r->sites[i] & ~SITE_KEEP_FLAGS) + 2 > cl)
			return false;
	for (uint32_t i = 0; i < h->nblocks; i++)
		if (r->blocks[i].first >= h->nmap || (i ? r->blocks[i].first <= r->blocks[i - 1].first
							: r->blocks[i].first != 0) ||
		    !counter_ok(r->blocks[i].counter, h->ncounters) || r->blocks[i].via[0] > h->nblocks ||
		    r->blocks[i].via[1] > h->nblocks)
			return false;
	for (uint32_t i = 0; i < h->nreps; i++)
		if (r->reps[i].block >= h->nblocks || r->reps[i].counter < 0 ||
		    !counter_ok(r->reps[i].counter, h->ncounters))
			return false;
	for (uint32_t i = 0; i < h->ncalls; i++)
		if (r->calls[i].block >= h->nblocks)
			return false;
	for (uint32_t i = 0; i < h->nrets; i++)
		if (r->rets[i].to >= cl)
			return false;
	for (uint32_t i = 0; i < h->nrows; i++)
		if (r->rows[i].off > cl || (i && r->rows[i].off < r->rows[i - 1].off))
			return false;
	return true;
}

/* ---- saving ---- */

/* What run-time address A is, seen from a copy at [DEST, END]. */
static int place(const struct x86_persist_info *in, uint64_t dest, uint64_t end, uint64_t a,
		 uint8_t *space, uint32_t *value)
{
	uint64_t v;
	if (a >= dest && a <= end) {
		*space = SP_COPY;
		v = a - dest;
	} else if (a >= in->ctr_lo && a < in->ctr_hi && (a - in->ctr_lo) % 8 == 0) {
		*space = SP_COUNTER;
		v = (a - in->ctr_lo) / 8;
	} else if (a >= in->mod_lo && a <= in->mod_hi) {
		*space = SP_MODULE;
		v = a - in->bias;
	} else {
		return -RTL_ERR_UNSUPPORTED;
	}
	*value = (uint32_t)v;
	return v > UINT32_MAX ? -RTL_ERR_UNSUPPORTED : 0;
}

static int counter_index(const struct x86_persist_info *in, uint64_t c, int32_t *out)
{
	if (!c) {
		*out = -1;
		return 0;
	}
	if (c < in->ctr_lo || c >= in->ctr_hi || (c - in->ctr_lo) % 8)
		return -RTL_ERR_UNSUPPORTED;
	*out = (int32_t)((c - in->ctr_lo) / 8);
	return 0;
}

/* Link-time address of run-time A in the module, when below 4 GiB. */
static bool link_addr(const struct x86_persist_info *in, uint64_t a, uint32_t *out)
{
	*out = (uint32_t)(a - in->bias);
	return a >= in->mod_lo && a <= in->mod_hi && a - in->bias <= UINT32_MAX;
}

static bool fn_offset(const struct x86_persist_info *in, uint64_t a, uint32_t *out)
{
	*out = (uint32_t)(a - in->fn);
	return a >= in->fn && a - in->fn <= UINT32_MAX;
}

/* The fields to rewrite: the writer's log, but for displacements within
 * the copy (the same wherever it is). */
static int collect_fixes(const struct x86_reloc *r, const struct x86_persist_info *in,
			 struct rec_fix *v, uint32_t *nout)
{
	const struct x86_writer *w = &r->w;
	uint64_t dest = w->base, end = w->base + w->len;
	uint32_t n = 0;
	for (size_t i = 0; i < w->nfix; i++) {
		const struct x86_fix *f = &w->fix[i];
		struct rec_fix rf = { .off = f->off, .kind = f->kind };
		if (f->kind == X86_FIX_REL32) {
			if (f->base < dest || f->base > end)
				return -RTL_ERR_UNSUPPORTED;
			rf.base = (uint32_t)(f->base - dest);
			if (f->target >= dest && f->target <= end && !f->orig)
				continue;
		}
		if (f->orig) {
			rf.space = SP_REDIRECT;
			if (!link_addr(in, f->orig, &rf.value))
				return -RTL_ERR_UNSUPPORTED;
		} else if (place(in, dest, end, f->target, &rf.space, &rf.value)) {
			return -RTL_ERR_UNSUPPORTED;
		}
		v[n++] = rf;
	}
	*nout = n;
	return 0;
}

/* The map as lengths and deltas: the instructions are the function's bytes
 * in a row, and their copies in the order of the originals. */
static int pack_map(const struct x86_reloc *r, const struct x86_persist_info *in, uint16_t *map)
{
	uint64_t to = r->w.base;
	for (size_t i = 0; i < r->nmap; i++) {
		uint64_t from = i ? r->map_from[i - 1] : in->fn;
		uint64_t len = i + 1 < r->nmap ? r->map_from[i + 1] - r->map_from[i] : 1;
		if (r->map_from[i] != from + (i ? map[i - 1] >> MAP_DELTA_BITS : 0) ||
		    len < 1 || len > 15 || r->map_to[i] < to || r->map_to[i] - to > MAP_DELTA_MAX)
			return -RTL_ERR_UNSUPPORTED;
		map[i] = (uint16_t)(len << MAP_DELTA_BITS | (r->map_to[i] - to));
		to = r->map_to[i];
	}
	return 0;
}

/* Blocks as the index of their first instruction: each runs to the next. */
static int pack_blocks(const struct x86_reloc *r, const struct x86_persist_info *in, struct rec *rc,
		       uint32_t *nreps)
{
	size_t insn = 0;
	*nreps = 0;
	for (size_t b = 0; b < r->nblocks; b++) {
		const struct x86_block *blk = &r->blocks[b];
		struct rec_block *rb = (struct rec_block *)&rc->blocks[b];
		while (insn < r->nmap && r->map_from[insn] < blk->addr)
			insn++;
		size_t end = b + 1 < r->nblocks ? 0 : r->nmap;
		if (insn >= r->nmap || r->map_from[insn] != blk->addr ||
		    counter_index(in, blk->counter, &rb->counter))
			return -RTL_ERR_UNSUPPORTED;
		rb->first = (uint32_t)insn;
		memcpy(rb->via, blk->via, sizeof(rb->via));
		if (end && end - insn != blk->ninstrs)
			return -RTL_ERR_UNSUPPORTED;
		if (b && rb->first - rc->blocks[b - 1].first != r->blocks[b - 1].ninstrs)
			return -RTL_ERR_UNSUPPORTED;
		if (blk->rep_counter) {
			struct rec_rep *rr = (struct rec_rep *)&rc->reps[(*nreps)++];
			rr->block = (uint32_t)b;
			if (counter_index(in, blk->rep_counter, &rr->counter))
				return -RTL_ERR_UNSUPPORTED;
		}
	}
	return 0;
}

int x86_persist(const struct x86_reloc *r, const struct x86_persist_info *in, void **blob,
		size_t *len)
{
	const struct x86_writer *w = &r->w;
	uint64_t dest = w->base;
	if (r->traces_memory || r->own_snippets)
		return -RTL_ERR_UNSUPPORTED;   /* its records name this run's access numbers, its guards
						* this run's addresses */
	struct rec_head h = {
		.code_len = (uint32_t)w->len, .ncounters = (uint32_t)((in->ctr_hi - in->ctr_lo) / 8),
		.nfix = (uint32_t)w->nfix, .next = (uint32_t)r->next, .nsites = (uint32_t)r->nsites,
		.nblocks = (uint32_t)r->nblocks, .ncalls = (uint32_t)r->ncalls, .nrets = (uint32_t)r->nrets,
		.nmap = (uint32_t)r->nmap, .ntargets = (uint32_t)in->ntargets,
		.ntables = (uint32_t)r->njump_tables, .npoints = (uint32_t)r->npoints,
		.nrows = (uint32_t)w->nrows,
	};
	for (size_t b = 0; b < r->nblocks; b++)
		h.nreps += r->blocks[b].rep_counter != 0;
	if (dest % 16 || w->failed || w->len > MAX_COUNT || w->nfix > MAX_COUNT || !r->nmap ||
	    r->nmap > MAX_COUNT || r->nblocks > MAX_COUNT || r->next > MAX_COUNT || w->nrows > MAX_COUNT)
		return -RTL_ERR_UNSUPPORTED;
	/* sized for every logged field: the unneeded ones are left out below */
	uint64_t size = rec_size(&h);
	uint8_t *b = calloc(1, size);
	if (!b)
		return -ENOMEM;
	struct rec rc;
	memcpy(b, &h, sizeof(h));
	layout(b, &rc);
	memcpy((uint8_t *)rc.code, w->buf, w->len);
	if (w->nrows)
		memcpy((void *)rc.rows, w->rows, w->nrows * sizeof(*w->rows));
	uint32_t nfix, nreps;
	int err = collect_fixes(r, in, (struct rec_fix *)rc.fix, &nfix);
	if (!err)
		err = counter_index(in, r->entry_counter, &h.entry_counter);
	if (!err)
		err = counter_index(in, r->timer_desc, &h.timer_desc);
	for (size_t i = 0; i < r->next && !err; i++) {
		struct rec_ext *e = (struct rec_ext *)&rc.ext[i];
		e->off = r->ext[i].off;
		if (!link_addr(in, r->ext[i].orig, &e->orig))
			err = -RTL_ERR_UNSUPPORTED;
	}
	for (size_t i = 0; i < r->nsites && !err; i++) {
		((uint32_t *)rc.sites)[i] = r->sites[i].off | (r->sites[i].keep_flags ? SITE_KEEP_FLAGS : 0);
		if (r->sites[i].off & SITE_KEEP_FLAGS)
			err = -RTL_ERR_UNSUPPORTED;
	}
	if (!err)
		err = pack_blocks(r, in, &rc, &nreps);
	for (size_t i = 0; i < r->ncalls && !err; i++) {
		struct rec_call *c = (struct rec_call *)&rc.calls[i];
		c->block = r->calls[i].block;
		if (!fn_offset(in, r->calls[i].site, &c->site) || !link_addr(in, r->calls[i].target, &c->target))
			err = -RTL_ERR_UNSUPPORTED;
	}
	for (size_t i = 0; i < r->nrets && !err; i++) {
		struct rec_ret *p = (struct rec_ret *)&rc.rets[i];
		p->to = (uint32_t)(r->rets[i].copy - dest);
		if (!fn_offset(in, r->rets[i].orig, &p->from) || r->rets[i].copy < dest)
			err = -RTL_ERR_UNSUPPORTED;
	}
	if (!err)
		err = pack_map(r, in, (uint16_t *)rc.map);
	for (size_t i = 0; i < in->ntargets && !err; i++)
		if (!link_addr(in, in->targets[i], (uint32_t *)&rc.targets[i]))
			err = -RTL_ERR_UNSUPPORTED;
	for (size_t i = 0; i < r->npoints && !err; i++) {
		struct rec_point *pt = (struct rec_point *)&rc.points[i];
		pt->kind = r->points[i].kind;
		if (!fn_offset(in, r->points[i].addr, &pt->at) ||
		    counter_index(in, r->points[i].counter, &pt->counter) || pt->counter < 0)
			err = -RTL_ERR_UNSUPPORTED;
	}
	if (err) {
		free(b);
		return err;
	}
	/* the fixes left out: the arrays after them move down */
	if (nfix < h.nfix) {
		const uint8_t *after = (const uint8_t *)rc.ext;
		uint64_t gap = arr(h.nfix, sizeof(struct rec_fix)) - arr(nfix, sizeof(struct rec_fix));
		memmove((uint8_t *)after - gap, after, size - (uint64_t)(after - b));
		size -= gap;
		h.nfix = nfix;
	}
	h.nreps = nreps;
	memcpy(b, &h, sizeof(h));
	*blob = b;
	*len = size;
	return 0;
}

/* ---- loading ---- */

int x86_persisted_targets(const void *blob, size_t len, uint64_t bias, uint64_t *out, size_t max,
			  size_t *n)
{
	struct rec rc;
	if (!parse_sizes(blob, len, &rc))
		return -RTL_ERR_BAD_INPUT;
	size_t k = rc.h->ntargets < max ? rc.h->ntargets : max;
	for (size_t i = 0; i < k; i++)
		out[i] = rc.targets[i] + bias;
	*n = k;
	return 0;
}

static void apply_fix(struct x86_writer *w, const struct rec_fix *f, const struct x86_reloc_env *env,
		      const uint64_t *ctr, uint64_t bias)
{
	uint64_t dest = w->base, v;
	switch (f->space) {
	case SP_COPY: v = dest + f->value; break;
	case SP_COUNTER: v = ctr[f->value]; break;
	case SP_MODULE: v = f->value + bias; break;
	default: v = env->redirect(env->ctx, f->value + bias); break;
	}
	switch (f->kind) {
	case X86_FIX_REL32:
		x86_patch_u32(w, f->off, (uint32_t)x86_rel32(w, dest + f->base, v));
		break;
	case X86_FIX_ABS64:
		memcpy(w->buf + f->off, &v, 8);
		break;
	case X86_FIX_ABS32:
		if ((int64_t)v != (int32_t)v)
			w->failed = true;
		x86_patch_u32(w, f->off, (uint32_t)v);
		break;
	case X86_FIX_LO32:
		x86_patch_u32(w, f->off, (uint32_t)v);
		break;
	default:
		x86_patch_u32(w, f->off, (uint32_t)(v >> 32));
		break;
	}
}

/* The map of RC for a function at FN of SIZE bytes, copied at DEST. */
static bool unpack_map(const struct rec *rc, uint64_t fn, size_t size, uint64_t dest, uint64_t *from,
		       uint64_t *to)
{
	uint64_t f = fn, t = dest;
	for (uint32_t i = 0; i < rc->h->nmap; i++) {
		t += rc->map[i] & MAP_DELTA_MAX;
		if (f >= fn + size || t > dest + rc->h->code_len)
			return false;
		from[i] = f;
		to[i] = t;
		f += rc->map[i] >> MAP_DELTA_BITS;
	}
	return true;
}

static void *alloc_n(size_t n, size_t size)
{
	return malloc((n ? n : 1) * size);
}

int x86_restore(const void *blob, size_t len, const struct x86_reloc_env *env, uint64_t dest,
		uint64_t bias, struct x86_reloc *out)
{
	struct rec rc;
	memset(out, 0, sizeof(*out));
	if (!parse(blob, len, &rc) || dest % 16)
		return -RTL_ERR_BAD_INPUT;
	const struct rec_head *h = rc.h;
	uint64_t fn = env->addr;
	uint64_t *ctr = alloc_n(h->ncounters, sizeof(*ctr));
	x86_writer_init(&out->w, dest);
	x86_put(&out->w, rc.code, h->code_len);
	out->sites = alloc_n(h->nsites, sizeof(*out->sites));
	out->blocks = calloc(h->nblocks ? h->nblocks : 1, sizeof(*out->blocks));
	out->calls = alloc_n(h->ncalls, sizeof(*out->calls));
	out->ext = alloc_n(h->next, sizeof(*out->ext));
	out->rets = alloc_n(h->nrets, sizeof(*out->rets));
	out->map_from = alloc_n(h->nmap, sizeof(*out->map_from));
	out->map_to = alloc_n(h->nmap, sizeof(*out->map_to));
	out->points = alloc_n(h->npoints, sizeof(*out->points));
	out->w.rows = alloc_n(h->nrows, sizeof(*out->w.rows));
	int err = -ENOMEM;
	if (!ctr || out->w.failed || !out->sites || !out->blocks || !out->calls || !out->ext ||
	    !out->rets || !out->map_from || !out->map_to || !out->points || !out->w.rows)
		goto fail;
	if (h->nrows)
		memcpy(out->w.rows, rc.rows, h->nrows * sizeof(*rc.rows));
	out->w.nrows = out->w.caprows = h->nrows;
	err = -RTL_ERR_BAD_INPUT;
	if (!unpack_map(&rc, fn, env->size, dest, out->map_from, out->map_to))
		goto fail;
	out->nmap = h->nmap;
	/* in x86_emit's order: its entry counter, then its blocks' */
	err = -RTL_ERR_NO_SPACE;
	for (uint32_t i = 0; i < h->ncounters; i++)
		if (!(ctr[i] = env->new_counter(env->ctx)))
			goto fail;
	for (uint32_t i = 0; i < h->nfix; i++)
		apply_fix(&out->w, &rc.fix[i], env, ctr, bias);
	for (uint32_t i = 0; i < h->next; i++) {
		uint64_t orig = rc.ext[i].orig + bias, to = env->redirect(env->ctx, orig);
		x86_patch_u32(&out->w, rc.ext[i].off, (uint32_t)x86_rel32(&out->w, dest + rc.ext[i].off + 4, to));
		out->ext[i] = (struct x86_ext_branch){ rc.ext[i].off, orig, to };
	}
	if (out->w.failed)
		goto fail;
	out->next = out->capext = h->next;
	for (uint32_t i = 0; i < h->nsites; i++)
		out->sites[i] = (struct x86_counter_site){ rc.sites[i] & ~SITE_KEEP_FLAGS,
							   (rc.sites[i] & SITE_KEEP_FLAGS) != 0 };
	out->nsites = out->capsites = h->nsites;
	out->entry_counter = h->entry_counter < 0 ? 0 : ctr[h->entry_counter];
	out->timer_desc = h->timer_desc < 0 ? 0 : ctr[h->timer_desc];
	for (uint32_t i = 0; i < h->nblocks; i++) {
		const struct rec_block *b = &rc.blocks[i];
		uint32_t end = i + 1 < h->nblocks ? rc.blocks[i + 1].first : h->nmap;
		out->blocks[i].addr = out->map_from[b->first];
		out->blocks[i].ninstrs = end - b->first;
		out->blocks[i].counter = b->counter < 0 ? 0 : ctr[b->counter];
		memcpy(out->blocks[i].via, b->via, sizeof(b->via));
	}
	for (uint32_t i = 0; i < h->nreps; i++)
		out->blocks[rc.reps[i].block].rep_counter = ctr[rc.reps[i].counter];
	out->nblocks = h->nblocks;
	for (uint32_t i = 0; i < h->ncalls; i++)
		out->calls[i] = (struct x86_call_site){ fn + rc.calls[i].site, rc.calls[i].target + bias,
							rc.calls[i].block };
	out->ncalls = out->capcalls = h->ncalls;
	for (uint32_t i = 0; i < h->nrets; i++)
		out->rets[i] = (struct x86_ret_patch){ fn + rc.rets[i].from, dest + rc.rets[i].to };
	out->nrets = out->caprets = h->nrets;
	for (uint32_t i = 0; i < h->npoints; i++)
		out->points[i] = (struct x86_point_counter){ fn + rc.points[i].at, ctr[rc.points[i].counter],
							     rc.points[i].kind, RTL_PRIM_COUNT, 0 };
	out->npoints = out->cappoints = h->npoints;
	out->njump_tables = h->ntables;
	free(ctr);
	return 0;
fail:
	free(ctr);
	x86_reloc_free(out);
	return err;
}

/* ---- checking ---- */

const char *x86_reloc_differs(const struct x86_reloc *a, const struct x86_reloc *b, char *buf,
			      size_t len)
{
#define DIFF(...) do { snprintf(buf, len, __VA_ARGS__); return buf; } while (0)
	if (a->w.base != b->w.base || a->w.len != b->w.len)
		DIFF("copy at %#llx, %zu bytes against %#llx, %zu bytes (%zu return points against %zu)",
		     (unsigned long long)a->w.base, a->w.len, (unsigned long long)b->w.base, b->w.len, a->nrets,
		     b->nrets);
	for (size_t i = 0; i < a->w.len; i++)
		if (a->w.buf[i] != b->w.buf[i])
			DIFF("byte at +%#zx: %02x against %02x", i, a->w.buf[i], b->w.buf[i]);
	if (a->entry_counter != b->entry_counter)
		DIFF("entry counter");
	if (a->timer_desc != b->timer_desc)
		DIFF("timer");
	if (a->nblocks != b->nblocks)
		DIFF("blocks");
	for (size_t i = 0; i < a->nblocks; i++)
		if (a->blocks[i].addr != b->blocks[i].addr || a->blocks[i].ninstrs != b->blocks[i].ninstrs ||
		    a->blocks[i].counter != b->blocks[i].counter || memcmp(a->blocks[i].via, b->blocks[i].via, sizeof(a->blocks[i].via)) ||
		    a->blocks[i].rep_counter != b->blocks[i].rep_counter)
			DIFF("block %zu", i);
	if (a->ncalls != b->ncalls)
		DIFF("call sites");
	for (size_t i = 0; i < a->ncalls; i++)
		if (a->calls[i].site != b->calls[i].site || a->calls[i].target != b->calls[i].target ||
		    a->calls[i].block != b->calls[i].block)
			DIFF("call site %zu", i);
	if (a->nsites != b->nsites)
		DIFF("counter sites");
	for (size_t i = 0; i < a->nsites; i++)
		if (a->sites[i].off != b->sites[i].off || a->sites[i].keep_flags != b->sites[i].keep_flags)
			DIFF("counter site %zu", i);
	if (a->next != b->next)
		DIFF("branches out");
	for (size_t i = 0; i < a->next; i++)
		if (a->ext[i].off != b->ext[i].off || a->ext[i].orig != b->ext[i].orig ||
		    a->ext[i].dest != b->ext[i].dest)
			DIFF("branch out %zu", i);
	if (a->nrets != b->nrets)
		DIFF("return points");
	for (size_t i = 0; i < a->nrets; i++)
		if (a->rets[i].orig != b->rets[i].orig || a->rets[i].copy != b->rets[i].copy)
			DIFF("return point %zu", i);
	if (a->nmap != b->nmap || memcmp(a->map_from, b->map_from, a->nmap * 8) ||
	    memcmp(a->map_to, b->map_to, a->nmap * 8))
		DIFF("instruction map");
	if (a->njump_tables != b->njump_tables)
		DIFF("jump tables");
	if (a->w.nrows != b->w.nrows || (a->w.nrows && memcmp(a->w.rows, b->w.rows, a->w.nrows * sizeof(*a->w.rows))))
		DIFF("%%rsp moves");
	if (a->npoints != b->npoints)
		DIFF("point counters");
	for (size_t i = 0; i < a->npoints; i++)
		if (a->points[i].addr != b->points[i].addr || a->points[i].kind != b->points[i].kind ||
		    a->points[i].counter != b->points[i].counter)
			DIFF("point counter %zu", i);
	return NULL;
#undef DIFF
}
