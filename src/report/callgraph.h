/* Internal to src/report/: gprof-style estimates of the inclusive cost of
 * each call arc, from exact self costs and exact call counts.
 *
 * A profile knows how often each call site ran and what each function cost
 * by itself, not what each call cost. As gprof does, a callee's inclusive
 * cost is shared among its callers by their share of its entries, and the
 * strongly connected components of the call graph (recursion) are one node:
 * calls inside a component carry no cost, and a component's cost reaches
 * callers outside it. Self costs and call counts stay exact. */
#ifndef RETICLE_REPORT_CALLGRAPH_H
#define RETICLE_REPORT_CALLGRAPH_H

#include <stddef.h>
#include <stdint.h>

#define CG_MAX_EVENTS 3

struct cg_arc {
	size_t from, to;                 /* function indices */
	uint64_t site, count;
	uint64_t cost[CG_MAX_EVENTS];    /* out: estimated inclusive cost */
};

/* Filled by the caller; owned by the caller. */
struct cg_graph {
	size_t n;                        /* functions */
	int nevents;
	const uint64_t (*self)[CG_MAX_EVENTS];  /* exact self cost per function */
	const uint64_t *entries;         /* entries per function, 0 if unknown */
	size_t narcs;
	struct cg_arc *arcs;
};

/* Sets ARCS[i].cost for every arc. 0 or -ENOMEM. */
int cg_estimate(struct cg_graph *g);

#endif
