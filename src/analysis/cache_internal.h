/* Internals of the cache-simulator bank (src/analysis/cache_*.c).
 *
 * The bank is a list of engines. An engine simulates one cache geometry
 * (line size, set count, policy) over one input stream: the pushed accesses
 * (a root engine, filtered by kind) or the miss stream of a level above.
 * An engine serves one or more consumers: a consumer is one cache level of
 * one or more configurations. An LRU stack engine (Mattson) keeps per set a
 * recency stack as deep as its widest consumer, so every LRU associativity
 * of the same geometry and input comes from one lookup; the other policies
 * use a generic engine with exactly one consumer. Each consumer that feeds a
 * lower level owns an output stream (the accesses it sends down); streams
 * are emptied after every chunk. Inclusive hierarchies are the exception:
 * their levels call the level below directly (depth first), so that a
 * back-invalidation lands before the next access. A split L1 pair (fetch
 * engine, data engine) runs in one pass over the pushed chunk. The bank
 * owns everything here. */
#ifndef RETICLE_ANALYSIS_CACHE_INTERNAL_H
#define RETICLE_ANALYSIS_CACHE_INTERNAL_H

#include <stdint.h>
#include <stddef.h>
#include <reticle/cachesim.h>

enum { CS_MAX_CONSUMERS = 32 };

struct cs_stream {
	rtl_access *v;
	size_t n, cap;
};

/* The lines ever seen (compulsory misses): a bit per line in a word per
 * 64 lines, the words by a hash of their group; the last group's word is
 * kept at hand (misses come in runs on nearby lines). */
struct cs_lineset {
	uint64_t *keys;           /* group + 1, 0 for a free slot */
	uint64_t *bits;
	size_t cap, n;
	uint64_t last_key;
	uint64_t *last_bits;
};

/* iaddr -> (accesses, misses), for attribution. */
struct cs_attr {
	uint64_t *keys;      /* iaddr + 1, 0 = empty */
	uint64_t (*val)[2];
	size_t cap, n;
	int misses_only;     /* only misses are attributed: hits keep the fast path */
};

struct cs_engine;

struct cs_consumer {
	struct cs_engine *eng;
	int slot;                 /* index in eng->cons[] (dirty-mask bit) */
	uint32_t assoc;
	int write;                /* enum rtl_write_policy */
	int no_write_allocate;
	struct cs_stream *out;    /* NULL for the last level */
	uint64_t writebacks;
	uint64_t access[RTL_ACC_KINDS], miss[RTL_ACC_KINDS]; /* generic engines */
	struct cs_attr *attr;
	struct cs_consumer *upper[2]; /* inclusive: levels to back-invalidate */
	struct cs_engine *down;   /* inclusive: the level below, driven directly */
};

enum { CS_STACK, CS_GENERIC };

struct cs_engine {
	int type;
	int depth;
	int driven;               /* fed access by access by the level above */
	int pair;                 /* split L1 root: index of the partner engine, or -1 */                /* 0 for root engines */
	struct cs_consumer *src[2]; /* producers of the input; src[0] NULL = root */
	unsigned filter;          /* kinds accepted (root engines) */
	uint32_t line, shift, nsets, setmask;
	int pow2;
	int cross, modify_as_load;
	uint32_t max_data_size;
	int repl;
	int inclusive;            /* part of an inclusive hierarchy: never shared */
	uint64_t seed, rng;
	uint32_t A;               /* ways stored per set */
	uint32_t sshift;          /* stack: log2 of the per-set stride (>= A) */
	uint64_t *tags;           /* nsets * A; line + 1, 0 = empty */
	uint32_t *dirty;          /* stack: consumer masks; generic: 0/1 */
	uint64_t *stamp;          /* generic LRU/FIFO stamps */
	uint64_t *plru;           /* generic tree-PLRU bits per set */
	uint64_t clock;
	uint64_t *hist;           /* stack: [kind][A + 1] */
	struct cs_lineset seen;
	uint64_t compulsory;
	int ncons;
	struct cs_consumer *cons[CS_MAX_CONSUMERS];
	uint32_t min_assoc;
	int any_wt, any_wb, any_attr;
	uint32_t gate;            /* depth from which cs_consumers() must run */
	uint32_t wb_mask;         /* stack: bits of the write-back consumers */
	int worker;               /* the thread that runs it (cache_workers.c) */
	/* scratch of a lower engine fed by two streams: their merge */
	rtl_access *merge;
	size_t merge_cap;
};

/* cache_lineset.c */
int cs_lineset_add(struct cs_lineset *s, uint64_t line);  /* 1 if new, <0 error */
void cs_lineset_free(struct cs_lineset *s);
int cs_attr_add(struct cs_attr *a, uint64_t iaddr, int miss);
void cs_attr_free(struct cs_attr *a);
int cs_stream_push(struct cs_stream *s, uint64_t addr, uint32_t size, uint32_t kind, uint64_t iaddr);

/* cache_stack.c / cache_generic.c */
int cs_stack_init(struct cs_engine *e);
uint32_t cs_stack_warm(struct cs_engine *e, uint64_t line, int wr);
void cs_stack_run(struct cs_engine *e, const rtl_access *a, size_t n, int root);
void cs_stack_run_pair(struct cs_engine *fetch, struct cs_engine *data, const rtl_access *a, size_t n);
void cs_stack_run_idx(struct cs_engine *e, const rtl_access *a, const uint32_t *idx,
		      size_t n, int root);
int cs_generic_init(struct cs_engine *e);
void cs_generic_run(struct cs_engine *e, const rtl_access *a, size_t n, int root);
void cs_generic_invalidate(struct cs_engine *e, uint64_t addr, uint32_t bytes);

/* Stream records are rtl_access whose kind field also carries the index
 * of the pushed access that caused them (kind | seq << 8), so that a level
 * fed by two streams (L1I and L1D misses) sees them in program order. */
#define CS_KIND(k) ((k) & 0xffu)
#define CS_SEQ(k) ((k) >> 8)

/* Shared by both engines: sends what a consumer passes down. */
static inline void cs_emit(struct cs_consumer *c, uint64_t addr, uint32_t size,
			   uint32_t kind, uint64_t iaddr, uint32_t seq)
{
	if (c->out) {
		cs_stream_push(c->out, addr, size, kind | seq << 8, iaddr);
	} else if (c->down) {
		/* inclusive hierarchies go depth first, so that a back-invalidation
		 * lands before the level above takes its next decision */
		rtl_access r = { .addr = addr, .iaddr = iaddr, .size = size, .kind = kind | seq << 8 };
		cs_generic_run(c->down, &r, 1, 0);
	}
}

static inline uint32_t cs_set_of(const struct cs_engine *e, uint64_t line)
{
	return e->pow2 ? (uint32_t)(line & e->setmask) : (uint32_t)(line % e->nsets);
}

#endif
