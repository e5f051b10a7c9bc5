/* A cache bank's results in a profile (bank_profile.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include "analysis/bank_profile.h"

const char *const bank_level_names[RTL_LEVELS] = { "l1i", "l1d", "l1", "l2", "l3" };

struct attr {
	rtl_profile *prof;
	int64_t (*function_of)(uint64_t insn, uint64_t *site, void *ctx);
	void *ctx;
	int err;
};

static int add_misses(const rtl_instr_cost *c, void *user)
{
	struct attr *a = user;
	uint64_t site;
	int64_t id = c->miss ? a->function_of(c->iaddr >> 1, &site, a->ctx) : -1;
	if (id >= 0)
		a->err = rtl_profile_add_metric(a->prof, id, c->iaddr & 1 ? "mem_misses_write" : "mem_misses_read", site,
						(double)c->miss);
	return a->err;
}

int bank_profile_write(const rtl_cachesim *bank, rtl_profile *prof,
		       int64_t (*function_of)(uint64_t insn, uint64_t *site, void *ctx), void *ctx)
{
	struct attr a = { prof, function_of, ctx, 0 };
	int err = 0;
	if (rtl_cachesim_count(bank) > 0)
		err = rtl_cachesim_foreach_instr(bank, add_misses, &a) ? a.err ? a.err : -EIO : a.err;
	char key[160], val[256];
	for (int c = 0; !err && c < rtl_cachesim_count(bank); c++) {
		const rtl_cache_config *cfg = rtl_cachesim_config(bank, c);
		for (int l = 0; l < RTL_LEVELS && !err; l++) {
			rtl_cache_stats st;
			/* no instruction fetches are traced: L1I would say nothing */
			if (l == RTL_L1I || !cfg->level[l].present || rtl_cachesim_stats(bank, c, l, &st))
				continue;
			snprintf(key, sizeof(key), "memtrace_cache_%d_%s", c, bank_level_names[l]);
			snprintf(val, sizeof(val), "%s: loads %" PRIu64 " %" PRIu64 " stores %" PRIu64 " %" PRIu64, cfg->name,
				 st.access[RTL_ACC_LOAD], st.miss[RTL_ACC_LOAD], st.access[RTL_ACC_STORE],
				 st.miss[RTL_ACC_STORE]);
			err = rtl_profile_set_meta(prof, key, val);
		}
	}
	return err;
}
