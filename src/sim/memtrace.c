/* reticle sim -c memtrace (memtrace.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <unistd.h>
#include <string.h>
#include <reticle/error.h>
#include <reticle/sim.h>
#include "analysis/bank_profile.h"
#include "sim/machine.h"
#include "sim/memtrace.h"

enum { BUF = 4096 };

/* Loads and stores of one instruction: an open-addressed table by pc. */
struct site { uint64_t pc, loads, stores; };

struct sim_memtrace {
	rtl_cachesim *bank;
	rtl_access buf[BUF];
	size_t nbuf;
	struct site *sites;       /* pc 0: free (no instruction lives at 0) */
	size_t nsites, cap;
	FILE *report;
	int err;                  /* the first push's error */
};

static void flush(struct sim_memtrace *t)
{
	int err = t->nbuf ? rtl_cachesim_push(t->bank, t->buf, t->nbuf) : 0;
	if (err && !t->err)
		t->err = err;
	t->nbuf = 0;
}

static struct site *site_of(struct sim_memtrace *t, uint64_t pc)
{
	if (2 * (t->nsites + 1) > t->cap) {   /* at most half full */
		size_t cap = t->cap ? 2 * t->cap : 4096;
		struct site *v = calloc(cap, sizeof(*v));
		if (!v)
			return NULL;
		for (size_t i = 0; i < t->cap; i++)
			if (t->sites[i].pc) {
				size_t k = (t->sites[i].pc * 0x9e3779b97f4a7c15ull) >> 20 & (cap - 1);
				while (v[k].pc)
					k = (k + 1) & (cap - 1);
				v[k] = t->sites[i];
			}
		free(t->sites);
		t->sites = v, t->cap = cap;
	}
	size_t k = (pc * 0x9e3779b97f4a7c15ull) >> 20 & (t->cap - 1);
	while (t->sites[k].pc && t->sites[k].pc != pc)
		k = (k + 1) & (t->cap - 1);
	if (!t->sites[k].pc) {
		t->sites[k].pc = pc;
		t->nsites++;
	}
	return &t->sites[k];
}

static void on_access(struct rtl_sim *m, uint64_t pc, uint64_t addr, unsigned size, int is_write, void *user)
{
	(void)m;
	struct sim_memtrace *t = user;
	struct site *s = site_of(t, pc);
	if (s)
		*(is_write ? &s->stores : &s->loads) += 1;
	/* the instruction and the direction, as the native collector keys its
	 * per-instruction misses */
	t->buf[t->nbuf++] = (rtl_access){ addr, pc << 1 | (is_write != 0), size ? size : 1,
					  is_write ? RTL_ACC_STORE : RTL_ACC_LOAD };
	if (t->nbuf == BUF)
		flush(t);
}

static void summary(struct rtl_sim *m, void *user)
{
	struct sim_memtrace *t = user;
	(void)m;
	flush(t);
	for (int c = 0; c < rtl_cachesim_count(t->bank); c++) {
		const rtl_cache_config *cfg = rtl_cachesim_config(t->bank, c);
		for (int l = 0; l < RTL_LEVELS; l++) {
			rtl_cache_stats st;
			if (l == RTL_L1I || !cfg->level[l].present || rtl_cachesim_stats(t->bank, c, l, &st))
				continue;
			fprintf(t->report, "memtrace: %s %s: %" PRIu64 " loads, %" PRIu64 " misses; %" PRIu64
				" stores, %" PRIu64 " misses\n", cfg->name, bank_level_names[l], st.access[RTL_ACC_LOAD],
				st.miss[RTL_ACC_LOAD], st.access[RTL_ACC_STORE], st.miss[RTL_ACC_STORE]);
		}
	}
}

int sim_memtrace_start(struct rtl_sim *m, const rtl_cache_config *cfgs, size_t n, FILE *report)
{
	if (m->memtrace)
		return -EEXIST;
	struct sim_memtrace *t = calloc(1, sizeof(*t));
	int err = t ? rtl_cachesim_create(&t->bank) : -ENOMEM;
	for (size_t i = 0; i < n && !err; i++)
		err = rtl_cachesim_add(t->bank, &cfgs[i]) < 0 ? -RTL_ERR_BAD_OPTION : 0;
	if (!err)   /* several first levels: simulated on every CPU */
		rtl_cachesim_set_threads(t->bank, (int)sysconf(_SC_NPROCESSORS_ONLN));
	/* per-instruction misses of the first configuration's first data level */
	if (!err && n)
		err = rtl_cachesim_enable_miss_attribution(t->bank, 0, cfgs[0].level[RTL_L1D].present ? RTL_L1D
												  : RTL_L1);
	if (t)
		m->memtrace = t, t->report = report;
	if (!err)
		err = rtl_sim_add_mem_call(m, on_access, t);
	if (!err)
		err = rtl_sim_add_trailer(m, summary, t);
	return err;
}

int sim_memtrace_write(struct rtl_sim *m, rtl_profile *prof,
		       int64_t (*function_of)(uint64_t pc, uint64_t *site, void *ctx), void *ctx)
{
	struct sim_memtrace *t = m->memtrace;
	if (!t)
		return 0;
	flush(t);
	int err = t->err;
	for (size_t i = 0; i < t->cap && !err; i++) {
		const struct site *s = &t->sites[i];
		uint64_t site;
		int64_t id = s->pc ? function_of(s->pc, &site, ctx) : -1;
		if (id >= 0 && s->loads)
			err = rtl_profile_add_metric(prof, id, "mem_loads", site, (double)s->loads);
		if (id >= 0 && s->stores && !err)
			err = rtl_profile_add_metric(prof, id, "mem_stores", site, (double)s->stores);
	}
	if (!err)
		err = bank_profile_write(t->bank, prof, function_of, ctx);
	return err;
}

void sim_memtrace_free(struct rtl_sim *m)
{
	struct sim_memtrace *t = m->memtrace;
	if (!t)
		return;
	rtl_cachesim_destroy(t->bank);
	free(t->sites);
	free(t);
	m->memtrace = NULL;
}
