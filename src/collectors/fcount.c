/* fcount: exact calls per function, from a counter at every entry. */
#include <reticle/collector.h>
#include "collectors/builtin.h"

static int fcount_finish(const struct rtl_function_view *f, rtl_profile *p)
{
	return rtl_profile_set_function_counts(p, f->id, RTL_HAVE_CALLS, f->entries, 0);
}

const struct rtl_collector collector_fcount = {
	.name = "fcount",
	.summary = "exact calls per function",
	.plan = rtl_plan_count_entry,
	.finish = fcount_finish,
};
