/* The bank: turns configurations into shared engines, drives them over
 * pushed accesses chunk by chunk, and reads statistics back.
 * See cache_internal.h for the engine/consumer model. */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <reticle/cachesim.h>
#include <reticle/error.h>
#include "cache_internal.h"
#include "reuse.h"
#include "cache_bank.h"
#include "util/array.h"

#define DATA_KINDS (1u << RTL_ACC_LOAD | 1u << RTL_ACC_STORE | 1u << RTL_ACC_MODIFY)
#define ALL_KINDS 0x1fu

int rtl_cachesim_create(rtl_cachesim **out)
{
	rtl_cachesim *b = calloc(1, sizeof(*b));

	if (!b)
		return -ENOMEM;
	b->chunk = 8192;
	b->attr_cfg = -1;
	*out = b;
	return 0;
}

void rtl_cachesim_destroy(rtl_cachesim *b)
{
	if (!b)
		return;
	cs_workers_stop(b->workers);
	for (int i = 0; i < b->neng; i++) {
		struct cs_engine *e = b->eng[i];
		free(e->tags);
		free(e->dirty);
		free(e->stamp);
		free(e->plru);
		free(e->hist);
		free(e->merge);
		cs_lineset_free(&e->seen);
		free(e);
	}
	for (int i = 0; i < b->ncons; i++) {
		if (b->cons[i]->out)
			free(b->cons[i]->out->v);
		free(b->cons[i]->out);
		free(b->cons[i]);
	}
	if (b->warm_filter) {
		free(b->warm_filter->tags);
		free(b->warm_filter->hist);
		free(b->warm_filter);
	}
	free(b->warm_rep);
	cs_attr_free(&b->attr);
	cs_reuse_free(b->reuse);
	free(b->eng);
	free(b->cons);
	free(b->cfgs);
	free(b->idx_i);
	free(b->idx_d);
	free(b);
}

int rtl_cachesim_add(rtl_cachesim *b, const rtl_cache_config *cfg)
{
	char msg[8];
	struct cfg_entry *n;

	if (b->built)
		return -EBUSY;
	if (rtl_cache_config_check(cfg, msg, sizeof(msg)))
		return -RTL_ERR_BAD_OPTION;
	n = realloc(b->cfgs, (b->ncfg + 1) * sizeof(*n));
	if (!n)
		return -ENOMEM;
	b->cfgs = n;
	memset(&n[b->ncfg], 0, sizeof(*n));
	n[b->ncfg].cfg = *cfg;
	return b->ncfg++;
}

int rtl_cachesim_enable_reuse(rtl_cachesim *b, uint32_t line)
{
	if (b->built)
		return -EBUSY;
	if (!line || (line & (line - 1)))
		return -EINVAL;
	b->reuse_line = line;
	return 0;
}

int rtl_cachesim_set_threads(rtl_cachesim *b, int n)
{
	if (b->built)
		return -EBUSY;
	if (n < 1)
		return -EINVAL;
	b->threads = n;
	return 0;
}

int rtl_cachesim_enable_miss_attribution(rtl_cachesim *b, int cfg, int level)
{
	int err = rtl_cachesim_enable_attribution(b, cfg, level);
	if (!err)
		b->attr.misses_only = 1;
	return err;
}

int rtl_cachesim_enable_attribution(rtl_cachesim *b, int cfg, int level)
{
	if (b->built)
		return -EBUSY;
	if (cfg < 0 || cfg >= b->ncfg || level < 0 || level >= RTL_LEVELS ||
	    !b->cfgs[cfg].cfg.level[level].present)
		return -EINVAL;
	b->attr_cfg = cfg;
	b->attr_level = level;
	return 0;
}

static int push_ptr(void ***arr, int *n, void *p)
{
	void **na = realloc(*arr, (*n + 1) * sizeof(*na));

	if (!na)
		return -ENOMEM;
	na[(*n)++] = p;
	*arr = na;
	return 0;
}

/* What makes two engines interchangeable: same input and geometry; a
 * stack engine then takes any LRU associativity, a generic engine only its
 * exact twin (same policy, ways, write policy and seed). */
