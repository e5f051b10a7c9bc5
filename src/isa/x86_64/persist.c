/* Saved copies: a relocation result as a position-free blob, and back.
 *
 * Blob: a head of counts, the copy's bytes (padded to 8), then arrays of
 * fixed-size records: fields to rewrite, branches out, counter switch
 * sites, blocks, call sites, return points, the instruction map, branch
 * targets outside the function. Addresses are offsets in the function or
 * in the copy, link-time addresses in the module, or counter indices. */
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
	uint32_t code_len, ncounters, nfix, next, nsites, nblocks, ncalls, nrets, nmap, ntargets;
	uint32_t ntables;
	int32_t entry_counter;    /* counter index, -1 for none */
};

struct rec_fix {
	uint32_t off;             /* of the field in the copy */
	uint8_t kind, space;      /* enum x86_fix_kind, enum space */
	uint16_t zero;
	uint32_t base;            /* X86_FIX_REL32: copy offset the displacement counts from */
	uint32_t zero2;
	uint64_t value;           /* in SPACE */
};

struct rec_ext { uint32_t off, zero; uint64_t orig; };        /* rel32 at OFF, link-time ORIG */
struct rec_site { uint32_t off, keep_flags; };
struct rec_block { uint32_t addr, ninstrs; int32_t counter, rep_counter; };  /* ADDR: offset in the function */
struct rec_call { uint32_t site, block; uint64_t target; };   /* SITE: offset; TARGET: link-time */
struct rec_pair { uint32_t from, to; };   /* offset in the function, offset in the copy */

struct rec {
	const struct rec_head *h;
	const uint8_t *code;
	const struct rec_fix *fix;
	const struct rec_ext *ext;
	const struct rec_site *sites;
	const struct rec_block *blocks;
	const struct rec_call *calls;
	const struct rec_pair *rets, *map;
	const uint64_t *targets;   /* link-time */
};

enum { MAX_COUNT = 1 << 24 };

static uint64_t pad8(uint64_t n)
{
	return (n + 7) & ~(uint64_t)7;
}

static uint64_t rec_size(const struct rec_head *h)
{
	return sizeof(*h) + pad8(h->code_len) + (uint64_t)h->nfix * sizeof(struct rec_fix) +
	       (uint64_t)h->next * sizeof(struct rec_ext) + (uint64_t)h->nsites * sizeof(struct rec_site) +
	       (uint64_t)h->nblocks * sizeof(struct rec_block) + (uint64_t)h->ncalls * sizeof(struct rec_call) +
	       (uint64_t)h->nrets * sizeof(struct rec_pair) + (uint64_t)h->nmap * sizeof(struct rec_pair) +
	       (uint64_t)h->ntargets * sizeof(uint64_t);
}

/* Points R's arrays into BLOB (a head already there): */
static void layout(const uint8_t *blob, struct rec *r)
{
	const struct rec_head *h = (const void *)blob;
	const uint8_t *p = blob + sizeof(*h);
	r->h = h;
	r->code = p;
	p += pad8(h->code_len);
	r->fix = (const void *)p;
	p += h->nfix * sizeof(*r->fix);
	r->ext = (const void *)p;
	p += h->next * sizeof(*r->ext);
	r->sites = (const void *)p;
	p += h->nsites * sizeof(*r->sites);
	r->blocks = (const void *)p;
	p += h->nblocks * sizeof(*r->blocks);
	r->calls = (const void *)p;
	p += h->ncalls * sizeof(*r->calls);
	r->rets = (const void *)p;
	p += h->nrets * sizeof(*r->rets);
	r->map = (const void *)p;
	p += h->nmap * sizeof(*r->map);
	r->targets = (const void *)p;
}

static unsigned fix_width(uint8_t kind)
{
	return kind == X86_FIX_ABS64 ? 8 : 4;
}

