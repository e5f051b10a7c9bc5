/* shim: SHIM's software signals (seed 004). Each function's copy stores
 * its identity in its thread's signal slot at its entry and again after
 * each of its calls returns (one store, no call), and an observer thread
 * of reticle on another core reads every thread's slot every few hundred
 * cycles (src/sample/shim.c): time shares per function from samples, at
 * a rate no interrupt-driven sampler reaches. */
#include <reticle/collector.h>
#include "collectors/builtin.h"

const struct rtl_collector collector_shim = {
	.name = "shim",
	.summary = "where time goes: an observer thread reads what each thread runs every ~1,000 cycles (SHIM; shim:PERIOD)",
	.plan = rtl_plan_signal_function,
	.timers = true,   /* the per-thread areas the signal lives in */
};
