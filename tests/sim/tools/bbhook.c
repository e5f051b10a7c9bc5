/* The seed's basic-block counter (section 4.2) as a user tool: a call after
 * the last instruction of every block, found with the iterators, and a
 * trailer that prints the total. Used by bench/sim.sh to measure hooks. */
#include <inttypes.h>
#include <stdio.h>
#include <reticle/sim.h>

static uint64_t blocks;

static void countbb(struct rtl_sim *sim, const struct rtl_sim_insn *insn, void *user)
{
	blocks++;
}

static void printbb(struct rtl_sim *sim, void *user)
{
	fprintf(stderr, "bbhook: %" PRIu64 " blocks traversed\n", blocks);
}

int rtl_sim_tool_init(struct rtl_sim *sim, const char *args)
{
	for (const struct rtl_sim_proc *p = rtl_sim_first_proc(sim); p; p = rtl_sim_next_proc(sim, p))
		for (const struct rtl_sim_block *b = rtl_sim_first_block(sim, p); b; b = rtl_sim_next_block(sim, b))
			if (rtl_sim_add_call(sim, rtl_sim_last_insn(b), RTL_SIM_AFTER, countbb, NULL) < 0)
				return -1;
	return rtl_sim_add_trailer(sim, printbb, NULL);
}