static bool counter_ok(int32_t c, uint32_t n)
{
	return c == -1 || (c >= 0 && (uint32_t)c < n);
}

/* Whether BLOB is a well-formed record: every offset inside the copy, every
 * index inside its array (the file's hashes catch damage, not this). */
static bool parse(const void *blob, size_t len, struct rec *r)
{
	const struct rec_head *h = blob;
	if (len < sizeof(*h) || (uintptr_t)blob % 8 || h->code_len > MAX_COUNT ||
	    h->ncounters > MAX_COUNT || h->nfix > MAX_COUNT || h->next > MAX_COUNT ||
	    h->nsites > MAX_COUNT || h->nblocks > MAX_COUNT || h->ncalls > MAX_COUNT ||
	    h->nrets > MAX_COUNT || h->nmap > MAX_COUNT || h->ntargets > MAX_COUNT ||
	    rec_size(h) != len || !counter_ok(h->entry_counter, h->ncounters))
		return false;
	layout(blob, r);
	uint32_t cl = h->code_len;
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
		if (r->sites[i].off > cl || cl - r->sites[i].off < 2)
			return false;
	for (uint32_t i = 0; i < h->nblocks; i++)
		if (!counter_ok(r->blocks[i].counter, h->ncounters) ||
		    !counter_ok(r->blocks[i].rep_counter, h->ncounters))
			return false;
	for (uint32_t i = 0; i < h->ncalls; i++)
		if (r->calls[i].block >= h->nblocks)
			return false;
	for (uint32_t i = 0; i < h->nrets; i++)
		if (r->rets[i].to >= cl)
			return false;
	for (uint32_t i = 0; i < h->nmap; i++)
		if (r->map[i].to > cl || (i && r->map[i].from <= r->map[i - 1].from))
			return false;
	return true;
}

/* ---- saving ---- */

