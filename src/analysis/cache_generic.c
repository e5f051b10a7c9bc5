/* Generic engine: one cache level of one configuration, any policy (LRU,
 * FIFO, seeded random, tree-PLRU), write-back or write-through, with or
 * without write-allocate, and inclusive back-invalidation. Used for what
 * the stack engine cannot share; touch returns 0 for a hit and A (the
 * number of ways) for a miss, so the statistics use the same histogram. */
#include <errno.h>
#include <stdlib.h>
#include "cache_drive.h"

int cs_generic_init(struct cs_engine *e)
{
	size_t n = (size_t)e->nsets * e->A;

	e->tags = calloc(n, sizeof(*e->tags));
	e->stamp = calloc(n, sizeof(*e->stamp));
	e->dirty = calloc(n, sizeof(*e->dirty));
	e->plru = calloc(e->nsets, sizeof(*e->plru));
	e->hist = calloc((size_t)RTL_ACC_KINDS * (e->A + 1), sizeof(*e->hist));
	if (!e->tags || !e->stamp || !e->dirty || !e->plru || !e->hist)
		return -ENOMEM;
	if (!e->rng)
		e->rng = 0x9e3779b97f4a7c15ULL;
	return 0;
}

/* Tree-PLRU over A = 2^k ways: node i (1-based heap order) has bit i of
 * the set's word; the bit points to the half to evict next. */
static void plru_touch(struct cs_engine *e, uint32_t set, uint32_t way)
{
	uint64_t *bits = &e->plru[set];
	uint32_t node = 1;

	for (uint32_t half = e->A >> 1; half; half >>= 1) {
		uint32_t right = (way & half) != 0;
		if (right)
			*bits &= ~(1ULL << node);   /* evict left next */
		else
			*bits |= 1ULL << node;
		node = node * 2 + right;
	}
}

static uint32_t plru_victim(const struct cs_engine *e, uint32_t set)
{
	uint32_t node = 1;

	while (node < e->A)
		node = node * 2 + ((e->plru[set] >> node) & 1);
	return node - e->A;
}

static uint32_t pick_victim(struct cs_engine *e, uint32_t set)
{
	const uint32_t A = e->A;
	uint64_t *s = e->tags + (size_t)set * A, *st = e->stamp + (size_t)set * A;
	uint32_t v = 0;

	for (uint32_t w = 0; w < A; w++)
		if (!s[w])
			return w;
	switch (e->repl) {
	case RTL_REPL_RANDOM:
		e->rng ^= e->rng << 13;
		e->rng ^= e->rng >> 7;
		e->rng ^= e->rng << 17;
		return (uint32_t)(e->rng % A);
	case RTL_REPL_PLRU:
		return plru_victim(e, set);
	default:  /* LRU and FIFO: oldest stamp (use for LRU, fill for FIFO) */
		for (uint32_t w = 1; w < A; w++)
			if (st[w] < st[v])
				v = w;
		return v;
	}
}

void cs_generic_invalidate(struct cs_engine *e, uint64_t addr, uint32_t bytes)
{
	uint64_t first = addr >> e->shift, last = (addr + bytes - 1) >> e->shift;

	for (uint64_t l = first; l <= last; l++) {
		uint32_t set = cs_set_of(e, l);
		uint64_t *s = e->tags + (size_t)set * e->A;
		for (uint32_t w = 0; w < e->A; w++) {
			if (s[w] != l + 1)
				continue;
			s[w] = 0;
			e->dirty[(size_t)set * e->A + w] = 0;
			struct cs_consumer *c = e->cons[0];
			for (int u = 0; u < 2; u++)
				if (c->upper[u])
					cs_generic_invalidate(c->upper[u]->eng, l << e->shift, e->line);
		}
	}
}

static void evict(struct cs_engine *e, size_t slot, uint64_t iaddr, uint32_t seq)
{
	struct cs_consumer *c = e->cons[0];
	uint64_t base = (e->tags[slot] - 1) << e->shift;

	if (e->dirty[slot]) {
		c->writebacks++;
		cs_emit(c, base, e->line, RTL_ACC_WRITEBACK, iaddr, seq);
	}
	for (int u = 0; u < 2; u++)
		if (c->upper[u])
			cs_generic_invalidate(c->upper[u]->eng, base, e->line);
}

CS_INLINE uint32_t generic_touch(struct cs_engine *e, uint64_t line, int wr,
				     uint64_t iaddr, uint32_t seq, int *isnew)
{
	const uint32_t A = e->A;
	struct cs_consumer *c = e->cons[0];
	uint32_t set = cs_set_of(e, line);
	size_t base = (size_t)set * A;
	uint64_t tag = line + 1;
	uint32_t w;

	for (w = 0; w < A; w++)
		if (e->tags[base + w] == tag)
			break;
	if (w < A) {
		if (e->repl == RTL_REPL_LRU)
			e->stamp[base + w] = ++e->clock;
		else if (e->repl == RTL_REPL_PLRU)
			plru_touch(e, set, w);
		if (wr && c->write == RTL_WRITE_BACK)
			e->dirty[base + w] = 1;
		return 0;
	}
	if (cs_lineset_add(&e->seen, line) > 0)
		*isnew = 1;
	if (wr && c->no_write_allocate)
		return A;
	w = pick_victim(e, set);
	if (e->tags[base + w])
		evict(e, base + w, iaddr, seq);
	e->tags[base + w] = tag;
	e->stamp[base + w] = ++e->clock;
	e->dirty[base + w] = wr && c->write == RTL_WRITE_BACK;
	if (e->repl == RTL_REPL_PLRU)
		plru_touch(e, set, w);
	return A;
}

void cs_generic_run(struct cs_engine *e, const rtl_access *a, size_t n, int root)
{
	cs_drive(e, a, n, root, generic_touch);
}
