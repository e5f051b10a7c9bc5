/* The probe plan: points checked against the function's cfg, duplicates
 * of two collectors merged, run-time addresses, and what is refused. */
#include <errno.h>
#include <string.h>
#include <reticle/collector.h>
#include <reticle/error.h>
#include "check.h"
#include "probe/plan.h"

static const struct rtl_snippet count = { .op = RTL_PRIM_COUNT };
static int seen_err[64];   /* probe_set_init tries each plan too */
static int nseen;

/* tries the bad points first (none may land in the plan), then counts */
static int picky_plan(const struct rtl_function_cfg *cfg, rtl_plan *plan)
{
	static const struct rtl_snippet timer = { .op = RTL_PRIM_TIMER_START };
	seen_err[nseen++] = rtl_plan_add(plan, RTL_POINT_ENTRY, cfg->addr + 1, &count);
	seen_err[nseen++] = rtl_plan_add(plan, RTL_POINT_BLOCK, cfg->blocks[0].addr + 2, &count);
	/* block 0 ends in a fall-through: no branch there */
	seen_err[nseen++] = rtl_plan_add(plan, RTL_POINT_BRANCH_TAKEN, cfg->blocks[0].last, &count);
	seen_err[nseen++] = rtl_plan_add(plan, RTL_POINT_MEMORY, cfg->blocks[0].addr, &count);
	seen_err[nseen++] = rtl_plan_add(plan, RTL_POINT_BLOCK, cfg->blocks[0].addr, &timer);
	/* no call anywhere: no call counter, no indirect target */
	seen_err[nseen++] = rtl_plan_add(plan, RTL_POINT_CALL_BEFORE, cfg->blocks[1].last, &count);
	seen_err[nseen++] = rtl_plan_add(plan, RTL_POINT_INDIRECT_TARGET, cfg->blocks[2].last, &count);
	seen_err[nseen++] = rtl_plan_count_calls(cfg, plan);   /* plans nothing: 0 */
	int err = rtl_plan_count_entry(cfg, plan);
	return err ? err : rtl_plan_count_branches(cfg, plan);
}

static int blocks_plan(const struct rtl_function_cfg *cfg, rtl_plan *plan)
{
	int err = rtl_plan_count_blocks(cfg, plan);
	return err ? err : rtl_plan_count_entry(cfg, plan);
}

static int tracer_plan(const struct rtl_function_cfg *cfg, rtl_plan *plan)
{
	static const struct rtl_snippet append = { .op = RTL_PRIM_BUFFER_APPEND };
	/* not at a block's start, not at another point */
	if (rtl_plan_add(plan, RTL_POINT_MEMORY, cfg->blocks[0].addr + 1, &append) != -EINVAL ||
	    rtl_plan_add(plan, RTL_POINT_BLOCK, cfg->blocks[0].addr, &append) != -RTL_ERR_UNSUPPORTED)
		return -EIO;
	return rtl_plan_trace_memory(cfg, plan);
}

static const struct rtl_collector picky = { .name = "picky", .plan = picky_plan };
static const struct rtl_collector tracer = { .name = "tracer", .plan = tracer_plan, .timers = true };
static const struct rtl_collector blocks = { .name = "blocks", .plan = blocks_plan };
static const struct rtl_collector none = { .name = "none" };

int main(void)
{
	const uint64_t bias = 0x7f0000000000ull;
	/* run-time addresses, as the relocator gives them */
	const struct rtl_cfg_block b[] = {
		{ bias + 0x1000, bias + 0x1008, 3, RTL_END_FALL, 0 },
		{ bias + 0x100c, bias + 0x1010, 2, RTL_END_BRANCH, bias + 0x1000 },
		{ bias + 0x1012, bias + 0x1012, 1, RTL_END_RETURN, 0 },
	};
	const struct rtl_function_cfg cfg = { NULL, NULL, bias + 0x1000, 0x13, b, 3 };
	const struct rtl_collector *both[] = { &picky, &blocks, &none };
	struct probe_set set;
	struct probe_plan plan = { 0 };

	probe_set_init(&set, both, 3);
	CHECK(!set.memory);
	nseen = 0;   /* the set tried each plan on a made-up function */
	CHECK_EQ(probe_plan_build(&set, &cfg, "m", "f", bias, &plan), 0);
	CHECK_EQ(nseen, 8);
	CHECK_EQ(seen_err[0], -EINVAL);
	CHECK_EQ(seen_err[1], -EINVAL);
	CHECK_EQ(seen_err[2], -EINVAL);
	CHECK_EQ(seen_err[3], -RTL_ERR_UNSUPPORTED);
	CHECK_EQ(seen_err[4], -RTL_ERR_UNSUPPORTED);
	CHECK_EQ(seen_err[5], -EINVAL);
	CHECK_EQ(seen_err[6], -EINVAL);
	CHECK_EQ(seen_err[7], 0);
	/* one entry (both asked), three blocks, two ways out of the branch */
	CHECK_EQ((long)plan.n, 6);
	CHECK(probe_plan_has(&plan, RTL_POINT_ENTRY, bias + 0x1000));
	CHECK(probe_plan_has(&plan, RTL_POINT_BLOCK, bias + 0x100c));
	CHECK(probe_plan_has(&plan, RTL_POINT_BRANCH_TAKEN, bias + 0x1010));
	CHECK(probe_plan_has(&plan, RTL_POINT_BRANCH_NOT_TAKEN, bias + 0x1010));
	CHECK(!probe_plan_has(&plan, RTL_POINT_BRANCH_TAKEN, 0x1010));
	for (size_t i = 1; i < plan.n; i++)
		CHECK(plan.pts[i - 1].addr < plan.pts[i].addr ||
		      (plan.pts[i - 1].addr == plan.pts[i].addr && plan.pts[i - 1].kind < plan.pts[i].kind));

	/* the set's key names the collectors: another set, another key */
	struct probe_set other;
	probe_set_init(&other, both, 2);
	CHECK(strcmp(set.key, other.key) != 0);

	/* memory tracing: at blocks only, with the buffer primitive only; a
	 * set that traces memory says so */
	const struct rtl_collector *tr[] = { &tracer };
	probe_set_init(&other, tr, 1);
	CHECK(other.memory);
	CHECK_EQ(probe_plan_build(&other, &cfg, "m", "f", bias, &plan), 0);
	CHECK_EQ((long)plan.n, 3);
	CHECK(probe_plan_has_op(&plan, RTL_POINT_MEMORY, bias + 0x1012, RTL_PRIM_BUFFER_APPEND));
	probe_plan_free(&plan);
	return CHECK_DONE();
}
