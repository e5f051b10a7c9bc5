/* Cache simulation: a bank of cache hierarchies driven by one pass over
 * buffered memory accesses, plus reuse distances (fully-associative LRU at
 * every size) and trace-file readers.
 *
 * Ownership: rtl_cachesim_create() returns a bank owned by the caller and
 * freed by rtl_cachesim_destroy(). Configurations are copied into the bank by
 * rtl_cachesim_add(); the access arrays given to rtl_cachesim_push() stay the
 * caller's and are not kept. rtl_trace_reader objects are owned by the caller
 * (rtl_trace_open / rtl_trace_close). Conventions: docs/cachesim.md. */
#ifndef RETICLE_CACHESIM_H
#define RETICLE_CACHESIM_H

#include <reticle/api.h>

#include <stddef.h>
#include <stdint.h>

/* What an access does. MODIFY is a read then a write of the same bytes
 * (valgrind's 'M'). WRITEBACK only appears in lower levels' statistics. */
enum rtl_access_kind {
	RTL_ACC_LOAD,
	RTL_ACC_STORE,
	RTL_ACC_MODIFY,
	RTL_ACC_IFETCH,
	RTL_ACC_WRITEBACK,
	RTL_ACC_KINDS
};

/* One memory access as a collector buffers it. */
typedef struct rtl_access {
	uint64_t addr;     /* first byte touched */
	uint64_t iaddr;    /* address of the instruction (0 when unknown) */
	uint32_t size;     /* bytes, >= 1 */
	uint32_t kind;     /* enum rtl_access_kind (LOAD..IFETCH) */
} rtl_access;

enum rtl_repl { RTL_REPL_LRU, RTL_REPL_FIFO, RTL_REPL_RANDOM, RTL_REPL_PLRU };

/* What a store does. NONE is cachegrind's model: a store is looked up and
 * allocated like a load and never produces traffic of its own below. */
enum rtl_write_policy { RTL_WRITE_BACK, RTL_WRITE_THROUGH, RTL_WRITE_NONE };

/* Which levels a hierarchy has: L1 split into I and D, or unified; then up
 * to two unified levels. Index into rtl_cache_config.level[]. */
enum rtl_cache_level_id { RTL_L1I, RTL_L1D, RTL_L1, RTL_L2, RTL_L3, RTL_LEVELS };

/* One level. A zeroed level with present, size, assoc and line set is the
 * usual cache: LRU, write-back, write-allocate. */
typedef struct rtl_cache_level {
	int present;
	uint64_t size;          /* bytes */
	uint32_t assoc;         /* ways; size / (line * assoc) sets */
	uint32_t line;          /* bytes, a power of two */
	int repl;               /* enum rtl_repl */
	int write;              /* enum rtl_write_policy */
	int no_write_allocate;  /* store misses leave the line out (0: they load it) */
} rtl_cache_level;

/* A line-crossing access: SPLIT makes one reference per line touched;
 * ONCE (cachegrind) counts one access that misses if any line misses. */
enum rtl_cross_mode { RTL_CROSS_SPLIT, RTL_CROSS_ONCE };

typedef struct rtl_cache_config {
	char name[96];
	rtl_cache_level level[RTL_LEVELS];
	int cross;              /* enum rtl_cross_mode */
	int modify_as_load;     /* count MODIFY as one load (cachegrind) */
	uint32_t max_data_size; /* clamp data access sizes (cachegrind: 16); 0 = no */
	int inclusive;          /* lower levels back-invalidate upper ones */
	uint64_t seed;          /* for RTL_REPL_RANDOM */
} rtl_cache_config;

/* Parses a configuration such as
 *   "l1i=32k:8:64,l1d=32k:8:64:lru:wb,l2=1m:16:64"  or
 *   "cachegrind,l1i=32768:8:64,l1d=32768:8:64,ll=8m:16:64"
 * (grammar in docs/cachesim.md). On error returns -RTL_ERR_BAD_OPTION and
 * writes a message naming the parameter into ERR. */
RTL_API int rtl_cache_config_parse(const char *spec, rtl_cache_config *out, char *err, size_t errlen);

/* Checks sizes, ways, line sizes and policies; same error convention. */
RTL_API int rtl_cache_config_check(const rtl_cache_config *cfg, char *err, size_t errlen);

typedef struct rtl_cachesim rtl_cachesim;

RTL_API int rtl_cachesim_create(rtl_cachesim **out);
RTL_API void rtl_cachesim_destroy(rtl_cachesim *b);

/* Adds a hierarchy; returns its index (>= 0) or a negative error. Must be
 * called before the first push. */
RTL_API int rtl_cachesim_add(rtl_cachesim *b, const rtl_cache_config *cfg);

/* Enables the reuse-distance histogram over accesses of LINE bytes
 * (fully-associative LRU at every size). Before the first push. */
RTL_API int rtl_cachesim_enable_reuse(rtl_cachesim *b, uint32_t line);

/* Attributes accesses and misses of level LEVEL of hierarchy CFG to the
 * instruction addresses of the accesses. Before the first push. */
