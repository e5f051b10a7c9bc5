/* rtl_grow and rtl_lower_bound_u64 against plain loops: contents kept
 * across growth, capacity at least what was asked, and the lower bound
 * equal to a linear scan on random sorted arrays with duplicates. */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <stdlib.h>
#include "util/array.h"
#include "check.h"

struct pair { uint64_t a, b; };

static void grow_keeps_contents(void)
{
	struct pair *v = NULL;
	size_t n = 0, cap = 0, reallocs = 0;
	for (uint64_t i = 0; i < 100000; i++) {
		size_t before = cap;
		CHECK_EQ(rtl_grow(&v, &cap, n + 1, sizeof(*v)), 0);
		CHECK(cap >= n + 1);
		reallocs += cap != before;
		v[n++] = (struct pair){ i, ~i };
	}
	for (size_t i = 0; i < n; i++)
		if (v[i].a != i || v[i].b != ~(uint64_t)i) {
			CHECK(!"element lost in growth");
			break;
		}
	CHECK(reallocs < 20);   /* doubling, not one element at a time */
	size_t keep = cap;
	CHECK_EQ(rtl_grow(&v, &cap, 5, sizeof(*v)), 0);   /* room already: no change */
	CHECK_EQ(cap, keep);
	free(v);

	/* a request that cannot be allocated leaves the array alone */
	uint8_t *b = NULL;
	size_t bcap = 0;
	CHECK_EQ(rtl_grow(&b, &bcap, 10, 1), 0);
	b[0] = 42;
	CHECK_EQ(rtl_grow(&b, &bcap, SIZE_MAX / 2 + 2, 1), -ENOMEM);
	CHECK_EQ(rtl_grow(&b, &bcap, SIZE_MAX / 8, 16), -ENOMEM);
	CHECK(bcap >= 10 && bcap < 4096 && b[0] == 42);
	free(b);
}

static void lower_bound_matches_scan(void)
{
	uint64_t v[64];
	unsigned seed = 99;
	for (int round = 0; round < 2000; round++) {
		size_t n = (size_t)(round % 65);
		uint64_t x = 0;
		for (size_t i = 0; i < n; i++) {
			seed = seed * 1103515245 + 12345;
			x += (seed >> 16) % 3;           /* steps of 0..2: duplicates */
			v[i] = x;
		}
		for (uint64_t key = 0; key <= x + 1; key++) {
			size_t want = 0;
			while (want < n && v[want] < key)
				want++;
			CHECK_EQ(rtl_lower_bound_u64(v, n, key), want);
		}
	}
	uint64_t big[] = { 0, UINT64_MAX - 1, UINT64_MAX };
	CHECK_EQ(rtl_lower_bound_u64(big, 3, UINT64_MAX), 2);
	CHECK_EQ(rtl_lower_bound_u64(big, 3, 1), 1);
	CHECK_EQ(rtl_lower_bound_u64(NULL, 0, 5), 0);
}

struct two_keys { uint64_t where, target; };

static int two_keys_cmp(const void *a, const void *b)
{
	const struct two_keys *x = a, *y = b;
	if (x->target != y->target)
		return x->target < y->target ? -1 : 1;
	return (x->where > y->where) - (x->where < y->where);
}

/* Two stable radix passes (minor key, then major) order pairs as qsort
 * with a two-key comparison does; keys that differ in few bits, in many,
 * and all equal; small sorts (8-bit digits) and large ones (13-bit). */
static void radix_sort_matches_qsort(void)
{
	static const uint64_t spans[] = { 0, 0xff, 0x3ffffff, ~0ull };
	static const size_t sizes[] = { 1000, 50000 };
	uint64_t seed = 88172645463325252ull;
	for (size_t s = 0; s < 2 * sizeof(spans) / sizeof(*spans); s++) {
		size_t n = sizes[s & 1];
		struct two_keys *a = malloc(n * sizeof(*a)), *b = malloc(n * sizeof(*b));
		for (size_t i = 0; i < n; i++) {
			seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
			a[i].target = 0x400000 + (seed & spans[s / 2]);
			seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
			a[i].where = 0x600000 + (seed & 0xfffff);
		}
		memcpy(b, a, n * sizeof(*a));
		CHECK_EQ(rtl_radix_sort_u64(a, n, sizeof(*a), offsetof(struct two_keys, where)), 0);
		if (s & 1) {   /* bounds given, wider than the keys' */
			struct two_keys *t = malloc(n * sizeof(*t));
			int all = spans[s / 2] == ~0ull;
			CHECK_EQ(rtl_radix_sort_u64_within(a, n, sizeof(*a), offsetof(struct two_keys, target), t,
							   all ? 0 : 0x3fff00, all ? ~0ull : 0x400005 + spans[s / 2]), 0);
			free(t);
		} else {
			CHECK_EQ(rtl_radix_sort_u64(a, n, sizeof(*a), offsetof(struct two_keys, target)), 0);
		}
		qsort(b, n, sizeof(*b), two_keys_cmp);
		CHECK(!memcmp(a, b, n * sizeof(*a)));
		free(a);
		free(b);
	}
}

int main(void)
{
	grow_keeps_contents();
	lower_bound_matches_scan();
	radix_sort_matches_qsort();
	return CHECK_DONE();
}
