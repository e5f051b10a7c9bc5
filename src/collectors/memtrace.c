/* memtrace: the data address of every load and store of the program,
 * recorded inline into per-thread buffers (RTL_POINT_MEMORY) and simulated
 * through the session's cache configurations as reticle drains them
 * (engine/memtrace.c writes the results: accesses and misses per
 * instruction as metrics, each configuration's totals as meta). */
#include <reticle/collector.h>
#include "collectors/builtin.h"

const struct rtl_collector collector_memtrace = {
	.name = "memtrace",
	.summary = "data addresses of every load and store, through a bank of simulated caches",
	.plan = rtl_plan_trace_memory,
	.timers = true,   /* the per-thread areas hold the buffers */
};
