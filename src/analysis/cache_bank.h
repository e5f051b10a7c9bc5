/* The bank object, shared by cache_bank.c (building and driving the
 * engines) and cache_stats.c (reading counts back). The bank owns the
 * configurations, engines, consumers, streams and the attribution table. */
#ifndef RETICLE_ANALYSIS_CACHE_BANK_H
#define RETICLE_ANALYSIS_CACHE_BANK_H

#include <reticle/cachesim.h>
#include "cache_internal.h"

struct cfg_entry {
	rtl_cache_config cfg;
	struct cs_consumer *lvl[RTL_LEVELS];
};

struct rtl_cachesim {
	struct cfg_entry *cfgs;
	int ncfg;
	struct cs_engine **eng;
	int neng;
	struct cs_consumer **cons;
	int ncons;
	int built;
	size_t chunk;
	uint32_t *idx_i, *idx_d;  /* positions of fetches / data accesses in a chunk */
	size_t ni, nd;            /* and how many of each */
	struct cs_reuse *reuse;
	uint32_t reuse_line;
	int attr_cfg, attr_level;
	struct cs_attr attr;
	struct cs_engine *warm_filter;   /* rtl_cachesim_warm_lower's first level */
	int *warm_rep;                   /* each engine's representative in a warm-up */
	int warm_unsynced;               /* the others yet to take their state */
	int threads;                     /* asked for (rtl_cachesim_set_threads) */
	_Atomic int nomem;               /* a lower level's merge found no memory */
	struct cs_workers *workers;      /* NULL: every engine in the caller */
};

/* cache_workers.c: engines shared out among threads. Each engine gets its
 * worker's number (cs_engine.worker); NULL (nothing started) when the
 * bank does not split. */
struct cs_workers *cs_workers_start(rtl_cachesim *b, int threads);
/* Runs RUN(B, A, N, W) for every worker W at once (the caller is worker
 * 0), returning when all are done. */
void cs_workers_run(struct cs_workers *w, rtl_cachesim *b, const rtl_access *a, size_t n,
		    void (*run)(rtl_cachesim *b, const rtl_access *a, size_t n, int worker));
void cs_workers_stop(struct cs_workers *w);

void cs_warm_sync(rtl_cachesim *b);

int cs_bank_build(rtl_cachesim *b);
int cs_kinds_valid(const rtl_access *a, size_t n);

#endif