static int same_key(const struct cs_engine *e, const struct cs_engine *k,
		    const rtl_cache_level *l, uint64_t seed)
{
	if (e->type != k->type || e->src[0] != k->src[0] || e->src[1] != k->src[1] ||
	    e->filter != k->filter || e->line != k->line || e->nsets != k->nsets ||
	    e->cross != k->cross || e->modify_as_load != k->modify_as_load ||
	    e->max_data_size != k->max_data_size || e->ncons >= CS_MAX_CONSUMERS)
		return 0;
	if (e->type == CS_STACK)
		return 1;
	const struct cs_consumer *c = e->cons[0];
	return !e->inclusive && e->repl == l->repl && c->assoc == l->assoc &&
	       c->write == l->write && c->no_write_allocate == l->no_write_allocate &&
	       (l->repl != RTL_REPL_RANDOM || e->seed == seed);
}

static struct cs_consumer *new_consumer(rtl_cachesim *b, struct cs_engine *e,
					const rtl_cache_level *l)
{
	struct cs_consumer *c = calloc(1, sizeof(*c));

	if (!c || push_ptr((void ***)&b->cons, &b->ncons, c) < 0) {
		free(c);
		return NULL;
	}
	c->eng = e;
	c->slot = e->ncons;
	c->assoc = l->assoc;
	c->write = l->write;
	c->no_write_allocate = l->no_write_allocate;
	e->cons[e->ncons++] = c;
	return c;
}

static struct cs_consumer *get_consumer(rtl_cachesim *b, const rtl_cache_config *cfg,
					const rtl_cache_level *l, struct cs_engine *key)
{
	int stack = l->repl == RTL_REPL_LRU && !l->no_write_allocate && !cfg->inclusive;
	struct cs_engine *e = NULL;

	key->type = stack ? CS_STACK : CS_GENERIC;
	for (int i = 0; !cfg->inclusive && i < b->neng && !e; i++)
		if (same_key(b->eng[i], key, l, cfg->seed))
			e = b->eng[i];
	if (e) {
		for (int j = 0; j < e->ncons; j++)
			if (e->cons[j]->assoc == l->assoc && e->cons[j]->write == l->write)
				return e->cons[j];
		return new_consumer(b, e, l);
	}
	e = malloc(sizeof(*e));
	if (!e || push_ptr((void ***)&b->eng, &b->neng, e) < 0) {
		free(e);
		return NULL;
	}
	*e = *key;
	e->repl = l->repl;
	e->rng = e->seed = cfg->seed;
	e->inclusive = cfg->inclusive;
	return new_consumer(b, e, l);
}

static int add_stream(struct cs_consumer *c)
{
	if (!c || c->out)
		return 0;
	c->out = calloc(1, sizeof(*c->out));
	return c->out ? 0 : -ENOMEM;
}

static int build_config(rtl_cachesim *b, struct cfg_entry *ce, int index)
{
	static const unsigned filters[] = { 1u << RTL_ACC_IFETCH, DATA_KINDS, 0xfu };
	const rtl_cache_config *cfg = &ce->cfg;
	struct cs_consumer *above[2] = { NULL, NULL };

	for (int lv = 0; lv < RTL_LEVELS; lv++) {
		const rtl_cache_level *l = &cfg->level[lv];
		if (!l->present)
			continue;
		struct cs_engine key = {
			.line = l->line, .nsets = (uint32_t)(l->size / ((uint64_t)l->line * l->assoc)),
			.shift = (uint32_t)__builtin_ctz(l->line), .cross = cfg->cross,
			.modify_as_load = cfg->modify_as_load, .max_data_size = cfg->max_data_size,
		};
		key.pow2 = !(key.nsets & (key.nsets - 1));
		key.setmask = key.nsets - 1;
		if (lv <= RTL_L1) {
			key.filter = filters[lv];
		} else {
			key.filter = ALL_KINDS;
			key.src[0] = above[0] ? above[0] : above[1];
			key.src[1] = above[0] ? above[1] : NULL;
			key.depth = lv == RTL_L2 ? 1 : 2;
		}
		struct cs_consumer *c = get_consumer(b, cfg, l, &key);
		if (!c)
			return -ENOMEM;
		if (lv > RTL_L1 && cfg->inclusive) {
			c->upper[0] = above[0];
			c->upper[1] = above[1];
			for (int u = 0; u < 2; u++)
				if (above[u])
					above[u]->down = c->eng;
			c->eng->driven = 1;
		} else if (lv > RTL_L1 && (add_stream(above[0]) < 0 || add_stream(above[1]) < 0)) {
			return -ENOMEM;
		}
		if (index == b->attr_cfg && lv == b->attr_level) {
			c->attr = &b->attr;
			/* a miss always reaches cs_consumers: only attributing
			 * hits takes every access off the fast path */
			c->eng->any_attr |= !b->attr.misses_only;
		}
		ce->lvl[lv] = c;
		if (lv <= RTL_L1)
			above[lv == RTL_L1 ? 0 : lv] = c;
		else
			above[0] = c, above[1] = NULL;
	}
	return 0;
}