RTL_API int rtl_cachesim_enable_attribution(rtl_cachesim *b, int cfg, int level);
/* The same for misses only (rtl_instr_cost's access then counts only the
 * misses' accesses): hits stay on the simulator's fast path, where
 * attributing them takes every access off it (about 2.5x slower). */
RTL_API int rtl_cachesim_enable_miss_attribution(rtl_cachesim *b, int cfg, int level);

/* Runs the bank's simulation on up to N threads (the caller's among them):
 * its engines fall into independent groups (a first level with the levels
 * it feeds; hierarchies that share a first level, one group), shared out
 * by their expected cost, every pushed chunk simulated by all at once.
 * Counts do not change. Before the first push; N of 1 (the default) runs
 * everything in the caller. Returns 0 or -EINVAL/-EBUSY. */
RTL_API int rtl_cachesim_set_threads(rtl_cachesim *b, int n);

/* Simulates N accesses through every hierarchy of the bank. -EINVAL (and
 * nothing simulated) if an access has a kind other than LOAD..IFETCH. */
RTL_API int rtl_cachesim_push(rtl_cachesim *b, const rtl_access *acc, size_t n);
/* Warms the levels below the first with N accesses, for the long warm-up
 * of sampled simulation, at about the cost of simulating one first level:
 * they pass one first-level filter (the first configuration's with a
 * lower level) whose misses update every lower level's LRU state. No
 * count changes and the first levels keep their state (warm those with
 * rtl_cachesim_push). -ENOTSUP when a lower level is not LRU with
 * write-allocate or a hierarchy is inclusive (push those). */
RTL_API int rtl_cachesim_warm_lower(rtl_cachesim *b, const rtl_access *acc, size_t n);

typedef struct rtl_cache_stats {
	uint64_t access[RTL_ACC_KINDS];  /* by kind (MODIFY stays 0: see docs) */
	uint64_t miss[RTL_ACC_KINDS];
	uint64_t compulsory;             /* misses on lines never seen by this level */
	uint64_t writebacks;             /* dirty lines written to the next level */
} rtl_cache_stats;

RTL_API int rtl_cachesim_count(const rtl_cachesim *b);
RTL_API const rtl_cache_config *rtl_cachesim_config(const rtl_cachesim *b, int cfg);
RTL_API int rtl_cachesim_stats(const rtl_cachesim *b, int cfg, int level, rtl_cache_stats *out);

/* Number of simulators actually run (after sharing): for reports/benches. */
RTL_API int rtl_cachesim_engines(const rtl_cachesim *b);

/* Reuse distances: HIST[k] counts accesses whose distance d (distinct lines
 * touched since the previous access to the same line) has k = 0 for d = 0,
 * else k = 1 + floor(log2(d)); COLD counts first accesses. */
enum { RTL_REUSE_BUCKETS = 48 };
typedef struct rtl_reuse_hist {
	uint32_t line;
	uint64_t total, cold;
	uint64_t bucket[RTL_REUSE_BUCKETS];
} rtl_reuse_hist;
RTL_API int rtl_cachesim_reuse(const rtl_cachesim *b, rtl_reuse_hist *out);
/* Misses of a fully-associative LRU cache of LINES lines (LINES a power of
 * two) computed from the histogram. */
RTL_API uint64_t rtl_reuse_misses(const rtl_reuse_hist *h, uint64_t lines);

/* Per-instruction attribution (see enable_attribution): calls FN for every
 * instruction address in ascending order. */
typedef struct rtl_instr_cost {
	uint64_t iaddr;
	uint64_t access, miss;
} rtl_instr_cost;
RTL_API int rtl_cachesim_foreach_instr(const rtl_cachesim *b,
			       int (*fn)(const rtl_instr_cost *c, void *user), void *user);
/* Sums the attributed costs into N functions given as sorted, disjoint
 * [start, end) ranges; OUT[i] receives function i's totals. */
RTL_API int rtl_cachesim_sum_functions(const rtl_cachesim *b, const uint64_t (*ranges)[2],
			       size_t n, rtl_instr_cost *out);

/* Trace files: Dinero IV extended din ("r 1000 4"), classic din ("0 1000"),
 * valgrind lackey --trace-mem=yes. */
enum rtl_trace_format { RTL_TRACE_AUTO, RTL_TRACE_DIN, RTL_TRACE_DIN_CLASSIC, RTL_TRACE_LACKEY };
typedef struct rtl_trace_reader rtl_trace_reader;

/* PATH NULL or "-" reads stdin. */
RTL_API int rtl_trace_open(const char *path, int format, rtl_trace_reader **out);
/* Fills up to MAX accesses; returns how many (0 at the end) or a negative
 * error (-RTL_ERR_BAD_INPUT: rtl_trace_error() names the line). */
RTL_API long rtl_trace_read(rtl_trace_reader *r, rtl_access *buf, size_t max);
RTL_API const char *rtl_trace_error(const rtl_trace_reader *r);
RTL_API uint64_t rtl_trace_line(const rtl_trace_reader *r);
RTL_API void rtl_trace_close(rtl_trace_reader *r);

#endif
