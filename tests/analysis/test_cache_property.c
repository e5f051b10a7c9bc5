/* Property test of the cache bank: every configuration of a bank (where
 * LRU levels share stack engines and streams are processed chunk by chunk)
 * must give exactly the counts of a plain, independent simulator that runs
 * each hierarchy access by access with per-way timestamps. Also checks the
 * reuse-distance miss-ratio curve against plain fully-associative LRU.
 *
 * usage: test_cache_property [TRACE]   (random streams without TRACE) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <reticle/cachesim.h>
#include "check.h"

/* ---- the independent oracle ------------------------------------------ */

struct olevel {
	const rtl_cache_level *p;
	uint64_t sets;
	uint64_t *tag;      /* sets * ways, 0 = invalid, else line + 1 */
	uint64_t *time;     /* last use (LRU) or fill (FIFO) */
	unsigned char *dirty;
	unsigned char *node; /* PLRU: sets * ways node flags, 1 = evict right half */
	uint64_t *seenv;
	size_t nseen, capseen;
	rtl_cache_stats st;
	struct olevel *next;
	struct olevel *above[4];
};

struct ohier {
	const rtl_cache_config *c;
	struct olevel lv[RTL_LEVELS];
	uint64_t clock;
};

static int seen_add(struct olevel *l, uint64_t line)
{
	/* open addressing with a simple hash; independent of the library's */
	if (2 * (l->nseen + 1) > l->capseen) {
		size_t nc = l->capseen ? l->capseen * 4 : 4096;
		uint64_t *nv = calloc(nc, sizeof(*nv));
		for (size_t i = 0; i < l->capseen; i++)
			if (l->seenv[i]) {
				size_t j = (l->seenv[i] * 11400714819323198485ull) % nc;
				while (nv[j])
					j = (j + 1) % nc;
				nv[j] = l->seenv[i];
			}
		free(l->seenv);
		l->seenv = nv;
		l->capseen = nc;
	}
	size_t j = ((line + 1) * 11400714819323198485ull) % l->capseen;
	while (l->seenv[j]) {
		if (l->seenv[j] == line + 1)
			return 0;
		j = (j + 1) % l->capseen;
	}
	l->seenv[j] = line + 1;
	l->nseen++;
	return 1;
}

static void olevel_ref(struct ohier *h, struct olevel *l, uint64_t addr, uint32_t size, int kind);

static void invalidate_above(struct olevel *l, uint64_t addr, uint32_t bytes)
{
	for (int u = 0; u < 4; u++) {
		struct olevel *a = l->above[u];
		if (!a)
			continue;
		uint32_t line = a->p->line;
		for (uint64_t x = addr / line; x <= (addr + bytes - 1) / line; x++) {
			uint64_t s = x % a->sets;
			for (uint32_t w = 0; w < a->p->assoc; w++)
				if (a->tag[s * a->p->assoc + w] == x + 1) {
					a->tag[s * a->p->assoc + w] = 0;
					a->dirty[s * a->p->assoc + w] = 0;
				}
		}
	}
}

static void plru_use(struct olevel *l, uint64_t s, uint32_t w)
{
	uint32_t W = l->p->assoc, lo = 0, hi = W, node = 1;
	unsigned char *n = l->node + s * W;

	while (hi - lo > 1) {
		uint32_t mid = (lo + hi) / 2;
		if (w < mid) {
			n[node] = 1;    /* used the left half: evict right next */
			hi = mid;
			node = 2 * node;
		} else {
			n[node] = 0;
			lo = mid;
			node = 2 * node + 1;
		}
	}
}

static uint32_t plru_pick(struct olevel *l, uint64_t s)
{
	uint32_t W = l->p->assoc, lo = 0, hi = W, node = 1;
	unsigned char *n = l->node + s * W;

	while (hi - lo > 1) {
		uint32_t mid = (lo + hi) / 2;
		if (n[node]) {
			lo = mid;
			node = 2 * node + 1;
		} else {
			hi = mid;
			node = 2 * node;
		}
	}
	return lo;
}

