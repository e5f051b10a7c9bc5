/* See array.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include "util/array.h"

void *rtl_dup_array(const void *src, size_t n, size_t elem)
{
	void *d = malloc((n ? n : 1) * elem);
	return d && n ? memcpy(d, src, n * elem) : d;
}

enum { HUGE = 2u << 20 };
static bool huge_costly;   /* rtl_huge_pages_cheap found them dear */

/* Large arrays (a warm start's records: 100,000 blocks; python3.11's
 * 10,000 function states) in huge pages where the kernel gives them on
 * request: a fault per 2 MiB, not per 4 KiB page (1.5 us each on a VM). */
void rtl_advise_huge(void *p, size_t len)
{
	if (len < 2 * HUGE || huge_costly)
		return;
	uintptr_t lo = ((uintptr_t)p + HUGE - 1) & ~(uintptr_t)(HUGE - 1);
	uintptr_t hi = ((uintptr_t)p + len) & ~(uintptr_t)(HUGE - 1);
	if (hi > lo)
		madvise((void *)lo, hi - lo, MADV_HUGEPAGE);
}

/* A VM that hands free memory back to its host (free page reporting)
 * faults a huge page in again at about 2 ms after an idle spell of a few
 * seconds, against 0.1 ms for one freed just before, and 0.5 ms for its
 * 512 small pages either way. The kernel gives the pages it has not
 * handed back first, so one huge page tells which kind a run gets. */
bool rtl_huge_pages_cheap(void *p, size_t len)
{
	enum { CHEAP_NS = 250 * 1000 };
	uintptr_t lo = ((uintptr_t)p + HUGE - 1) & ~(uintptr_t)(HUGE - 1);
	if (len < 2 * HUGE)
		return false;
	struct timespec a, b;
	madvise((void *)lo, HUGE, MADV_HUGEPAGE);
	clock_gettime(CLOCK_MONOTONIC, &a);
	*(volatile char *)lo = 0;
	clock_gettime(CLOCK_MONOTONIC, &b);
	long ns = (b.tv_sec - a.tv_sec) * 1000000000L + (b.tv_nsec - a.tv_nsec);
	huge_costly = ns > CHEAP_NS;
	return !huge_costly;
}

void *rtl_calloc_huge(size_t n, size_t elem)
{
	void *v = calloc(n ? n : 1, elem);
	if (v && n <= SIZE_MAX / elem)
		rtl_advise_huge(v, n * elem);
	return v;
}

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
	rtl_advise_huge(v, c * elem);
	return 0;
}

static uint64_t key_at(const uint8_t *e, size_t key)
{
	uint64_t k;
	memcpy(&k, e + key, 8);
	return k;
}

/* Digits of up to 13 bits: one pass fewer than with 8 or 11 for the 25
 * bits of cc1's code pointers, and the 2^13 lines being filled at once
 * still fit in L2. Small sorts use 8 bits, not to clear many counters. */
enum { RADIX_BITS = 13, RADIX_BITS_SMALL = 8, RADIX_SMALL = 4096 };

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
	const uint8_t *a = v;
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
	return rtl_radix_sort_u64_within(v, n, size, key, tmp, lo, hi);
}

int rtl_radix_sort_u64_within(void *v, size_t n, size_t size, size_t key, void *tmp,
			      uint64_t lo, uint64_t hi)
{
	if (n < 2 || hi == lo)
		return 0;
	uint8_t *a = v, *b = tmp;
	/* digits of the offsets from the smallest key: as few passes as the
	 * span needs (cc1's code pointers: 25 bits, 2 passes of 13 bits) */
	unsigned bits = 64 - (unsigned)__builtin_clzll(hi - lo);
	unsigned most = n < RADIX_SMALL ? RADIX_BITS_SMALL : RADIX_BITS;
	unsigned passes = (bits + most - 1) / most, width = (bits + passes - 1) / passes;
	uint64_t mask = ((uint64_t)1 << width) - 1;
	size_t digits = (size_t)mask + 2, *count = calloc(passes * digits, sizeof(*count));
	if (!count)
		return -ENOMEM;
	for (size_t i = 0; i < n && passes == 2; i++) {   /* the common case, unrolled */
		uint64_t k = key_at(a + i * size, key) - lo;
		count[(k & mask) + 1]++;
		count[digits + ((k >> width) & mask) + 1]++;
	}
	for (size_t i = 0; i < n && passes != 2; i++) {   /* every pass's histogram in one read */
		uint64_t k = key_at(a + i * size, key) - lo;
		for (unsigned p = 0; p < passes; p++)
			count[p * digits + ((k >> (p * width)) & mask) + 1]++;
	}
	uint8_t *src = a, *dst = b;
	for (unsigned p = 0; p < passes; p++) {
		size_t *c = count + p * digits;
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
