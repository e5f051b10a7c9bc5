/* bbcount: exact executions per basic block, and from them instructions
 * executed per function and executions of every direct call site. */
#include <reticle/collector.h>
#include "collectors/builtin.h"

/* a counter at every block, and the iterations of rep string instructions
 * (valgrind counts each as an instruction executed) */
#define REP_METRIC "rep_iterations"   /* src/report/ knows it too (RPT_REP_METRIC) */
static int bbcount_plan(const struct rtl_function_cfg *cfg, rtl_plan *plan)
{
	static const struct rtl_snippet count = { .op = RTL_PRIM_COUNT };
	int err = rtl_plan_count_blocks(cfg, plan);
	for (size_t b = 0; b < cfg->nblocks && !err; b++)
		err = rtl_plan_add(plan, RTL_POINT_REP_ITERATIONS, cfg->blocks[b].addr, &count);
	return err;
}

static int bbcount_finish(const struct rtl_function_view *f, rtl_profile *p)
{
	uint64_t instrs = 0;
	int err = 0;

	for (size_t b = 0; b < f->nblocks && !err; b++) {
		const struct rtl_block_view *bv = &f->blocks[b];
		instrs += bv->count * bv->ninstrs + bv->rep_iterations;
		if (bv->count)
			err = rtl_profile_add_block(p, f->id, bv->addr, bv->ninstrs, bv->count);
		/* per block, for reports that count instructions one by one
		 * (--inline, the callgrind export's positions) */
		if (!err && bv->count && bv->rep_iterations)
			err = rtl_profile_add_metric(p, f->id, REP_METRIC, bv->addr, (double)bv->rep_iterations);
	}
	/* a call ends its block, so the block's count is the call's count */
	for (size_t c = 0; c < f->ncalls && !err; c++) {
		const struct rtl_call_view *cv = &f->calls[c];
		uint64_t n = f->blocks[cv->block].count;
		if (n && cv->callee >= 0)
			err = rtl_profile_add_call(p, f->id, cv->site, cv->callee, n);
	}
	return err ? err : rtl_profile_set_function_counts(p, f->id, RTL_HAVE_INSTRS, 0, instrs);
}

const struct rtl_collector collector_bbcount = {
	.name = "bbcount",
	.summary = "exact executions per basic block, instructions per function",
	.plan = bbcount_plan,
	.finish = bbcount_finish,
};