/* One line; returns 1 on hit. Evictions send write-backs down first. */
static int oline(struct ohier *h, struct olevel *l, uint64_t x, int wr, int *isnew)
{
	const rtl_cache_level *p = l->p;
	uint64_t s = x % l->sets, *t = l->tag + s * p->assoc;
	uint32_t W = p->assoc, v = W;

	if (seen_add(l, x))
		*isnew = 1;
	for (uint32_t w = 0; w < W; w++)
		if (t[w] == x + 1) {
			if (p->repl == RTL_REPL_LRU)
				l->time[s * W + w] = ++h->clock;
			if (p->repl == RTL_REPL_PLRU)
				plru_use(l, s, w);
			if (wr && p->write == RTL_WRITE_BACK)
				l->dirty[s * W + w] = 1;
			return 1;
		}
	if (wr && p->no_write_allocate)
		return 0;
	for (uint32_t w = 0; w < W && v == W; w++)
		if (!t[w])
			v = w;
	if (v == W) {
		if (p->repl == RTL_REPL_PLRU) {
			v = plru_pick(l, s);
		} else {
			v = 0;
			for (uint32_t w = 1; w < W; w++)
				if (l->time[s * W + w] < l->time[s * W + v])
					v = w;
		}
		uint64_t victim = (t[v] - 1) * p->line;
		if (l->dirty[s * W + v]) {
			l->st.writebacks++;
			if (l->next)
				olevel_ref(h, l->next, victim, p->line, RTL_ACC_WRITEBACK);
		}
		if (h->c->inclusive)
			invalidate_above(l, victim, p->line);
	}
	t[v] = x + 1;
	l->time[s * W + v] = ++h->clock;
	l->dirty[s * W + v] = wr && p->write == RTL_WRITE_BACK;
	if (p->repl == RTL_REPL_PLRU)
		plru_use(l, s, v);
	return 0;
}

static void opass(struct ohier *h, struct olevel *l, uint64_t addr, uint32_t size, int k,
		  int hk, int wr, int hit)
{
	const rtl_cache_level *p = l->p;

	l->st.access[hk]++;
	if (!hit)
		l->st.miss[hk]++;
	if (k == RTL_ACC_MODIFY && wr)
		l->st.access[RTL_ACC_STORE]++;
	if (!l->next)
		return;
	if (!hit)
		olevel_ref(h, l->next, addr, size, hk);
	if (wr && p->write == RTL_WRITE_THROUGH &&
	    !(!hit && (k == RTL_ACC_STORE || k == RTL_ACC_WRITEBACK)))
		olevel_ref(h, l->next, addr, size, RTL_ACC_STORE);
}

static void olevel_ref(struct ohier *h, struct olevel *l, uint64_t addr, uint32_t size, int k)
{
	const rtl_cache_config *c = h->c;
	uint32_t line = l->p->line;
	int wr = k == RTL_ACC_STORE || k == RTL_ACC_WRITEBACK || (k == RTL_ACC_MODIFY && !c->modify_as_load);
	int hk = k == RTL_ACC_MODIFY ? RTL_ACC_LOAD : k;
	uint64_t first = addr / line, last = (addr + size - 1) / line;

	if (first == last || c->cross == RTL_CROSS_ONCE) {
		int hit = 1, isnew = 0;
		for (uint64_t x = first; x <= last; x++)
			hit &= oline(h, l, x, wr, &isnew);
		l->st.compulsory += isnew;
		opass(h, l, addr, size, k, hk, wr, hit);
		return;
	}
	for (uint64_t x = first; x <= last; x++) {
		uint64_t lo = x == first ? addr : x * line;
		uint64_t hi = x == last ? addr + size : (x + 1) * line;
		int isnew = 0, hit = oline(h, l, x, wr, &isnew);
		l->st.compulsory += isnew;
		opass(h, l, lo, (uint32_t)(hi - lo), k, hk, wr, hit);
	}
}

