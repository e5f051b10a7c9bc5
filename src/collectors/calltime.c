/* calltime: per function and thread, calls and wall-clock time, inclusive
 * and exclusive of the timed functions it called, from a timer started at
 * the function's entry and stopped at its returns (reticle/probe.h says how
 * entries and exits pair under recursion, tail calls, longjmp and
 * exceptions); and the same per calling context, the path of timed calls
 * that led to it. */
#include <reticle/collector.h>
#include "collectors/builtin.h"

static int calltime_finish(const struct rtl_function_view *f, rtl_profile *p)
{
	int err = 0;
	for (size_t i = 0; i < f->ntimers && !err; i++) {
		const struct rtl_timer_view *t = &f->timers[i];
		err = rtl_profile_add_time(p, f->id, t->tid, t->calls, t->inclusive, t->exclusive);
	}
	for (size_t i = 0; i < f->ncontexts && !err; i++) {
		const struct rtl_context_view *c = &f->contexts[i];
		rtl_profile_context row = { c->id, c->parent, f->id, c->tid, c->calls, c->inclusive, c->exclusive };
		err = rtl_profile_add_context(p, &row);
	}
	return err;
}

const struct rtl_collector collector_calltime = {
	.name = "calltime",
	.summary = "calls and time per function and thread, inclusive and exclusive (leaves: a sample of calls timed; calltime:all times every one)",
	.plan = rtl_plan_time_function,
	.finish = calltime_finish,
	.timers = true,
};