/* What run-time address A is, seen from a copy at [DEST, END]. */
static int place(const struct x86_persist_info *in, uint64_t dest, uint64_t end, uint64_t a,
		 uint8_t *space, uint64_t *value)
{
	if (a >= dest && a <= end) {
		*space = SP_COPY;
		*value = a - dest;
	} else if (a >= in->ctr_lo && a < in->ctr_hi && (a - in->ctr_lo) % 8 == 0) {
		*space = SP_COUNTER;
		*value = (a - in->ctr_lo) / 8;
	} else if (a >= in->mod_lo && a <= in->mod_hi) {
		*space = SP_MODULE;
		*value = a - in->bias;
	} else {
		return -RTL_ERR_UNSUPPORTED;
	}
	return 0;
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

static bool in_module(const struct x86_persist_info *in, uint64_t a)
{
	return a >= in->mod_lo && a <= in->mod_hi;
}

static bool fn_offset(const struct x86_persist_info *in, uint64_t a, uint32_t *out)
{
	*out = (uint32_t)(a - in->fn);
	return a >= in->fn && a - in->fn <= UINT32_MAX;
}

static int by_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

/* The fields to rewrite: the last log entry of each offset, but those of
 * branches out (R->ext, redirected at load) and displacements within the
 * copy (the same wherever it is). */
static int collect_fixes(const struct x86_reloc *r, const struct x86_persist_info *in,
			 struct rec_fix **out, uint32_t *nout)
{
	const struct x86_writer *w = &r->w;
	uint64_t dest = w->base, end = w->base + w->len;
	uint64_t *order = malloc((w->nfix + 1) * sizeof(*order));
	uint64_t *ext = malloc((r->next + 1) * sizeof(*ext));
	struct rec_fix *v = malloc((w->nfix + 1) * sizeof(*v));
	uint32_t n = 0;
	int err = -ENOMEM;
	if (!order || !ext || !v)
		goto out;
	for (size_t i = 0; i < w->nfix; i++)
		order[i] = (uint64_t)w->fix[i].off << 32 | i;
	qsort(order, w->nfix, sizeof(*order), by_u64);
	for (size_t i = 0; i < r->next; i++)
		ext[i] = r->ext[i].off;
	qsort(ext, r->next, sizeof(*ext), by_u64);
	err = 0;
	for (size_t i = 0; i < w->nfix && !err; i++) {
		if (i + 1 < w->nfix && order[i + 1] >> 32 == order[i] >> 32)
			continue;   /* written again later */
		const struct x86_fix *f = &w->fix[(uint32_t)order[i]];
		size_t at = rtl_lower_bound_u64(ext, r->next, f->off);
		if (at < r->next && ext[at] == f->off)
			continue;
		struct rec_fix rf = { .off = f->off, .kind = f->kind };
		if (f->kind == X86_FIX_REL32) {
			if (f->base < dest || f->base > end) {
				err = -RTL_ERR_UNSUPPORTED;
				break;
			}
			rf.base = (uint32_t)(f->base - dest);
			if (f->target >= dest && f->target <= end && !f->orig)
				continue;   /* within the copy */
		}
		if (f->orig) {
			rf.space = SP_REDIRECT;
			rf.value = f->orig - in->bias;
			if (!in_module(in, f->orig))
				err = -RTL_ERR_UNSUPPORTED;
		} else {
			err = place(in, dest, end, f->target, &rf.space, &rf.value);
		}
		v[n++] = rf;
	}
out:
	free(order);
	free(ext);
	if (err) {
		free(v);
		return err;
	}
	*out = v;
	*nout = n;
	return 0;
}

int x86_persist(const struct x86_reloc *r, const struct x86_persist_info *in, void **blob,
		size_t *len)
{
	const struct x86_writer *w = &r->w;
	uint64_t dest = w->base;
	struct rec_fix *fix = NULL;
	struct rec_head h = {
		.code_len = (uint32_t)w->len, .ncounters = (uint32_t)((in->ctr_hi - in->ctr_lo) / 8),
		.next = (uint32_t)r->next, .nsites = (uint32_t)r->nsites,
		.nblocks = (uint32_t)r->nblocks, .ncalls = (uint32_t)r->ncalls, .nrets = (uint32_t)r->nrets,
		.nmap = (uint32_t)r->nmap, .ntargets = (uint32_t)in->ntargets,
		.ntables = (uint32_t)r->njump_tables,
	};
	if (dest % 16 || w->failed || w->len > MAX_COUNT || r->nmap > MAX_COUNT)
		return -RTL_ERR_UNSUPPORTED;
	int err = collect_fixes(r, in, &fix, &h.nfix);
	if (err)
		return err;
	err = counter_index(in, r->entry_counter, &h.entry_counter);
	uint64_t size = rec_size(&h);
	uint8_t *b = err ? NULL : calloc(1, size);
	if (!b) {
		free(fix);
		return err ? err : -ENOMEM;
	}
	struct rec rc;
	memcpy(b, &h, sizeof(h));
	layout(b, &rc);
	memcpy((uint8_t *)rc.code, w->buf, w->len);
	memcpy((void *)rc.fix, fix, h.nfix * sizeof(*fix));
	free(fix);
	for (size_t i = 0; i < r->next && !err; i++) {
		((struct rec_ext *)rc.ext)[i] = (struct rec_ext){ .off = r->ext[i].off,
								 .orig = r->ext[i].orig - in->bias };
		if (!in_module(in, r->ext[i].orig))
			err = -RTL_ERR_UNSUPPORTED;
	}
	for (size_t i = 0; i < r->nsites; i++)
		((struct rec_site *)rc.sites)[i] = (struct rec_site){ r->sites[i].off, r->sites[i].keep_flags };
	for (size_t i = 0; i < r->nblocks && !err; i++) {
		struct rec_block *rb = (struct rec_block *)&rc.blocks[i];
		rb->ninstrs = r->blocks[i].ninstrs;
		if (!fn_offset(in, r->blocks[i].addr, &rb->addr) ||
		    counter_index(in, r->blocks[i].counter, &rb->counter) ||
		    counter_index(in, r->blocks[i].rep_counter, &rb->rep_counter))
			err = -RTL_ERR_UNSUPPORTED;
	}
	for (size_t i = 0; i < r->ncalls && !err; i++) {
		struct rec_call *c = (struct rec_call *)&rc.calls[i];
		c->block = r->calls[i].block;
		c->target = r->calls[i].target - in->bias;
		if (!fn_offset(in, r->calls[i].site, &c->site) || !in_module(in, r->calls[i].target))
			err = -RTL_ERR_UNSUPPORTED;
	}
	for (size_t i = 0; i < r->nrets && !err; i++) {
		struct rec_pair *p = (struct rec_pair *)&rc.rets[i];
		p->to = (uint32_t)(r->rets[i].copy - dest);
		if (!fn_offset(in, r->rets[i].orig, &p->from) || r->rets[i].copy < dest)
			err = -RTL_ERR_UNSUPPORTED;
	}
	for (size_t i = 0; i < r->nmap && !err; i++) {
		struct rec_pair *p = (struct rec_pair *)&rc.map[i];
		p->to = (uint32_t)(r->map_to[i] - dest);
		if (!fn_offset(in, r->map_from[i], &p->from) || r->map_to[i] < dest)
			err = -RTL_ERR_UNSUPPORTED;
	}
	for (size_t i = 0; i < in->ntargets && !err; i++) {
		((uint64_t *)rc.targets)[i] = in->targets[i] - in->bias;
		if (!in_module(in, in->targets[i]))
			err = -RTL_ERR_UNSUPPORTED;
	}
	/* what is saved must load: a check of the writer, not of the file */
	struct rec check;
	if (!err && !parse(b, size, &check))
		err = -RTL_ERR_UNSUPPORTED;
	if (err) {
		free(b);
		return err;
	}
	*blob = b;
	*len = size;
	return 0;
}

/* ---- loading ---- */

int x86_persisted_targets(const void *blob, size_t len, uint64_t bias, uint64_t *out, size_t max,
			  size_t *n)
{
	struct rec rc;
	if (!parse(blob, len, &rc))
		return -RTL_ERR_BAD_INPUT;
	size_t k = rc.h->ntargets < max ? rc.h->ntargets : max;
	for (size_t i = 0; i < k; i++)
		out[i] = rc.targets[i] + bias;
	*n = k;
	return 0;
}

static void put32(struct x86_writer *w, uint32_t off, uint32_t v)
{
	memcpy(w->buf + off, &v, 4);
}

/* int32 TARGET - BASE at OFF; failed when out of reach */
static void put_rel32(struct x86_writer *w, uint32_t off, uint64_t base, uint64_t target)
{
	int64_t d = (int64_t)(target - base);
	if (d != (int32_t)d)
		w->failed = true;
	put32(w, off, (uint32_t)d);
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
		put_rel32(w, f->off, dest + f->base, v);
		break;
	case X86_FIX_ABS64:
		memcpy(w->buf + f->off, &v, 8);
		break;
	case X86_FIX_ABS32:
		if ((int64_t)v != (int32_t)v)
			w->failed = true;
		put32(w, f->off, (uint32_t)v);
		break;
	case X86_FIX_LO32:
		put32(w, f->off, (uint32_t)v);
		break;
	default:
		put32(w, f->off, (uint32_t)(v >> 32));
		break;
	}
}

