/* LRU stack engine (Mattson): one recency stack per set, as deep as the
 * widest consumer. A reference found at depth d hits in every consumer with
 * more than d ways and misses in the others, so all LRU associativities of
 * one (line size, set count, input) come from a single lookup.
 *
 * Dirty lines: bit j of a stack entry's mask says the line is dirty in
 * consumer j's cache. When a reference misses in consumer j (d >= ways_j),
 * the entry at depth ways_j - 1 leaves that cache: if its bit is set, that
 * is a write-back from consumer j. Only write-allocate caches come here,
 * so a miss always (re)loads the line. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "cache_drive.h"

/* Sets are laid out with a power-of-two stride (>= A entries), so that the
 * hot loop finds a set with a shift instead of a multiplication. */
static inline size_t set_base(const struct cs_engine *e, uint32_t set)
{
	return (size_t)set << e->sshift;
}

int cs_stack_init(struct cs_engine *e)
{
	e->sshift = 0;
	while ((1u << e->sshift) < e->A)
		e->sshift++;
	e->tags = calloc((size_t)e->nsets << e->sshift, sizeof(*e->tags));
	e->hist = calloc((size_t)RTL_ACC_KINDS * (e->A + 1), sizeof(*e->hist));
	if (e->any_wb)
		e->dirty = calloc((size_t)e->nsets << e->sshift, sizeof(*e->dirty));
	if (!e->tags || !e->hist || (e->any_wb && !e->dirty))
		return -ENOMEM;
	return 0;
}

/* Write-backs and new dirty masks for a reference at depth D of SET;
 * shifts the masks like the tags. */
static __attribute__((noinline)) void stack_dirty(struct cs_engine *e, uint32_t set, uint32_t d, int wr,
			uint64_t iaddr, uint32_t seq)
{
	const uint32_t A = e->A;
	uint64_t *s = e->tags + set_base(e, set);
	uint32_t *m = e->dirty + set_base(e, set);
	uint32_t old = d < A ? m[d] : 0, nm = 0;

	for (int j = 0; j < e->ncons; j++) {
		struct cs_consumer *c = e->cons[j];
		uint32_t bit = 1u << j;
		if (c->write != RTL_WRITE_BACK)
			continue;
		if (d >= c->assoc) {
			uint32_t v = c->assoc - 1;
			if (s[v] && (m[v] & bit)) {
				c->writebacks++;
				cs_emit(c, (s[v] - 1) << e->shift, e->line,
					RTL_ACC_WRITEBACK, iaddr, seq);
				m[v] &= ~bit;
			}
			nm |= wr ? bit : 0;
		} else {
			nm |= (old & bit) | (wr ? bit : 0);
		}
	}
	for (uint32_t i = d < A ? d : A - 1; i > 0; i--)
		m[i] = m[i - 1];
	m[0] = nm;
}

/* A hit in every consumer: no eviction anywhere, the line keeps its
 * dirty bits and gains the write-back consumers' bits on a write. */
CS_INLINE void stack_dirty_hit(struct cs_engine *e, uint32_t set, uint32_t d, int wr)
{
	uint32_t *m = e->dirty + set_base(e, set);
	uint32_t nm = m[d] | (wr ? e->wb_mask : 0);

	for (uint32_t i = d; i > 0; i--)
		m[i] = m[i - 1];
	m[0] = nm;
}

CS_INLINE uint32_t stack_touch(struct cs_engine *e, uint64_t line, int wr,
			       uint64_t iaddr, uint32_t seq, int *isnew)
{
	const uint32_t A = e->A;
	uint32_t set = cs_set_of(e, line);
	uint64_t *s = e->tags + set_base(e, set);
	uint64_t tag = line + 1;
	uint32_t d = 0;

	if (s[0] == tag) {
		if (e->any_wb && wr)
			e->dirty[set_base(e, set)] |= e->wb_mask;
		return 0;
	}
	while (d < A && s[d] != tag)
		d++;
	if (d == A && cs_lineset_add(&e->seen, line) > 0)
		*isnew = 1;
	if (e->any_wb) {
		if (d < e->min_assoc)
			stack_dirty_hit(e, set, d, wr);
		else
			stack_dirty(e, set, d, wr, iaddr, seq);
	}
	for (uint32_t i = d < A ? d : A - 1; i > 0; i--)
		s[i] = s[i - 1];
	s[0] = tag;
	return d;
}

/* A warm-up's reference (cache_warm.c): LINE moved to the top of its
 * set's stack as a reference moves it, nothing counted or passed down.
 * Dirty bits follow: a line leaving a write-back consumer's ways loses its
 * bit there, unwritten. Returns the depth it was found at (A: absent). */
