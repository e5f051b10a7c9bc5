/* The Callgrind export's inclusive-cost estimate (src/report/callgraph.c)
 * on small graphs whose gprof-style answer is worked out by hand in the
 * comments, and on a call chain deep enough to overflow a recursive walk. */
#include <stdlib.h>
#include <reticle/error.h>
#include "report/callgraph.h"
#include "check.h"

static uint64_t self[8][CG_MAX_EVENTS];
static uint64_t entries[8];

static struct cg_graph graph(struct cg_arc *arcs, size_t narcs, size_t n)
{
	return (struct cg_graph){ .n = n, .nevents = 1,
				  .self = (const uint64_t (*)[CG_MAX_EVENTS])self,
				  .entries = entries, .narcs = narcs, .arcs = arcs };
}

static void reset(void)
{
	for (int i = 0; i < 8; i++)
		self[i][0] = self[i][1] = entries[i] = 0;
}

/* 0 -> 1 (x3) -> 2 (x6): single callers, so inclusive costs are exact. */
static void test_chain(void)
{
	struct cg_arc a[] = { { .from = 0, .to = 1, .count = 3 }, { .from = 1, .to = 2, .count = 6 } };
	struct cg_graph g;

	reset();
	self[0][0] = 1, self[1][0] = 10, self[2][0] = 100;
	entries[0] = 1, entries[1] = 3, entries[2] = 6;
	g = graph(a, 2, 3);
	CHECK_EQ(cg_estimate(&g), 0);
	CHECK_EQ(a[1].cost[0], 100);
	CHECK_EQ(a[0].cost[0], 110);
}

/* 0 and 1 both call 2 (once and three times): 2's cost of 40 splits 10/30.
 * 2 is entered 8 times, 4 from unknown callers (indirect calls): then the
 * known callers get only their share, 5 and 15. */
static void test_shared_callee(void)
{
	struct cg_arc a[] = { { .from = 0, .to = 2, .count = 1 }, { .from = 1, .to = 2, .count = 3 } };
	struct cg_graph g;

	reset();
	self[2][0] = 40;
	g = graph(a, 2, 3);
	CHECK_EQ(cg_estimate(&g), 0);     /* entries unknown: the arcs are all */
	CHECK_EQ(a[0].cost[0], 10);
	CHECK_EQ(a[1].cost[0], 30);
	entries[2] = 8;
	CHECK_EQ(cg_estimate(&g), 0);
	CHECK_EQ(a[0].cost[0], 5);
	CHECK_EQ(a[1].cost[0], 15);
}

/* m(0) -> a(1) x2; a <-> b(2) recursion (a->b x10, b->a x8); b -> leaf(3)
 * x5. The cycle {a, b} is one node: self 100 + 50, plus leaf's 10, all of
 * it reached from m's two calls (a's 10 entries less 8 from inside). The
 * calls inside the cycle carry 0. */
static void test_cycle(void)
{
	struct cg_arc a[] = {
		{ .from = 0, .to = 1, .count = 2 }, { .from = 1, .to = 2, .count = 10 },
		{ .from = 2, .to = 1, .count = 8 }, { .from = 2, .to = 3, .count = 5 },
		{ .from = 1, .to = 1, .count = 0 },
	};
	struct cg_graph g;

	reset();
	self[0][0] = 1, self[1][0] = 100, self[2][0] = 50, self[3][0] = 10;
	entries[0] = 1, entries[1] = 10, entries[2] = 10, entries[3] = 5;
	g = graph(a, 5, 4);
	CHECK_EQ(cg_estimate(&g), 0);
	CHECK_EQ(a[3].cost[0], 10);
	CHECK_EQ(a[1].cost[0], 0);
	CHECK_EQ(a[2].cost[0], 0);
	CHECK_EQ(a[4].cost[0], 0);
	CHECK_EQ(a[0].cost[0], 160);
}

/* Two events are estimated independently. */
static void test_two_events(void)
{
	struct cg_arc a[] = { { .from = 0, .to = 1, .count = 1 }, { .from = 2, .to = 1, .count = 1 } };
	struct cg_graph g;

	reset();
	self[1][0] = 7, self[1][1] = 2;
	g = graph(a, 2, 3);
	g.nevents = 2;
	CHECK_EQ(cg_estimate(&g), 0);
	CHECK_EQ(a[0].cost[0], 3);        /* 7 / 2, rounded down */
	CHECK_EQ(a[0].cost[1], 1);
}

/* A chain of 300,000 calls: the walk must not recurse on the C stack. */
static void test_deep(void)
{
	size_t n = 300000;
	struct cg_arc *a = calloc(n - 1, sizeof(*a));
	uint64_t (*s)[CG_MAX_EVENTS] = calloc(n, sizeof(*s));
	uint64_t *e = calloc(n, sizeof(*e));
	struct cg_graph g = { .n = n, .nevents = 1, .self = (const uint64_t (*)[CG_MAX_EVENTS])s,
			      .entries = e, .narcs = n - 1, .arcs = a };

	for (size_t i = 0; i < n; i++) {
		s[i][0] = 1;
		e[i] = 1;
		if (i + 1 < n)
			a[i] = (struct cg_arc){ .from = i, .to = i + 1, .count = 1 };
	}
	CHECK_EQ(cg_estimate(&g), 0);
	CHECK_EQ(a[0].cost[0], n - 1);
	CHECK_EQ(a[n - 2].cost[0], 1);
	/* Close the chain into one big cycle: every arc inside it costs 0. */
	a[n - 2].to = 0;
	CHECK_EQ(cg_estimate(&g), 0);
	CHECK_EQ(a[0].cost[0], 0);
	free(a);
	free(s);
	free(e);
}

int main(void)
{
	test_chain();
	test_shared_callee();
	test_cycle();
	test_two_events();
	test_deep();
	return CHECK_DONE();
}