static void pair_roots(rtl_cachesim *b);

static int cmp_depth(const void *x, const void *y)
{
	const struct cs_engine *a = *(struct cs_engine *const *)x, *b = *(struct cs_engine *const *)y;
	return a->depth - b->depth;
}

static int init_engine(struct cs_engine *e)
{
	e->A = 0;
	e->min_assoc = UINT32_MAX;
	for (int j = 0; j < e->ncons; j++) {
		struct cs_consumer *c = e->cons[j];
		e->A = c->assoc > e->A ? c->assoc : e->A;
		e->min_assoc = c->assoc < e->min_assoc ? c->assoc : e->min_assoc;
		e->any_wt |= c->write == RTL_WRITE_THROUGH;
		e->any_wb |= c->write == RTL_WRITE_BACK;
		e->wb_mask |= c->write == RTL_WRITE_BACK ? 1u << j : 0;
	}
	e->gate = e->any_attr ? 0 : e->min_assoc;
	/* Without a lower level nobody needs the write-backs themselves, but
	 * the count is reported, so dirty tracking stays on for WB. */
	return e->type == CS_STACK ? cs_stack_init(e) : cs_generic_init(e);
}

int cs_bank_build(rtl_cachesim *b)
{
	int rc;

	for (int i = 0; i < b->ncfg; i++)
		if ((rc = build_config(b, &b->cfgs[i], i)) < 0)
			return rc;
	for (int i = 0; i < b->neng; i++)
		if ((rc = init_engine(b->eng[i])) < 0)
			return rc;
	/* stable enough: engines were created level by level per config */
	if (b->neng)
		qsort(b->eng, b->neng, sizeof(*b->eng), cmp_depth);
	pair_roots(b);
	for (int i = 0; i < b->ncfg; i++)
		if (b->cfgs[i].cfg.inclusive)
			b->chunk = 1;  /* back-invalidation must reach L1 before its next access */
	if (b->reuse_line && (rc = cs_reuse_create(b->reuse_line, &b->reuse)) < 0)
		return rc;
	b->idx_i = malloc(b->chunk * sizeof(*b->idx_i));
	b->idx_d = malloc(b->chunk * sizeof(*b->idx_d));
	if (!b->idx_i || !b->idx_d)
		return -ENOMEM;
	/* a chunk of one access (inclusive hierarchies) is too little work to
	 * hand out */
	if (b->threads > 1 && b->chunk > 1)
		b->workers = cs_workers_start(b, b->threads);
	b->built = 1;
	return 0;
}

/* The input of lower engine E fed by two streams, merged in program order
 * (in E's own scratch: engines may run on different threads). */
static const rtl_access *merged(struct cs_engine *e, struct cs_stream *x, struct cs_stream *y, size_t *n)
{
	size_t i = 0, j = 0, k = 0;

	*n = x->n + y->n;
	if (rtl_grow(&e->merge, &e->merge_cap, *n, sizeof(*e->merge)))
		return NULL;
	while (i < x->n || j < y->n)
		if (j == y->n || (i < x->n && CS_SEQ(x->v[i].kind) <= CS_SEQ(y->v[j].kind)))
			e->merge[k++] = x->v[i++];
		else
			e->merge[k++] = y->v[j++];
	return e->merge;
}

/* A root stack engine of a split L1 (fetches only, or data only). */
static int split_root(const struct cs_engine *e)
{
	return e->type == CS_STACK && !e->src[0] && e->filter != 0xfu;
}

/* Positions of the fetches and of the data accesses of a chunk, without
 * branches. */
