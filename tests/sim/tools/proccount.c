/* A user tool: counts the entries of the procedure named by its argument
 * (rtl_sim_add_proc_call) and the executions of its first block's last
 * instruction (rtl_sim_add_block_call, AFTER); prints "NAME N" at the end. */
#include <stdio.h>
#include <reticle/sim.h>

static const char *name;
static unsigned long long entries, block_ends;

static void entered(struct rtl_sim *sim, const struct rtl_sim_insn *insn, void *user) { entries++; }
static void block_end(struct rtl_sim *sim, const struct rtl_sim_insn *insn, void *user) { block_ends++; }

static void report(struct rtl_sim *sim, void *user)
{
	fprintf(stderr, "%s %llu\nfirst block ends %llu\n", name, entries, block_ends);
}

int rtl_sim_tool_init(struct rtl_sim *sim, const char *args)
{
	const struct rtl_sim_proc *p = rtl_sim_find_proc(sim, args);
	if (!p)
		return -1;
	name = args;
	if (rtl_sim_add_proc_call(sim, p, RTL_SIM_AFTER, entered, NULL) != -95 /* ENOTSUP */)
		return -1;
	if (rtl_sim_add_proc_call(sim, p, RTL_SIM_BEFORE, entered, NULL) < 0 ||
	    rtl_sim_add_block_call(sim, rtl_sim_first_block(sim, p), RTL_SIM_AFTER, block_end, NULL) < 0)
		return -1;
	return rtl_sim_add_trailer(sim, report, NULL);
}