uint32_t cs_stack_warm(struct cs_engine *e, uint64_t line, int wr)
{
	const uint32_t A = e->A;
	uint32_t set = cs_set_of(e, line);
	uint64_t *s = e->tags + set_base(e, set), tag = line + 1;
	uint32_t d = 0;

	while (d < A && s[d] != tag)
		d++;
	if (e->dirty) {
		uint32_t *m = e->dirty + set_base(e, set), old = d < A ? m[d] : 0, nm = 0;
		for (int j = 0; j < e->ncons; j++) {
			const struct cs_consumer *c = e->cons[j];
			uint32_t bit = 1u << j;
			if (c->write != RTL_WRITE_BACK)
				continue;
			if (d >= c->assoc)
				m[c->assoc - 1] &= ~bit;
			nm |= (d < c->assoc ? old & bit : 0) | (wr ? bit : 0);
		}
		for (uint32_t i = d < A ? d : A - 1; i > 0; i--)
			m[i] = m[i - 1];
		m[0] = nm;
	}
	for (uint32_t i = d < A ? d : A - 1; i > 0; i--)
		s[i] = s[i - 1];
	s[0] = tag;
	return d;
}

static __attribute__((noinline)) void stack_slow(struct cs_engine *e, const rtl_access *a,
						  uint32_t seq)
{
	cs_drive_one(e, a, seq, stack_touch);
}

/* Moves the entry at depth D (a hit in every consumer) to the top;
 * dirty masks follow, gaining the write-back consumers' bits on a write. */
CS_INLINE void stack_promote(struct cs_engine *e, uint64_t *s, uint32_t set, uint32_t d, int wr)
{
	uint64_t tag = s[d];

	for (uint32_t i = d; i > 0; i--)
		s[i] = s[i - 1];
	s[0] = tag;
	if (e->any_wb)
		stack_dirty_hit(e, set, d, wr);
}

/* The common cases inline: a single-line access of a "fast" kind (loads,
 * fetches, and stores unless a consumer writes through; nothing when
 * attributing) found on top of its set's stack changes nothing but a
 * counter and, for a store, the top entry's dirty bits; found deeper but
 * within every consumer's ways, it moves to the top. Everything else goes
 * to stack_slow(). Few live values, so that the loop stays in registers. */
void cs_stack_run(struct cs_engine *restrict e, const rtl_access *a, size_t n, int root)
{
	cs_stack_run_idx(e, a, NULL, n, root);
}

/* The inline part of cs_stack_run_idx(), from position J: returns the
 * position of the first access that needs stack_slow() (N if none). It
 * calls nothing, so its values stay in registers. Compiled once per set
 * index kind (POW2 a constant). No kind filter here: an engine reading
 * every access (unified L1, lower levels) takes every kind, and a split L1
 * gets the index of its own accesses. */
CS_INLINE size_t stack_scan(struct cs_engine *restrict e, const rtl_access *a, const uint32_t *idx,
			    size_t j, size_t n, const int pow2, uint64_t *restrict top)
{
	const uint32_t sh = e->shift, a1 = e->A + 1, gate = e->gate;
	const unsigned fast = e->gate ? (1u << RTL_ACC_LOAD | 1u << RTL_ACC_IFETCH |
					 (e->any_wt ? 0 : 1u << RTL_ACC_STORE | 1u << RTL_ACC_WRITEBACK)) : 0;
	const unsigned wrk = e->any_wb ? 1u << RTL_ACC_STORE | 1u << RTL_ACC_WRITEBACK : 0;
	const uint64_t mask = e->setmask, nsets = e->nsets;
	const uint32_t ssh = e->sshift;
	uint64_t *restrict tags = e->tags;

	for (; j < n; j++) {
		const rtl_access *x = &a[idx ? idx[j] : j];
		uint32_t k = CS_KIND(x->kind);
		uint64_t first = x->addr >> sh;
		if (!(((fast >> k) & 1) && ((x->addr + x->size - 1) >> sh) == first))
			return j;
		uint32_t set = (uint32_t)(pow2 ? first & mask : first % nsets);
		size_t base = (size_t)set << ssh;
		uint64_t *s = tags + base;
		if (__builtin_expect(s[0] == first + 1, 1)) {
			top[k]++;
			if ((wrk >> k) & 1)
				e->dirty[base] |= e->wb_mask;
			continue;
		}
		uint32_t d = 1;
		while (d < gate && s[d] != first + 1)
			d++;
		if (d >= gate)
			return j;
		stack_promote(e, s, set, d, (wrk >> k) & 1);
		e->hist[k * a1 + d]++;
	}
	return n;
}

static __attribute__((noinline)) size_t scan_pow2(struct cs_engine *e, const rtl_access *a,
						   const uint32_t *idx, size_t j, size_t n, uint64_t *top)
{
	return stack_scan(e, a, idx, j, n, 1, top);
}

