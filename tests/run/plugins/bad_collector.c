/* Collector plug-ins that reticle run must refuse before the program
 * starts, one fault each (chosen by a macro). */
#include <reticle/collector.h>

static int plan(const struct rtl_function_cfg *cfg, rtl_plan *plan)
{
	static const struct rtl_snippet count = { .op = RTL_PRIM_COUNT }, start = { .op = RTL_PRIM_TIMER_START };
	(void)count, (void)start, (void)cfg;
#if defined(FAULT_UNSUPPORTED)      /* a point kind reticle does not implement */
	return rtl_plan_add(plan, RTL_POINT_MEMORY, cfg->blocks[0].addr, &count);
#elif defined(FAULT_NO_POINT)       /* a branch counter where no branch is */
	return rtl_plan_add(plan, RTL_POINT_BRANCH_TAKEN, cfg->addr + cfg->size, &count);
#elif defined(FAULT_TIMERS)         /* timers, without saying so */
	return rtl_plan_add(plan, RTL_POINT_ENTRY, cfg->addr, &start);
#else
	return rtl_plan_add(plan, RTL_POINT_ENTRY, cfg->addr, &count);
#endif
}

static const struct rtl_collector c __attribute__((used)) = {
#ifdef FAULT_NAME
	.name = FAULT_NAME,
#else
	.name = "bad_collector",
#endif
	.summary = "refused",
	.plan = plan,
};

#ifndef FAULT_NO_ENTRY
const struct rtl_collector *rtl_collector_entry(int api, const char *args)
{
	(void)api;
#ifdef FAULT_REFUSE
	(void)args;
	return 0;
#else
	return args[0] ? 0 : &c;
#endif
}
#else
const struct rtl_collector *some_other_symbol(void) { return &c; }
#endif
