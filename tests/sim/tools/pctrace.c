/* A user tool for tests: prints the address of every executed instruction
 * (hooked by name for every instruction of the description) to the file
 * named by its argument, and the count of 'addi' executions (the seed's
 * AddCallFuncbyName example) to stderr in a trailer. */
#include <stdio.h>
#include <string.h>
#include <reticle/sim.h>

static FILE *out;
static unsigned long long addi;

static void trace(struct rtl_sim *sim, const struct rtl_sim_insn *insn, void *user)
{
	fprintf(out, "%llx\n", (unsigned long long)rtl_sim_insn_addr(insn));
}

static void count_addi(struct rtl_sim *sim, const struct rtl_sim_insn *insn, void *user)
{
	addi++;
}

static void report(struct rtl_sim *sim, void *user)
{
	fprintf(stderr, "pctrace: addi %llu\n", addi);
	if (out)
		fclose(out);
}

int rtl_sim_tool_init(struct rtl_sim *sim, const char *args)
{
	static const char *const names[] = { "add", "addi", "c.addi", "c.li", "c.mv", "c.ldsp", "c.sdsp", "ld", "sd", 0 };
	(void)names;
	out = fopen(*args ? args : "/dev/null", "w");
	if (!out)
		return -1;
	/* every instruction: hook by address of nothing is impossible before the
	 * program runs, so hook every name the description defines */
	
	const char *const *all;
	int n = rtl_sim_insn_names(sim, &all);
	for (int i = 0; i < n; i++)
		rtl_sim_add_call_by_name(sim, all[i], RTL_SIM_BEFORE, trace, NULL);
	rtl_sim_add_call_by_name(sim, "addi", RTL_SIM_AFTER, count_addi, NULL);
	return rtl_sim_add_trailer(sim, report, NULL);
}