static void ohier_init(struct ohier *h, const rtl_cache_config *c)
{
	memset(h, 0, sizeof(*h));
	h->c = c;
	for (int i = 0; i < RTL_LEVELS; i++) {
		struct olevel *l = &h->lv[i];
		if (!c->level[i].present)
			continue;
		l->p = &c->level[i];
		l->sets = l->p->size / ((uint64_t)l->p->line * l->p->assoc);
		size_t n = l->sets * l->p->assoc;
		l->tag = calloc(n, 8);
		l->time = calloc(n, 8);
		l->dirty = calloc(n, 1);
		l->node = calloc(n, 1);
		/* every present level above is fed by this one / invalidated by it */
		for (int j = 0, u = 0; j < i && i >= RTL_L2; j++) {
			if (!h->lv[j].p)
				continue;
			l->above[u++] = &h->lv[j];
			if (i == RTL_L2 ? j < RTL_L2 : j == i - 1)
				h->lv[j].next = l;
		}
	}
}

static void ohier_free(struct ohier *h)
{
	for (int i = 0; i < RTL_LEVELS; i++) {
		struct olevel *l = &h->lv[i];
		free(l->tag);
		free(l->time);
		free(l->dirty);
		free(l->node);
		free(l->seenv);
	}
}

static void ohier_access(struct ohier *h, const rtl_access *a)
{
	const rtl_cache_config *c = h->c;
	uint32_t size = a->size ? a->size : 1;
	int lv;

	if (a->kind != RTL_ACC_IFETCH && c->max_data_size && size > c->max_data_size)
		size = c->max_data_size;
	if (c->level[RTL_L1].present)
		lv = RTL_L1;
	else
		lv = a->kind == RTL_ACC_IFETCH ? RTL_L1I : RTL_L1D;
	if (h->lv[lv].p)
		olevel_ref(h, &h->lv[lv], a->addr, size, (int)a->kind);
}

/* ---- streams ------------------------------------------------------------ */

static uint64_t rng = 88172645463325252ull;
static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* Phases of sequential sweeps, random reuse in working sets of several
 * sizes, unaligned and line-crossing accesses, every kind. */
static rtl_access *random_stream(size_t n)
{
	rtl_access *v = calloc(n, sizeof(*v));
	uint64_t seq = 0x10000, pc = 0x400000;

	for (size_t i = 0; i < n; i++) {
		uint64_t r = rnd();
		uint64_t ws = 1ull << (10 + (i / 20000) % 8);   /* 1 KiB .. 128 KiB */
		rtl_access *a = &v[i];
		switch (r % 8) {
		case 0: case 1:
			a->kind = RTL_ACC_IFETCH;
			pc = (r >> 8) % 16 ? pc + 1 + (r >> 20) % 7 : 0x400000 + (r >> 24) % 8192;
			a->addr = pc;
			a->size = 1 + (r >> 30) % 15;
			break;
		case 2: case 3:
			a->kind = RTL_ACC_LOAD;
			/* now and then a constant beside the code, on the line
			 * just fetched */
			a->addr = (r >> 50) % 8 ? (seq += 8) : pc;
			a->size = (r >> 50) % 8 ? 8 : 1;
			break;
		default:
			a->kind = (uint32_t)((r >> 3) % 3);  /* load, store, modify */
			a->addr = 0x800000 + (r >> 12) % ws;
			a->size = (uint32_t[]){ 1, 2, 4, 8, 16, 32 }[(r >> 40) % 6];
			break;
		}
		a->iaddr = pc;
	}
	return v;
}

static rtl_access *read_trace(const char *path, size_t *n)
{
	rtl_trace_reader *r;
	size_t cap = 1 << 16;
	rtl_access *v = malloc(cap * sizeof(*v));
	long got;

	*n = 0;
	if (rtl_trace_open(path, RTL_TRACE_AUTO, &r) < 0)
		return NULL;
	while ((got = rtl_trace_read(r, v + *n, cap - *n)) > 0)
		if ((*n += (size_t)got) == cap)
			v = realloc(v, (cap *= 2) * sizeof(*v));
	rtl_trace_close(r);
	if (got < 0)
		free(v);
	return got < 0 ? NULL : v;
}

/* ---- the comparison ------------------------------------------------------ */

#define NSPECS(a) ((int)(sizeof(a) / sizeof((a)[0])))

