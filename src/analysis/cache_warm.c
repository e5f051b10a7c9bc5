/* Long warm-ups for sampled simulation (rtl_cachesim_warm_lower): only a
 * lower level's state reaches back millions of accesses, so the accesses
 * before a window pass one first-level filter, whose misses move lines in
 * every lower level's recency stacks. Nothing is counted and the first
 * levels keep their state: a short exact warm-up (rtl_cachesim_push) after
 * it fills them. The lower levels see the filter's misses rather than
 * their own first level's: the lines they hold, and nearly their order,
 * are the same when the lower level is much larger than the first. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "cache_bank.h"

/* The first data (or unified) first level of a configuration that has a
 * level below it. */
static const rtl_cache_level *filter_level(const rtl_cachesim *b)
{
	for (int i = 0; i < b->ncfg; i++) {
		const rtl_cache_config *c = &b->cfgs[i].cfg;
		if (!c->level[RTL_L2].present && !c->level[RTL_L3].present)
			continue;
		if (c->level[RTL_L1D].present)
			return &c->level[RTL_L1D];
		if (c->level[RTL_L1].present)
			return &c->level[RTL_L1];
	}
	return NULL;
}

/* Whether every lower level is a stack engine (LRU, write-allocate, not
 * inclusive): the others' state is not a recency stack to move. */
static int lower_all_stack(const rtl_cachesim *b)
{
	for (int i = 0; i < b->neng; i++)
		if (b->eng[i]->src[0] && b->eng[i]->type != CS_STACK)
			return 0;
	return 1;
}

/* Whether lower engines X and Y hold the same kind of state: then a
 * warm-up moves one and copies it to the other (both would see the same
 * filter's misses, and after a long warm-up hold the same lines). */
static int same_state(const struct cs_engine *x, const struct cs_engine *y)
{
	if (x->type != CS_STACK || y->type != CS_STACK || x->line != y->line || x->nsets != y->nsets ||
	    x->A != y->A || x->ncons != y->ncons || x->any_wb != y->any_wb)
		return 0;
	for (int j = 0; j < x->ncons; j++)
		if (x->cons[j]->assoc != y->cons[j]->assoc || x->cons[j]->write != y->cons[j]->write)
			return 0;
	return 1;
}

/* Each lower engine's representative (WARM_REP[i], itself for the first
 * of its kind), which alone the warm-up moves. */
static int pick_reps(rtl_cachesim *b)
{
	if (!(b->warm_rep = malloc((size_t)b->neng * sizeof(*b->warm_rep))))
		return -ENOMEM;
	for (int i = 0; i < b->neng; i++) {
		b->warm_rep[i] = i;
		for (int j = 0; j < i && b->eng[i]->src[0]; j++)
			if (b->warm_rep[j] == j && b->eng[j]->src[0] && same_state(b->eng[j], b->eng[i])) {
				b->warm_rep[i] = j;
				break;
			}
	}
	return 0;
}

/* After a warm-up, before anything is counted: every lower engine takes
 * its representative's state. */
void cs_warm_sync(rtl_cachesim *b)
{
	b->warm_unsynced = 0;
	for (int i = 0; i < b->neng; i++) {
		int r = b->warm_rep[i];
		if (r == i)
			continue;
		struct cs_engine *e = b->eng[i], *f = b->eng[r];
		size_t n = (size_t)e->nsets << e->sshift;
		memcpy(e->tags, f->tags, n * sizeof(*e->tags));
		if (e->dirty)
			memcpy(e->dirty, f->dirty, n * sizeof(*e->dirty));
	}
}

static int make_filter(rtl_cachesim *b)
{
	const rtl_cache_level *l = filter_level(b);
	if (!l)
		return 0;   /* no lower level: nothing to warm */
	if (!lower_all_stack(b))
		return -ENOTSUP;
	struct cs_engine *f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	f->type = CS_STACK;
	f->line = l->line;
	f->shift = (uint32_t)__builtin_ctz(l->line);
	f->nsets = (uint32_t)(l->size / ((uint64_t)l->line * l->assoc));
	f->pow2 = !(f->nsets & (f->nsets - 1));
	f->setmask = f->nsets - 1;
	f->A = l->assoc;
	int rc = cs_stack_init(f);
	if (!rc)
		rc = pick_reps(b);
	if (rc) {   /* nothing half made: the next call tries again */
		free(f->tags);
		free(f->hist);
		free(f);
		return rc;
	}
	b->warm_filter = f;
	return 0;
}

/* ADDR's reference in the lower engines that stand for their kind (their
 * own line sizes). The lines they see are not added to those seen for
 * compulsory misses: a sampled run's compulsory counts are its windows'. */
static void warm_below(rtl_cachesim *b, uint64_t addr, int wr)
{
	for (int i = 0; i < b->neng; i++)
		if (b->eng[i]->src[0] && b->warm_rep[i] == i)
			cs_stack_warm(b->eng[i], addr >> b->eng[i]->shift, wr);
}

int rtl_cachesim_warm_lower(rtl_cachesim *b, const rtl_access *acc, size_t n)
{
	int rc;

	if (!cs_kinds_valid(acc, n))
		return -EINVAL;
	if (!b->built && (rc = cs_bank_build(b)) < 0)
		return rc;
	if (!b->warm_filter && (rc = make_filter(b)) < 0)
		return rc;
	struct cs_engine *f = b->warm_filter;
	if (!f)
		return 0;
	b->warm_unsynced = 1;
	for (size_t i = 0; i < n; i++) {
		const rtl_access *a = &acc[i];
		int wr = a->kind == RTL_ACC_STORE || a->kind == RTL_ACC_MODIFY;
		uint32_t size = a->size ? a->size : 1;
		uint64_t first = a->addr >> f->shift, last = (a->addr + size - 1) >> f->shift;
		for (uint64_t l = first; l <= last && l >= first; l++) {
			const uint64_t *top = f->tags + ((size_t)cs_set_of(f, l) << f->sshift);
			if (*top != l + 1 && cs_stack_warm(f, l, 0) >= f->A)   /* a hit on top moves nothing */
				warm_below(b, l << f->shift, wr);
		}
	}
	return 0;
}
