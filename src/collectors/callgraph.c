/* callgraph: exact caller -> callee counts for every call instruction,
 * direct (a counter before the call) and indirect (each target counted
 * apart in the arc table, inline: runtime/arc_table.h). Calls through a
 * PLT stub count for the function the stub leads to. */
#include <reticle/collector.h>
#include "collectors/builtin.h"

static int callgraph_finish(const struct rtl_function_view *f, rtl_profile *p)
{
	int err = 0;
	for (size_t c = 0; c < f->ncalls && !err; c++) {
		const struct rtl_call_view *cv = &f->calls[c];
		const struct rtl_counter_view *n = rtl_counter_find(f->counters, f->ncounters,
								    RTL_POINT_CALL_BEFORE, cv->site);
		if (n && n->value && cv->callee >= 0)
			err = rtl_profile_add_call(p, f->id, cv->site, cv->callee, n->value);
	}
	/* by site then callee: targets in one function add up */
	for (size_t t = 0; t < f->ntargets && !err;) {
		const struct rtl_target_view *tv = &f->targets[t];
		uint64_t sum = 0;
		size_t u = t;
		for (; u < f->ntargets && f->targets[u].site == tv->site && f->targets[u].callee == tv->callee; u++)
			sum += f->targets[u].count;
		if (tv->callee >= 0 && sum)
			err = rtl_profile_add_call(p, f->id, tv->site, tv->callee, sum);
		t = u;
	}
	return err;
}

const struct rtl_collector collector_callgraph = {
	.name = "callgraph",
	.summary = "exact caller->callee counts of every call, direct and indirect",
	.plan = rtl_plan_count_calls,
	.finish = callgraph_finish,
};
