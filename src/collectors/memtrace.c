/* memtrace: the data address of every load and store of the program,
 * recorded inline into per-thread buffers (RTL_POINT_MEMORY) and simulated
 * through the session's cache configurations as reticle drains them
 * (engine/memtrace.c writes the results: accesses and misses per
 * instruction as metrics, each configuration's totals as meta). */
#include <reticle/collector.h>
#include "collectors/builtin.h"

/* The records, and the interval countdown at every block: --sample
 * periodic:ON:OFF switches tracing on and off at its ends (without
 * --sample it never ends). */
static int memtrace_plan(const struct rtl_function_cfg *cfg, rtl_plan *plan)
{
	static const struct rtl_snippet down = { .op = RTL_PRIM_COUNTDOWN };
	int err = rtl_plan_trace_memory(cfg, plan);
	for (size_t b = 0; b < cfg->nblocks && !err; b++)
		err = rtl_plan_add(plan, RTL_POINT_BLOCK, cfg->blocks[b].addr, &down);
	return err;
}

const struct rtl_collector collector_memtrace = {
	.name = "memtrace",
	.summary = "data addresses of every load and store, through a bank of simulated caches",
	.plan = memtrace_plan,
	.timers = true,   /* the per-thread areas hold the buffers */
};
