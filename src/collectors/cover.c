/* cover: which functions, blocks and (through DWARF, in the report) source
 * lines ran: a counter at every block and at every entry, as bbcount and
 * fcount count them (shared with them when they run too). Every block of a
 * function that ran is written, those that did not run with count 0, so
 * that block coverage has its denominator; `reticle report --format lcov`
 * turns blocks into lines. */
#include <reticle/collector.h>
#include "collectors/builtin.h"

static int cover_plan(const struct rtl_function_cfg *cfg, rtl_plan *plan)
{
	int err = rtl_plan_count_entry(cfg, plan);
	return err ? err : rtl_plan_count_blocks(cfg, plan);
}

static int cover_finish(const struct rtl_function_view *f, rtl_profile *p)
{
	int err = 0;

	for (size_t b = 0; b < f->nblocks && !err; b++)
		err = rtl_profile_add_block(p, f->id, f->blocks[b].addr, f->blocks[b].ninstrs,
					    f->blocks[b].count);
	return err ? err : rtl_profile_set_function_counts(p, f->id, RTL_HAVE_CALLS, f->entries, 0);
}

const struct rtl_collector collector_cover = {
	.name = "cover",
	.summary = "functions, blocks and source lines executed (report --format lcov)",
	.plan = cover_plan,
	.finish = cover_finish,
};