static void partition(rtl_cachesim *b, const rtl_access *a, size_t n, size_t *ni, size_t *nd)
{
	size_t i_n = 0, d_n = 0;

	for (size_t i = 0; i < n; i++) {
		int f = a[i].kind == RTL_ACC_IFETCH;
		b->idx_i[i_n] = (uint32_t)i;
		b->idx_d[d_n] = (uint32_t)i;
		i_n += f;
		d_n += !f;
	}
	*ni = i_n;
	*nd = d_n;
}

/* Pairs each fetch-only root stack engine with a data-only one (PAIR[i] =
 * the partner's index, -1 when none): a pair runs in one pass. */
static void pair_roots(rtl_cachesim *b)
{
	for (int i = 0; i < b->neng; i++)
		b->eng[i]->pair = -1;
	for (int i = 0; i < b->neng; i++) {
		struct cs_engine *f = b->eng[i];
		if (!split_root(f) || f->filter != 1u << RTL_ACC_IFETCH || f->pair >= 0)
			continue;
		for (int j = 0; j < b->neng; j++) {
			struct cs_engine *d = b->eng[j];
			if (split_root(d) && d->filter == DATA_KINDS && d->pair < 0) {
				f->pair = j;
				d->pair = i;
				break;
			}
		}
	}
}

/* The engines of worker W (every engine when W < 0) over chunk A of N,
 * in depth order: a lower engine after the ones that feed it. */
static void run_engines(rtl_cachesim *b, const rtl_access *a, size_t n, int w)
{
	for (int i = 0; i < b->neng; i++) {
		struct cs_engine *e = b->eng[i];
		const rtl_access *in = a;
		size_t m = n;
		if (e->driven || (w >= 0 && e->worker != w))
			continue;
		if (split_root(e) && e->pair >= 0) {
			if (e->filter == 1u << RTL_ACC_IFETCH)
				cs_stack_run_pair(e, b->eng[e->pair], a, n);
			continue;
		}
		if (split_root(e)) {
			int fetch = e->filter == 1u << RTL_ACC_IFETCH;
			cs_stack_run_idx(e, a, fetch ? b->idx_i : b->idx_d, fetch ? b->ni : b->nd, 1);
			continue;
		}
		if (e->src[1]) {
			if (!(in = merged(e, e->src[0]->out, e->src[1]->out, &m))) {
				atomic_store(&b->nomem, 1);
				continue;
			}
		} else if (e->src[0]) {
			in = e->src[0]->out->v;
			m = e->src[0]->out->n;
		}
		if (e->type == CS_STACK)
			cs_stack_run(e, in, m, !e->src[0]);
		else
			cs_generic_run(e, in, m, !e->src[0]);
	}
}

static int run_chunk(rtl_cachesim *b, const rtl_access *a, size_t n)
{
	int split = 0;

	for (int i = 0; i < b->neng && !split; i++)
		split = split_root(b->eng[i]) && b->eng[i]->pair < 0;
	b->ni = b->nd = 0;
	if (split)
		partition(b, a, n, &b->ni, &b->nd);
	if (b->workers)
		cs_workers_run(b->workers, b, a, n, run_engines);
	else
		run_engines(b, a, n, -1);
	for (int i = 0; i < b->ncons; i++)
		if (b->cons[i]->out)
			b->cons[i]->out->n = 0;
	if (atomic_exchange(&b->nomem, 0))
		return -ENOMEM;
	if (b->reuse)
		cs_reuse_run(b->reuse, a, n);
	return 0;
}

/* Kinds index bit masks and views: anything but LOAD..IFETCH (0..3, two
 * bits) is refused. OR-ing the kinds costs one instruction per access. */
int cs_kinds_valid(const rtl_access *a, size_t n)
{
	uint32_t all = 0;

	for (size_t i = 0; i < n; i++)
		all |= a[i].kind;
	return !(all & ~3u);
}

int rtl_cachesim_push(rtl_cachesim *b, const rtl_access *acc, size_t n)
{
	int rc;

	if (!cs_kinds_valid(acc, n))
		return -EINVAL;
	if (!b->built && (rc = cs_bank_build(b)) < 0)
		return rc;
	if (b->warm_unsynced)
		cs_warm_sync(b);
	for (size_t off = 0; off < n; off += b->chunk) {
		size_t m = n - off < b->chunk ? n - off : b->chunk;
		if ((rc = run_chunk(b, acc + off, m)) < 0)
			return rc;
	}
	return 0;
}

