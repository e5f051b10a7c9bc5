/* Reuse-distance histogram (see reuse.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "reuse.h"

struct cs_reuse {
	rtl_reuse_hist h;
	uint32_t shift;
	uint32_t *bit;         /* Fenwick tree over times 1..cap */
	size_t cap;
	size_t now;            /* last time used */
	uint64_t *keys;        /* line + 1, 0 = empty */
	size_t *when;          /* last time of each line */
	size_t hcap, hn;
};

static inline size_t hash64(uint64_t x, size_t mask)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	return (size_t)x & mask;
}

static void bit_add(struct cs_reuse *r, size_t i, int v)
{
	for (; i <= r->cap; i += i & -i)
		r->bit[i] += v;
}

static uint64_t bit_sum(const struct cs_reuse *r, size_t i)
{
	uint64_t s = 0;

	for (; i; i -= i & -i)
		s += r->bit[i];
	return s;
}

int cs_reuse_create(uint32_t line, struct cs_reuse **out)
{
	struct cs_reuse *r = calloc(1, sizeof(*r));

	if (!r)
		return -ENOMEM;
	r->h.line = line;
	r->shift = (uint32_t)__builtin_ctz(line);
	r->cap = 1 << 16;
	r->hcap = 1 << 12;
	r->bit = calloc(r->cap + 1, sizeof(*r->bit));
	r->keys = calloc(r->hcap, sizeof(*r->keys));
	r->when = calloc(r->hcap, sizeof(*r->when));
	if (!r->bit || !r->keys || !r->when) {
		cs_reuse_free(r);
		return -ENOMEM;
	}
	*out = r;
	return 0;
}

void cs_reuse_free(struct cs_reuse *r)
{
	if (!r)
		return;
	free(r->bit);
	free(r->keys);
	free(r->when);
	free(r);
}

static int grow_hash(struct cs_reuse *r)
{
	size_t ncap = r->hcap * 2;
	uint64_t *nk = calloc(ncap, sizeof(*nk));
	size_t *nw = calloc(ncap, sizeof(*nw));

	if (!nk || !nw) {
		free(nk);
		free(nw);
		return -ENOMEM;
	}
	for (size_t i = 0; i < r->hcap; i++) {
		if (!r->keys[i])
			continue;
		size_t j = hash64(r->keys[i], ncap - 1);
		while (nk[j])
			j = (j + 1) & (ncap - 1);
		nk[j] = r->keys[i];
		nw[j] = r->when[i];
	}
	free(r->keys);
	free(r->when);
	r->keys = nk;
	r->when = nw;
	r->hcap = ncap;
	return 0;
}

static int cmp_time(const void *x, const void *y, void *ctx)
{
	const size_t *w = ctx;
	size_t a = w[*(const size_t *)x], b = w[*(const size_t *)y];
	return a < b ? -1 : a > b;
}

/* Renumbers the live marks 1..hn in time order; grows the tree when more
 * than half of it would stay full. */
static int compact(struct cs_reuse *r)
{
	size_t *slots = malloc(r->hn * sizeof(*slots)), k = 0;

	if (!slots)
		return -ENOMEM;
	for (size_t i = 0; i < r->hcap; i++)
		if (r->keys[i])
			slots[k++] = i;
	qsort_r(slots, k, sizeof(*slots), cmp_time, r->when);
	if (2 * k > r->cap) {
		uint32_t *nb = realloc(r->bit, (r->cap * 2 + 1) * sizeof(*nb));
		if (!nb) {
			free(slots);
			return -ENOMEM;
		}
		r->bit = nb;
		r->cap *= 2;
	}
	memset(r->bit, 0, (r->cap + 1) * sizeof(*r->bit));
	for (size_t i = 0; i < k; i++) {
		r->when[slots[i]] = i + 1;
		bit_add(r, i + 1, 1);
	}
	r->now = k;
	free(slots);
	return 0;
}

static void reference(struct cs_reuse *r, uint64_t line)
{
	uint64_t key = line + 1;

	if (r->now == r->cap && compact(r) < 0)
		return;
	if (2 * (r->hn + 1) > r->hcap && grow_hash(r) < 0)
		return;
	size_t j = hash64(key, r->hcap - 1);
	while (r->keys[j] && r->keys[j] != key)
		j = (j + 1) & (r->hcap - 1);
	size_t t = ++r->now;
	r->h.total++;
	if (!r->keys[j]) {
		r->keys[j] = key;
		r->hn++;
		r->h.cold++;
	} else {
		size_t prev = r->when[j];
		uint64_t d = bit_sum(r, t - 1) - bit_sum(r, prev);
		int b = d ? 64 - __builtin_clzll(d) : 0;   /* 1 + floor(log2 d) */
		r->h.bucket[b < RTL_REUSE_BUCKETS ? b : RTL_REUSE_BUCKETS - 1]++;
		bit_add(r, prev, -1);
	}
	r->when[j] = t;
	bit_add(r, t, 1);
}

void cs_reuse_run(struct cs_reuse *r, const rtl_access *a, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		uint32_t size = a[i].size ? a[i].size : 1;
		if (a[i].addr + size - 1 < a[i].addr)
			size = (uint32_t)(0 - a[i].addr);
		uint64_t first = a[i].addr >> r->shift, last = (a[i].addr + size - 1) >> r->shift;
		for (uint64_t l = first; l <= last; l++)
			reference(r, l);
	}
}

void cs_reuse_hist(const struct cs_reuse *r, rtl_reuse_hist *out)
{
	*out = r->h;
}

uint64_t rtl_reuse_misses(const rtl_reuse_hist *h, uint64_t lines)
{
	uint64_t hits = 0;

	/* distance d hits in a cache of LINES lines iff d < LINES; bucket k
	 * holds d in [2^(k-1), 2^k - 1], all below LINES = 2^m iff k <= m. */
	for (int k = 0; k < RTL_REUSE_BUCKETS; k++) {
		uint64_t hi = k ? (1ULL << k) - 1 : 0;
		if (hi < lines)
			hits += h->bucket[k];
	}
	return h->total - hits;
}
