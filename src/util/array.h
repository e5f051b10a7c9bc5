/* Small helpers for the arrays every part keeps: growing a malloc'd array
 * by doubling, and the lower bound over a sorted uint64_t array. */
#ifndef RETICLE_UTIL_ARRAY_H
#define RETICLE_UTIL_ARRAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

int rtl_grow_to(void *arrp, size_t *cap, size_t need, size_t elem);

/* Advises huge pages for the 2 MiB-aligned part of [P, P+LEN) when that
 * is 2 MiB or more (arrays of megabytes, filled at once). */
void rtl_advise_huge(void *p, size_t len);
/* calloc of N elements (one when N is 0), in huge pages when large. */
void *rtl_calloc_huge(size_t n, size_t elem);
/* Faults the first 2 MiB-aligned huge page of [P, P+LEN) in, and tells
 * whether that was cheap; when it was not, rtl_advise_huge advises nothing
 * from then on (see array.c). Once, before any thread starts. */
bool rtl_huge_pages_cheap(void *p, size_t len);

/* A malloc'd copy of the N elements of ELEM bytes at SRC, with room for one
 * when N is 0; NULL without memory. */
void *rtl_dup_array(const void *src, size_t n, size_t elem);

/* Makes the array at *ARRP (ARRP: the address of any object pointer; CAP
 * elements of ELEM bytes allocated) hold at least NEED elements: doubles
 * the capacity, the first allocation being of at least 256 bytes. The
 * contents are kept; the new elements are not initialised. Returns 0, or
 * -ENOMEM with the array and *CAP unchanged. Inline for the common case,
 * room already there: it sits on per-element paths (trace pushes). */
static inline int rtl_grow(void *arrp, size_t *cap, size_t need, size_t elem)
{
	return need <= *cap ? 0 : rtl_grow_to(arrp, cap, need, elem);
}

/* Sorts N elements of SIZE bytes at V by the uint64_t at byte
 * offset KEY in each, keeping the order of equal keys (LSD radix sort over
 * digits of up to 11 bits of the keys' offsets from the smallest, as many
 * as their span needs: a few passes where qsort's comparisons cost tens of
 * milliseconds for 200,000 code pointers; none when already sorted).
 * Sorting by a minor key, then by the major one, sorts by both. Returns 0
 * or -ENOMEM (V unchanged). */
int rtl_radix_sort_u64(void *v, size_t n, size_t size, size_t key);
/* The same with TMP, room for N elements, as the second buffer: for a
 * caller that sorts several arrays and would rather reuse its pages than
 * have each sort fault in fresh ones. */
int rtl_radix_sort_u64_tmp(void *v, size_t n, size_t size, size_t key, void *tmp);
/* The same for keys known to lie in [LO, HI]: no read to find their range
 * (nor to see that they are sorted already). */
int rtl_radix_sort_u64_within(void *v, size_t n, size_t size, size_t key, void *tmp,
			      uint64_t lo, uint64_t hi);

/* The first index i in V[0..N) (sorted ascending) with V[i] >= KEY; N when
 * there is none. Inline: address maps are searched on hot paths. */
static inline size_t rtl_lower_bound_u64(const uint64_t *v, size_t n, uint64_t key)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (v[mid] < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The same over N records of SIZE bytes at V, sorted by the uint64_t at
 * offset KEY in each. */
static inline size_t rtl_lower_bound_u64_in(const void *v, size_t n, size_t size, size_t key, uint64_t x)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		uint64_t at;
		memcpy(&at, (const char *)v + mid * size + key, sizeof(at));
		if (at < x)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

#endif
