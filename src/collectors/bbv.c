/* bbv: basic-block vectors per interval of N instructions, for SimPoint
 * (`reticle simpoint`), in valgrind exp-bbv's format: a counter and the
 * interval countdown at every block (engine/bbv.c writes the vectors). */
#include <reticle/collector.h>
#include "collectors/builtin.h"

const struct rtl_collector collector_bbv = {
	.name = "bbv",
	.summary = "basic-block vectors per --interval N instructions (exp-bbv's format), for SimPoint",
	.plan = rtl_plan_count_intervals,
	.timers = true,   /* the per-thread areas hold the countdowns */
};
