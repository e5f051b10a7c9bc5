/* Small containers of the cache bank: a set of line numbers (compulsory
 * misses), the per-instruction attribution table, and access streams. */
#include <errno.h>
#include <stdlib.h>
#include "cache_internal.h"
#include "util/array.h"

static inline size_t hash64(uint64_t x, size_t mask)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	return (size_t)x & mask;
}

static int lineset_grow(struct cs_lineset *s)
{
	size_t ncap = s->cap ? s->cap * 2 : 1024;
	uint64_t *nk = calloc(ncap, sizeof(*nk)), *nb = calloc(ncap, sizeof(*nb));

	if (!nk || !nb) {
		free(nk);
		free(nb);
		return -ENOMEM;
	}
	for (size_t i = 0; i < s->cap; i++) {
		if (!s->keys[i])
			continue;
		size_t j = hash64(s->keys[i], ncap - 1);
		while (nk[j])
			j = (j + 1) & (ncap - 1);
		nk[j] = s->keys[i];
		nb[j] = s->bits[i];
	}
	free(s->keys);
	free(s->bits);
	s->keys = nk;
	s->bits = nb;
	s->cap = ncap;
	s->last_key = 0;
	return 0;
}

int cs_lineset_add(struct cs_lineset *s, uint64_t line)
{
	uint64_t key = (line >> 6) + 1, bit = 1ull << (line & 63);
	uint64_t *w = s->last_bits;

	if (key != s->last_key) {
		if (2 * (s->n + 1) > s->cap && lineset_grow(s) < 0)
			return -ENOMEM;
		size_t j = hash64(key, s->cap - 1);
		while (s->keys[j] && s->keys[j] != key)
			j = (j + 1) & (s->cap - 1);
		if (!s->keys[j]) {
			s->keys[j] = key;
			s->n++;
		}
		w = &s->bits[j];
		s->last_key = key;
		s->last_bits = w;
	}
	if (*w & bit)
		return 0;
	*w |= bit;
	return 1;
}

void cs_lineset_free(struct cs_lineset *s)
{
	free(s->keys);
	free(s->bits);
	*s = (struct cs_lineset){ 0 };
}

static int attr_grow(struct cs_attr *a)
{
	size_t ncap = a->cap ? a->cap * 2 : 1024;
	uint64_t *nk = calloc(ncap, sizeof(*nk));
	uint64_t (*nv)[2] = calloc(ncap, sizeof(*nv));

	if (!nk || !nv) {
		free(nk);
		free(nv);
		return -ENOMEM;
	}
	for (size_t i = 0; i < a->cap; i++) {
		if (!a->keys[i])
			continue;
		size_t j = hash64(a->keys[i], ncap - 1);
		while (nk[j])
			j = (j + 1) & (ncap - 1);
		nk[j] = a->keys[i];
		nv[j][0] = a->val[i][0];
		nv[j][1] = a->val[i][1];
	}
	free(a->keys);
	free(a->val);
	a->keys = nk;
	a->val = nv;
	a->cap = ncap;
	return 0;
}

int cs_attr_add(struct cs_attr *a, uint64_t iaddr, int miss)
{
	uint64_t key = iaddr + 1;

	if (2 * (a->n + 1) > a->cap && attr_grow(a) < 0)
		return -ENOMEM;
	size_t j = hash64(key, a->cap - 1);
	while (a->keys[j] && a->keys[j] != key)
		j = (j + 1) & (a->cap - 1);
	if (!a->keys[j]) {
		a->keys[j] = key;
		a->n++;
	}
	a->val[j][0]++;
	a->val[j][1] += miss != 0;
	return 0;
}

void cs_attr_free(struct cs_attr *a)
{
	free(a->keys);
	free(a->val);
}

int cs_stream_push(struct cs_stream *s, uint64_t addr, uint32_t size, uint32_t kind, uint64_t iaddr)
{
	if (rtl_grow(&s->v, &s->cap, s->n + 1, sizeof(*s->v)))
		return -ENOMEM;
	s->v[s->n++] = (rtl_access){ .addr = addr, .iaddr = iaddr, .size = size, .kind = kind };
	return 0;
}
