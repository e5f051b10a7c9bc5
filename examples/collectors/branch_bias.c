/* branch_bias: a collector built outside reticle, as a shared object.
 *
 * For every conditional branch that ran it writes two measures: how many
 * times it ran ("executions") and how many of those went the way it goes
 * less often ("against_majority": what a perfect static predictor, one
 * that knows each branch's usual direction, would get wrong). Summed per
 * function by `reticle report`, they show where branches are hard to lay
 * out or predict.
 *
 *   cc -shared -fPIC -I RETICLE_SOURCE/include -o branch_bias.so branch_bias.c
 *   reticle run --collector ./branch_bias.so -o p.db -- ./prog
 *   reticle run --collector ./branch_bias.so:min=1000 ...  (branches run 1000 times or more)
 *   reticle report p.db
 *
 * It plans with the public probe API (reticle/probe.h), reads its counters
 * back in finish(), and writes with rtl_profile_add_metric: everything a
 * built-in collector can do. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <reticle/collector.h>

static unsigned long long min_executions = 1;
static char key[32];

static int bias_plan(const struct rtl_function_cfg *cfg, rtl_plan *plan)
{
	/* a counter on each way out of every conditional branch */
	return rtl_plan_count_branches(cfg, plan);
}

static int bias_finish(const struct rtl_function_view *f, rtl_profile *p)
{
	/* counters are sorted by address, then point kind: a branch's taken
	 * counter comes just before its not-taken one */
	for (size_t i = 0; i + 1 < f->ncounters; i++) {
		const struct rtl_counter_view *t = &f->counters[i], *n = &f->counters[i + 1];
		if (t->kind != RTL_POINT_BRANCH_TAKEN || n->kind != RTL_POINT_BRANCH_NOT_TAKEN ||
		    t->addr != n->addr)
			continue;
		i++;
		uint64_t runs = t->value + n->value;
		if (!runs || runs < min_executions)
			continue;
		uint64_t against = t->value < n->value ? t->value : n->value;
		int err = rtl_profile_add_metric(p, f->id, "executions", t->addr, (double)runs);
		if (!err)
			err = rtl_profile_add_metric(p, f->id, "against_majority", t->addr, (double)against);
		if (err)
			return err;
	}
	return 0;
}

static const struct rtl_collector branch_bias = {
	.name = "branch_bias",
	.summary = "conditional branches that go against their usual direction",
	.plan = bias_plan,
	.finish = bias_finish,
	.plan_key = key,
};

const struct rtl_collector *rtl_collector_entry(int api, const char *args)
{
	if (api != RTL_COLLECTOR_API) {
		fprintf(stderr, "branch_bias: built for collector API %d, reticle has %d\n",
			RTL_COLLECTOR_API, api);
		return NULL;
	}
	if (*args) {
		char *end;
		if (strncmp(args, "min=", 4) || !args[4] ||
		    (min_executions = strtoull(args + 4, &end, 10), *end)) {
			fprintf(stderr, "branch_bias: unknown arguments '%s' (expected min=N)\n", args);
			return NULL;
		}
	}
	/* the plans do not depend on min=, only finish() does: no key needed,
	 * but a plug-in whose plans did would spell its arguments here */
	snprintf(key, sizeof(key), "v1");
	return &branch_bias;
}
