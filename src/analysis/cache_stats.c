/* Reading a bank back: statistics per level, reuse distances, and the
 * per-instruction attribution table. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <reticle/cachesim.h>
#include "cache_bank.h"
#include "reuse.h"

int rtl_cachesim_count(const rtl_cachesim *b)
{
	return b->ncfg;
}

const rtl_cache_config *rtl_cachesim_config(const rtl_cachesim *b, int cfg)
{
	return cfg >= 0 && cfg < b->ncfg ? &b->cfgs[cfg].cfg : NULL;
}

int rtl_cachesim_engines(const rtl_cachesim *b)
{
	return b->neng;
}

int rtl_cachesim_stats(const rtl_cachesim *b, int cfg, int level, rtl_cache_stats *out)
{
	memset(out, 0, sizeof(*out));
	if (cfg < 0 || cfg >= b->ncfg || level < 0 || level >= RTL_LEVELS)
		return -EINVAL;
	struct cs_consumer *c = b->cfgs[cfg].lvl[level];
	if (!c)
		return b->cfgs[cfg].cfg.level[level].present ? 0 : -ENOENT;
	const struct cs_engine *e = c->eng;
	for (int k = 0; k < RTL_ACC_KINDS; k++)
		for (uint32_t d = 0; d <= e->A; d++) {
			uint64_t h = e->hist[k * (e->A + 1) + d];
			out->access[k] += h;
			if (d >= c->assoc)
				out->miss[k] += h;
		}
	out->compulsory = e->compulsory;
	out->writebacks = c->writebacks;
	return 0;
}

int rtl_cachesim_reuse(const rtl_cachesim *b, rtl_reuse_hist *out)
{
	if (!b->reuse)
		return -ENOENT;
	cs_reuse_hist(b->reuse, out);
	return 0;
}

static int cmp_cost(const void *x, const void *y)
{
	const rtl_instr_cost *a = x, *b = y;
	return a->iaddr < b->iaddr ? -1 : a->iaddr > b->iaddr;
}

/* Sorted copy of the attribution table; caller frees. */
static rtl_instr_cost *sorted_costs(const rtl_cachesim *b, size_t *n)
{
	rtl_instr_cost *v = malloc((b->attr.n + 1) * sizeof(*v));

	*n = 0;
	if (!v)
		return NULL;
	for (size_t i = 0; i < b->attr.cap; i++)
		if (b->attr.keys[i])
			v[(*n)++] = (rtl_instr_cost){ b->attr.keys[i] - 1, b->attr.val[i][0], b->attr.val[i][1] };
	qsort(v, *n, sizeof(*v), cmp_cost);
	return v;
}

int rtl_cachesim_foreach_instr(const rtl_cachesim *b,
			       int (*fn)(const rtl_instr_cost *c, void *user), void *user)
{
	size_t n;
	rtl_instr_cost *v = sorted_costs(b, &n);
	int rc = 0;

	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < n && !rc; i++)
		rc = fn(&v[i], user);
	free(v);
	return rc;
}

int rtl_cachesim_sum_functions(const rtl_cachesim *b, const uint64_t (*ranges)[2],
			       size_t nr, rtl_instr_cost *out)
{
	size_t n, f = 0;
	rtl_instr_cost *v = sorted_costs(b, &n);

	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < nr; i++)
		out[i] = (rtl_instr_cost){ .iaddr = ranges[i][0] };
	for (size_t i = 0; i < n; i++) {
		while (f < nr && ranges[f][1] <= v[i].iaddr)
			f++;
		if (f == nr)
			break;
		if (v[i].iaddr >= ranges[f][0]) {
			out[f].access += v[i].access;
			out[f].miss += v[i].miss;
		}
	}
	free(v);
	return 0;
}