static const char *const specs[] = {
	/* one set count, many LRU ways: one stack engine */
	"l1d=4k:1:64", "l1d=8k:2:64", "l1d=16k:4:64", "l1d=32k:8:64", "l1d=64k:16:64",
	"l1d=32k:8:64:wt", "l1d=16k:4:64:wnone",
	/* hierarchies sharing L1s, different L2s */
	"l1i=8k:2:64,l1d=16k:4:64,l2=64k:4:64", "l1i=8k:2:64,l1d=16k:4:64,l2=128k:8:64",
	"l1i=8k:2:64,l1d=16k:4:64:wt,l2=128k:8:64,l3=512k:8:64",
	"l1=16k:4:32,l2=64k:8:64:wt", "l1=16k:4:128,l2=256k:4:64",
	/* non-power-of-two sets, other policies, no write-allocate */
	"l1d=24k:4:64", "l1=48k:12:64,l2=192k:3:64", "l1d=16k:4:64:fifo", "l1d=32k:8:64:plru",
	"l1d=16k:4:64:fifo,l2=64k:4:64:fifo",   /* shares the FIFO L1 above */
	"l1d=16k:4:64:nwa,l2=64k:4:64", "l1d=16k:4:64:wt:nwa,l2=64k:4:64:fifo",
	"l1d=2k:full:64", "l1i=4k:4:32:plru,l1d=8k:2:64,l2=32k:8:64:plru",
	/* cachegrind conventions, inclusion */
	"cachegrind,l1i=8k:2:64,l1d=16k:4:64,ll=64k:8:64",
	"cross=once,modify=load,maxsize=8,l1d=8k:2:32,l2=32k:4:64",
	"inclusive=yes,l1i=4k:2:64,l1d=8k:2:64,l2=32k:4:64",
	"inclusive=yes,l1=8k:2:64,l2=32k:4:64,l3=64k:4:128",
};

/* Banks of LRU stacks only (no generic engine beside them): with a unified
 * L1 and write-through roots, and with split L1s of several line sizes,
 * write-back, modifies read as loads */
static const char *const lru_unified[] = {
	"l1d=4k:1:64", "l1d=32k:8:64:wt", "l1i=8k:2:64,l1d=16k:4:64,l2=64k:4:64",
	"l1=16k:4:32,l2=64k:8:64:wt", "l1=16k:4:128,l2=256k:4:64", "l1d=24k:4:64",
};
static const char *const lru_split[] = {
	"l1d=4k:1:64", "l1d=32k:8:128", "l1i=8k:2:64,l1d=16k:4:64,l2=64k:4:64",
	"l1i=4k:4:32,l1d=8k:2:32,l2=32k:8:64", "l1d=24k:4:64",
	"cachegrind,l1i=8k:2:64,l1d=16k:4:64,ll=64k:8:64",
	"cross=once,modify=load,maxsize=8,l1d=8k:2:32,l2=32k:4:64",
};

