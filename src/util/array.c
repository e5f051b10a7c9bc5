/* See array.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "util/array.h"

int rtl_grow_to(void *arrp, size_t *cap, size_t need, size_t elem)
{
	if (need <= *cap)
		return 0;
	size_t c = *cap ? *cap : (256 + elem - 1) / elem;
	while (c < need) {
		if (c > SIZE_MAX / 2)
			return -ENOMEM;
		c *= 2;
	}
	if (c > SIZE_MAX / elem)
		return -ENOMEM;
	/* the pointer goes through memcpy: *ARRP may be any object pointer
	 * type, which a void ** would not let us write without type punning */
	void *v;
	memcpy(&v, arrp, sizeof(v));
	v = realloc(v, c * elem);
	if (!v)
		return -ENOMEM;
	memcpy(arrp, &v, sizeof(v));
	*cap = c;
	return 0;
}

static uint64_t key_at(const uint8_t *e, size_t key)
{
	uint64_t k;
	memcpy(&k, e + key, 8);
	return k;
}

enum { RADIX_BITS = 11 };   /* digits of up to 11 bits: 2^11 counters stay in L1 */

/* One stable scatter of SRC into DST by the digit (key - LO) >> SHIFT;
 * COUNT holds each digit's first slot. Inline with a constant SIZE, the
 * copy is a move or two, not a call to memcpy. */
static inline void scatter(const uint8_t *src, uint8_t *dst, size_t n, size_t size, size_t key,
			   uint64_t lo, unsigned shift, uint64_t mask, size_t *count)
{
	for (size_t i = 0; i < n; i++)
		memcpy(dst + count[((key_at(src + i * size, key) - lo) >> shift) & mask]++ * size,
		       src + i * size, size);
}

int rtl_radix_sort_u64(void *v, size_t n, size_t size, size_t key)
{
	if (n < 2)
		return 0;
	void *tmp = malloc(n * size);
	int err = tmp ? rtl_radix_sort_u64_tmp(v, n, size, key, tmp) : -ENOMEM;
	free(tmp);
	return err;
}

int rtl_radix_sort_u64_tmp(void *v, size_t n, size_t size, size_t key, void *tmp)
{
	if (n < 2)
		return 0;
	uint8_t *a = v, *b = tmp;
	uint64_t lo = key_at(a, key), hi = lo, prev = lo;
	int sorted = 1;
	for (size_t i = 1; i < n; i++) {
		uint64_t k = key_at(a + i * size, key);
		sorted &= k >= prev;
		prev = k;
		lo = k < lo ? k : lo;
		hi = k > hi ? k : hi;
	}
	if (sorted)
		return 0;   /* a stable sort would leave it as it is */
	/* digits of the offsets from the smallest key: as few passes as the
	 * span needs (cc1's code pointers: 25 bits, 3 passes of 9 bits) */
	unsigned bits = 64 - (unsigned)__builtin_clzll(hi - lo);
	unsigned passes = (bits + RADIX_BITS - 1) / RADIX_BITS, width = (bits + passes - 1) / passes;
	uint64_t mask = ((uint64_t)1 << width) - 1;
	size_t (*count)[(1 << RADIX_BITS) + 1] = calloc(passes, sizeof(*count));
	if (!count)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {   /* every pass's histogram in one read */
		uint64_t k = key_at(a + i * size, key) - lo;
		for (unsigned p = 0; p < passes; p++)
			count[p][((k >> (p * width)) & mask) + 1]++;
	}
	uint8_t *src = a, *dst = b;
	for (unsigned p = 0; p < passes; p++) {
		size_t *c = count[p];
		for (uint64_t d = 0; d < mask; d++)
			c[d + 1] += c[d];
		if (size == 16)   /* code pointers */
			scatter(src, dst, n, 16, key, lo, p * width, mask, c);
		else if (size == 32)   /* function candidates */
			scatter(src, dst, n, 32, key, lo, p * width, mask, c);
		else
			scatter(src, dst, n, size, key, lo, p * width, mask, c);
		uint8_t *t = src;
		src = dst;
		dst = t;
	}
	if (src != a)
		memcpy(a, src, n * size);
	free(count);
	return 0;
}
