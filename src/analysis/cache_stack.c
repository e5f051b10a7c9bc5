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
#include "cache_drive.h"

int cs_stack_init(struct cs_engine *e)
{
	e->tags = calloc((size_t)e->nsets * e->A, sizeof(*e->tags));
	e->hist = calloc((size_t)RTL_ACC_KINDS * (e->A + 1), sizeof(*e->hist));
	if (e->any_wb)
		e->dirty = calloc((size_t)e->nsets * e->A, sizeof(*e->dirty));
	if (!e->tags || !e->hist || (e->any_wb && !e->dirty))
		return -ENOMEM;
	return 0;
}

/* Write-backs and new dirty masks for a reference at depth D of SET;
 * shifts the masks like the tags. */
static void stack_dirty(struct cs_engine *e, uint32_t set, uint32_t d, int wr,
			uint64_t iaddr, uint32_t seq)
{
	const uint32_t A = e->A;
	uint64_t *s = e->tags + (size_t)set * A;
	uint32_t *m = e->dirty + (size_t)set * A;
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

static inline uint32_t stack_touch(struct cs_engine *e, uint64_t line, int wr,
				   uint64_t iaddr, uint32_t seq, int *isnew)
{
	const uint32_t A = e->A;
	uint32_t set = cs_set_of(e, line);
	uint64_t *s = e->tags + (size_t)set * A;
	uint64_t tag = line + 1;
	uint32_t d = 0;

	if (s[0] == tag)
		return e->any_wb ? (stack_dirty(e, set, 0, wr, iaddr, seq), 0) : 0;
	while (d < A && s[d] != tag)
		d++;
	if (d == A && cs_lineset_add(&e->seen, line) > 0)
		*isnew = 1;
	if (e->any_wb)
		stack_dirty(e, set, d, wr, iaddr, seq);
	for (uint32_t i = d < A ? d : A - 1; i > 0; i--)
		s[i] = s[i - 1];
	s[0] = tag;
	return d;
}

void cs_stack_run(struct cs_engine *e, const rtl_access *a, size_t n, int root)
{
	cs_drive(e, a, n, root, stack_touch);
}