static void *dup_n(size_t n, size_t size)
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
	uint64_t *ctr = dup_n(h->ncounters, sizeof(*ctr));
	x86_writer_init(&out->w, dest);
	x86_put(&out->w, rc.code, h->code_len);
	out->sites = dup_n(h->nsites, sizeof(*out->sites));
	out->blocks = calloc(h->nblocks ? h->nblocks : 1, sizeof(*out->blocks));
	out->calls = dup_n(h->ncalls, sizeof(*out->calls));
	out->ext = dup_n(h->next, sizeof(*out->ext));
	out->rets = dup_n(h->nrets, sizeof(*out->rets));
	out->map_from = dup_n(h->nmap, sizeof(*out->map_from));
	out->map_to = dup_n(h->nmap, sizeof(*out->map_to));
	int err = -ENOMEM;
	if (!ctr || out->w.failed || !out->sites || !out->blocks || !out->calls || !out->ext ||
	    !out->rets || !out->map_from || !out->map_to)
		goto fail;
	/* in x86_emit's order: its entry counter, then its blocks' */
	err = -RTL_ERR_NO_SPACE;
	for (uint32_t i = 0; i < h->ncounters; i++)
		if (!(ctr[i] = env->new_counter(env->ctx)))
			goto fail;
	for (uint32_t i = 0; i < h->nfix; i++)
		apply_fix(&out->w, &rc.fix[i], env, ctr, bias);
	for (uint32_t i = 0; i < h->next; i++) {
		uint64_t orig = rc.ext[i].orig + bias, to = env->redirect(env->ctx, orig);
		put_rel32(&out->w, rc.ext[i].off, dest + rc.ext[i].off + 4, to);
		out->ext[i] = (struct x86_ext_branch){ rc.ext[i].off, orig, to };
	}
	if (out->w.failed)
		goto fail;
	out->next = out->capext = h->next;
	for (uint32_t i = 0; i < h->nsites; i++)
		out->sites[i] = (struct x86_counter_site){ rc.sites[i].off, rc.sites[i].keep_flags != 0 };
	out->nsites = out->capsites = h->nsites;
	out->entry_counter = h->entry_counter < 0 ? 0 : ctr[h->entry_counter];
	for (uint32_t i = 0; i < h->nblocks; i++) {
		const struct rec_block *b = &rc.blocks[i];
		out->blocks[i] = (struct x86_block){ fn + b->addr, b->ninstrs, b->counter < 0 ? 0 : ctr[b->counter],
						     b->rep_counter < 0 ? 0 : ctr[b->rep_counter] };
	}
	out->nblocks = h->nblocks;
	for (uint32_t i = 0; i < h->ncalls; i++)
		out->calls[i] = (struct x86_call_site){ fn + rc.calls[i].site, rc.calls[i].target + bias,
							rc.calls[i].block };
	out->ncalls = out->capcalls = h->ncalls;
	for (uint32_t i = 0; i < h->nrets; i++)
		out->rets[i] = (struct x86_ret_patch){ fn + rc.rets[i].from, dest + rc.rets[i].to };
	out->nrets = out->caprets = h->nrets;
	for (uint32_t i = 0; i < h->nmap; i++) {
		out->map_from[i] = fn + rc.map[i].from;
		out->map_to[i] = dest + rc.map[i].to;
	}
	out->nmap = h->nmap;
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
		DIFF("copy at %#llx, %zu bytes against %#llx, %zu bytes", (unsigned long long)a->w.base,
		     a->w.len, (unsigned long long)b->w.base, b->w.len);
	for (size_t i = 0; i < a->w.len; i++)
		if (a->w.buf[i] != b->w.buf[i])
			DIFF("byte at +%#zx: %02x against %02x", i, a->w.buf[i], b->w.buf[i]);
	if (a->entry_counter != b->entry_counter)
		DIFF("entry counter");
	if (a->nblocks != b->nblocks)
		DIFF("blocks");
	for (size_t i = 0; i < a->nblocks; i++)
		if (a->blocks[i].addr != b->blocks[i].addr || a->blocks[i].ninstrs != b->blocks[i].ninstrs ||
		    a->blocks[i].counter != b->blocks[i].counter ||
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
	return NULL;
#undef DIFF
}
