/* The per-access loop shared by the stack and generic engines: kind filter,
 * data-size clamp, line crossing, MODIFY, and what each consumer passes down.
 * Included by cache_stack.c and cache_generic.c with their own touch
 * function, which the compiler inlines: no call per access. */
#ifndef RETICLE_ANALYSIS_CACHE_DRIVE_H
#define RETICLE_ANALYSIS_CACHE_DRIVE_H

#include "cache_internal.h"

/* Looks LINE up and updates the engine; returns the recency depth (stack)
 * or 0/A (generic), A meaning a miss for every consumer. */
typedef uint32_t (*cs_touch_fn)(struct cs_engine *e, uint64_t line, int wr,
				uint64_t iaddr, uint32_t seq, int *isnew);

#define CS_INLINE static inline __attribute__((always_inline))

/* What consumers pass down after a reference at depth D (the rare path:
 * a miss somewhere, a write-through store, or attribution). */
static __attribute__((noinline)) void cs_consumers(struct cs_engine *e, uint32_t d, uint32_t k,
						   int wr, uint64_t addr, uint32_t size,
						   uint64_t iaddr, uint32_t seq)
{
	uint32_t hk = k == RTL_ACC_MODIFY ? RTL_ACC_LOAD : k;

	for (int j = 0; j < e->ncons; j++) {
		struct cs_consumer *c = e->cons[j];
		int miss = d >= c->assoc;
		int sent_write = miss && (k == RTL_ACC_STORE || k == RTL_ACC_WRITEBACK);

		if (miss)
			cs_emit(c, addr, size, hk, iaddr, seq);
		if (wr && c->write == RTL_WRITE_THROUGH && !sent_write)
			cs_emit(c, addr, size, RTL_ACC_STORE, iaddr, seq);
		if (c->attr && (miss || !c->attr->misses_only))
			cs_attr_add(c->attr, iaddr, miss);
	}
}

CS_INLINE void cs_after(struct cs_engine *e, uint32_t d, uint32_t k, int wr,
			uint64_t addr, uint32_t size, uint64_t iaddr,
			uint32_t seq, int isnew)
{
	uint32_t a1 = e->A + 1;
	uint32_t hk = k == RTL_ACC_MODIFY ? RTL_ACC_LOAD : k;

	e->hist[hk * a1 + d]++;
	if (__builtin_expect(isnew, 0))
		e->compulsory++;
	if (k == RTL_ACC_MODIFY && wr)
		e->hist[RTL_ACC_STORE * a1]++;   /* the write half always hits */
	if (__builtin_expect(d < e->gate && !(wr && e->any_wt), 1))
		return;
	cs_consumers(e, d, k, wr, addr, size, iaddr, seq);
}

/* One access (SEQ: its index in the pushed chunk). E is restrict: the
 * simulated arrays never alias the engine's fields. */
CS_INLINE void cs_drive_one(struct cs_engine *restrict e, const rtl_access *a,
			    uint32_t seq, cs_touch_fn touch)
{
	const uint32_t sh = e->shift, maxds = e->max_data_size;
	uint32_t k = CS_KIND(a->kind);
	uint64_t addr = a->addr, iaddr = a->iaddr;
	uint32_t size = a->size ? a->size : 1;

	if (k != RTL_ACC_IFETCH && maxds && size > maxds)
		size = maxds;
	if (addr + size - 1 < addr)
		size = (uint32_t)(0 - addr);   /* ends at the top of the address space */
	int wr = k == RTL_ACC_STORE || k == RTL_ACC_WRITEBACK ||
		 (k == RTL_ACC_MODIFY && !e->modify_as_load);
	uint64_t first = addr >> sh, last = (addr + size - 1) >> sh;
	int isnew = 0;

	if (__builtin_expect(first == last, 1)) {
		uint32_t d = touch(e, first, wr, iaddr, seq, &isnew);
		cs_after(e, d, k, wr, addr, size, iaddr, seq, isnew);
	} else if (e->cross == RTL_CROSS_ONCE) {
		uint32_t d = 0;
		for (uint64_t l = first; l <= last; l++) {
			uint32_t dl = touch(e, l, wr, iaddr, seq, &isnew);
			d = dl > d ? dl : d;
		}
		cs_after(e, d, k, wr, addr, size, iaddr, seq, isnew);
	} else {
		for (uint64_t l = first; l <= last; l++) {
			uint64_t lo = l == first ? addr : l << sh;
			uint64_t hi = l == last ? addr + size : (l + 1) << sh;
			isnew = 0;
			uint32_t d = touch(e, l, wr, iaddr, seq, &isnew);
			cs_after(e, d, k, wr, lo, (uint32_t)(hi - lo), iaddr, seq, isnew);
		}
	}
}

/* Every access of A[0..N) that passes the engine's kind filter. */
CS_INLINE void cs_drive(struct cs_engine *restrict e, const rtl_access *a, size_t n,
			int root, cs_touch_fn touch)
{
	const uint32_t filter = e->filter;

	for (size_t i = 0; i < n; i++) {
		uint32_t kf = a[i].kind;
		if ((filter >> CS_KIND(kf)) & 1)
			cs_drive_one(e, &a[i], root ? (uint32_t)i : CS_SEQ(kf), touch);
	}
}

#endif