static __attribute__((noinline)) size_t scan_mod(struct cs_engine *e, const rtl_access *a,
						  const uint32_t *idx, size_t j, size_t n, uint64_t *top)
{
	return stack_scan(e, a, idx, j, n, 0, top);
}

static void stack_loop(struct cs_engine *restrict e, const rtl_access *a, const uint32_t *idx,
		       size_t n, int root, uint64_t *top)
{
	for (size_t j = 0; j < n; j++) {
		j = e->pow2 ? scan_pow2(e, a, idx, j, n, top) : scan_mod(e, a, idx, j, n, top);
		if (j == n)
			break;
		size_t i = idx ? idx[j] : j;
		stack_slow(e, &a[i], root ? (uint32_t)i : CS_SEQ(a[i].kind));
	}
}

/* IDX (root engines only, may be NULL): the positions in A of the accesses
 * of the engine's kinds. Split L1s then skip the other kind without a test
 * per access, whose branch mispredicts as fetches and data interleave. */
void cs_stack_run_idx(struct cs_engine *restrict e, const rtl_access *a, const uint32_t *idx,
		      size_t n, int root)
{
	const uint32_t a1 = e->A + 1;
	uint64_t top[RTL_ACC_KINDS] = { 0 };

	stack_loop(e, a, idx, n, root, top);
	for (int k = 0; k < RTL_ACC_KINDS; k++)
		e->hist[k * a1] += top[k];
}

/* One pass for a split L1 pair: every pushed access belongs to exactly one
 * of FETCH (filter: fetches) and DATA (loads, stores, modifies), so the
 * engine is chosen per access without a branch and the chunk is read once. */
struct stack_view {
	struct cs_engine *e;
	uint64_t *tags;
	uint64_t mask, nsets;
	uint32_t sh, ssh, gate, fast, wrk, pow2;
	uint64_t top[RTL_ACC_KINDS];
};

static void view_init(struct stack_view *v, struct cs_engine *e)
{
	memset(v, 0, sizeof(*v));
	v->e = e;
	v->tags = e->tags;
	v->mask = e->setmask;
	v->nsets = e->nsets;
	v->sh = e->shift;
	v->ssh = e->sshift;
	v->gate = e->gate;
	v->pow2 = (uint32_t)e->pow2;
	v->fast = e->gate ? (1u << RTL_ACC_LOAD | 1u << RTL_ACC_IFETCH |
			     (e->any_wt ? 0 : 1u << RTL_ACC_STORE)) : 0;
	v->wrk = e->any_wb ? 1u << RTL_ACC_STORE : 0;
}

/* The inline part of the pair loop, from position I: returns the position
 * of the first access that needs stack_slow() (N if none); calls nothing. */
static __attribute__((noinline)) size_t pair_scan(struct stack_view *restrict v, const rtl_access *a,
						  size_t i, size_t n)
{
	for (; i < n; i++) {
		const rtl_access *x = &a[i];
		uint32_t k = CS_KIND(x->kind);
		struct stack_view *w = &v[k != RTL_ACC_IFETCH];
		uint64_t first = x->addr >> w->sh;
		if (!(((w->fast >> k) & 1) && ((x->addr + x->size - 1) >> w->sh) == first))
			return i;
		uint32_t set = (uint32_t)(w->pow2 ? first & w->mask : first % w->nsets);
		size_t base = (size_t)set << w->ssh;
		uint64_t *s = w->tags + base;
		if (__builtin_expect(s[0] == first + 1, 1)) {
			w->top[k]++;
			if ((w->wrk >> k) & 1)
				w->e->dirty[base] |= w->e->wb_mask;
			continue;
		}
		uint32_t d = 1;
		while (d < w->gate && s[d] != first + 1)
			d++;
		if (d >= w->gate)
			return i;
		stack_promote(w->e, s, set, d, (w->wrk >> k) & 1);
		w->e->hist[k * (w->e->A + 1) + d]++;
	}
	return n;
}

void cs_stack_run_pair(struct cs_engine *fetch, struct cs_engine *data, const rtl_access *a, size_t n)
{
	struct stack_view v[2];

	view_init(&v[0], fetch);
	view_init(&v[1], data);
	for (size_t i = 0; i < n; i++) {
		i = pair_scan(v, a, i, n);
		if (i == n)
			break;
		stack_slow(v[a[i].kind != RTL_ACC_IFETCH].e, &a[i], (uint32_t)i);
	}
	for (int j = 0; j < 2; j++)
		for (int k = 0; k < RTL_ACC_KINDS; k++)
			v[j].e->hist[k * (v[j].e->A + 1)] += v[j].top[k];
}
