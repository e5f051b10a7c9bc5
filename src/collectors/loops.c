/* loops: the iterations of every loop, counted on its back-edges (a branch
 * or jump back to a block at or before it in the same function,
 * RTL_POINT_BACK_EDGE) as the times each one jumps; written as the metric
 * "loop_iterations" of the function at the back-edge's address, which
 * `reticle report` lists per loop with its source line. */
#include <reticle/collector.h>
#include "collectors/builtin.h"

#define LOOP_METRIC "loop_iterations"   /* src/report/ knows it too (RPT_LOOP_METRIC) */

static int loops_finish(const struct rtl_function_view *f, rtl_profile *p)
{
	for (size_t i = 0; i < f->ncounters; i++) {
		const struct rtl_counter_view *c = &f->counters[i];
		if (c->kind != RTL_POINT_BACK_EDGE || !c->value)
			continue;
		int err = rtl_profile_add_metric(p, f->id, LOOP_METRIC, c->addr, (double)c->value);
		if (err)
			return err;
	}
	return 0;
}

const struct rtl_collector collector_loops = {
	.name = "loops",
	.summary = "exact iterations of every loop (the times each back-edge jumps)",
	.plan = rtl_plan_count_back_edges,
	.finish = loops_finish,
};
