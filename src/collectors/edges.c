/* edges: exact taken and not-taken counts of every conditional branch,
 * from a counter on each of its two ways out (callgrind's jcnd lines, and
 * the input of profile-guided layout). */
#include <reticle/collector.h>
#include "collectors/builtin.h"

static int edges_finish(const struct rtl_function_view *f, rtl_profile *p)
{
	/* sorted by address then kind: a branch's taken counter, then its
	 * not-taken one */
	for (size_t i = 0; i + 1 < f->ncounters; i++) {
		const struct rtl_counter_view *t = &f->counters[i], *n = &f->counters[i + 1];
		if (t->kind != RTL_POINT_BRANCH_TAKEN || n->kind != RTL_POINT_BRANCH_NOT_TAKEN ||
		    t->addr != n->addr)
			continue;
		if (t->value || n->value) {
			int err = rtl_profile_add_branch(p, f->id, t->addr, t->value, n->value);
			if (err)
				return err;
		}
		i++;
	}
	return 0;
}

const struct rtl_collector collector_edges = {
	.name = "edges",
	.summary = "exact taken and not-taken counts of every conditional branch",
	.plan = rtl_plan_count_branches,
	.finish = edges_finish,
};