static void compare(const rtl_access *v, size_t n, const char *what, const char *const *list, int NS,
		    int threads)
{
	rtl_cache_config cfg[NS];
	struct ohier oh[NS];
	rtl_cachesim *b;
	char err[256];

	CHECK(rtl_cachesim_create(&b) == 0);
	for (int i = 0; i < NS; i++) {
		int rc = rtl_cache_config_parse(list[i], &cfg[i], err, sizeof(err));
		if (rc) {
			fprintf(stderr, "%s: %s\n", list[i], err);
			CHECK(0);
		}
		CHECK_EQ(rtl_cachesim_add(b, &cfg[i]), i);
		ohier_init(&oh[i], &cfg[i]);
	}
	/* groups of engines on several threads: the counts are the same */
	CHECK(rtl_cachesim_set_threads(b, threads) == 0);
	/* uneven pushes: chunking must not matter */
	for (size_t off = 0, step = 1; off < n; off += step, step = step * 3 % 10007 + 1)
		CHECK(rtl_cachesim_push(b, v + off, off + step > n ? n - off : step) == 0);
	for (int i = 0; i < NS; i++)
		for (size_t j = 0; j < n; j++)
			ohier_access(&oh[i], &v[j]);
	fprintf(stderr, "%s: %zu accesses, %d configurations, %d engines, %d thread(s)\n", what, n, NS,
		rtl_cachesim_engines(b), threads);
	for (int i = 0; i < NS; i++)
		for (int l = 0; l < RTL_LEVELS; l++) {
			rtl_cache_stats s;
			const rtl_cache_stats *o = &oh[i].lv[l].st;
			if (!cfg[i].level[l].present)
				continue;
			CHECK(rtl_cachesim_stats(b, i, l, &s) == 0);
			int bad = memcmp(s.access, o->access, sizeof(s.access)) ||
				  memcmp(s.miss, o->miss, sizeof(s.miss)) ||
				  s.compulsory != o->compulsory || s.writebacks != o->writebacks;
			if (bad) {
				fprintf(stderr, "MISMATCH %s level %d\n", list[i], l);
				for (int k = 0; k < RTL_ACC_KINDS; k++)
					fprintf(stderr, "  kind %d: access %llu/%llu miss %llu/%llu\n", k,
						(unsigned long long)s.access[k], (unsigned long long)o->access[k],
						(unsigned long long)s.miss[k], (unsigned long long)o->miss[k]);
				fprintf(stderr, "  compulsory %llu/%llu writebacks %llu/%llu\n",
					(unsigned long long)s.compulsory, (unsigned long long)o->compulsory,
					(unsigned long long)s.writebacks, (unsigned long long)o->writebacks);
			}
			CHECK(!bad);
		}
	for (int i = 0; i < NS; i++)
		ohier_free(&oh[i]);
	rtl_cachesim_destroy(b);
}

/* Fully-associative LRU of 2^m lines against the reuse-distance curve. */
static void compare_mrc(const rtl_access *v, size_t n)
{
	rtl_cachesim *b;
	rtl_reuse_hist h;

	rtl_cachesim_create(&b);
	CHECK(rtl_cachesim_enable_reuse(b, 64) == 0);
	CHECK(rtl_cachesim_push(b, v, n) == 0);
	CHECK(rtl_cachesim_reuse(b, &h) == 0);
	for (uint64_t lines = 1; lines <= 1024; lines *= 4) {
		rtl_cache_config c;
		char spec[64], err[128];
		snprintf(spec, sizeof(spec), "l1=%llu:full:64", (unsigned long long)lines * 64);
		CHECK(rtl_cache_config_parse(spec, &c, err, sizeof(err)) == 0);
		struct ohier o;
		ohier_init(&o, &c);
		for (size_t j = 0; j < n; j++)
			ohier_access(&o, &v[j]);
		uint64_t m = 0;
		for (int k = 0; k < RTL_ACC_KINDS; k++)
			m += o.lv[RTL_L1].st.miss[k];
		CHECK_EQ(rtl_reuse_misses(&h, lines), m);
		ohier_free(&o);
	}
	rtl_cachesim_destroy(b);
}

int main(int argc, char **argv)
{
	size_t n;
	rtl_access *v;

	if (argc > 1) {
		v = read_trace(argv[1], &n);
		CHECK(v != NULL);
		if (!v)
			return CHECK_DONE();
		if (n > 2000000)
			n = 2000000;
		compare(v, n, argv[1], specs, NSPECS(specs), 1);
		compare(v, n, argv[1], specs, NSPECS(specs), 3);
		compare(v, n, argv[1], lru_split, NSPECS(lru_split), 2);
		compare_mrc(v, n < 200000 ? n : 200000);
	} else {
		v = random_stream(300000);
		compare(v, 300000, "random", specs, NSPECS(specs), 1);
		compare(v, 300000, "random", specs, NSPECS(specs), 3);
		compare(v, 300000, "random, LRU with a unified L1", lru_unified, NSPECS(lru_unified), 2);
		compare(v, 300000, "random, LRU with split L1s", lru_split, NSPECS(lru_split), 2);
		compare_mrc(v, 100000);
	}
	free(v);
	return CHECK_DONE();
}
