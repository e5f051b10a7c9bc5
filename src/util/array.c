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

int rtl_radix_sort_u64(void *v, size_t n, size_t size, size_t key)
{
	if (n < 2)
		return 0;
	uint8_t *a = v, *b = malloc(n * size);
	if (!b)
		return -ENOMEM;
	uint64_t lo = key_at(a, key), diff = 0;
	for (size_t i = 1; i < n; i++)
		diff |= key_at(a + i * size, key) ^ lo;
	uint8_t *src = a, *dst = b;
	for (unsigned shift = 0; shift < 64; shift += 8) {
		if (!((diff >> shift) & 0xff))
			continue;   /* every key has the same byte here */
		size_t count[257] = { 0 };
		for (size_t i = 0; i < n; i++)
			count[((key_at(src + i * size, key) >> shift) & 0xff) + 1]++;
		for (int d = 0; d < 256; d++)
			count[d + 1] += count[d];
		if (size == 16) {   /* code pointers: a copy the compiler inlines */
			for (size_t i = 0; i < n; i++)
				memcpy(dst + count[(key_at(src + i * 16, key) >> shift) & 0xff]++ * 16,
				       src + i * 16, 16);
		} else {
			for (size_t i = 0; i < n; i++)
				memcpy(dst + count[(key_at(src + i * size, key) >> shift) & 0xff]++ * size,
				       src + i * size, size);
		}
		uint8_t *t = src;
		src = dst;
		dst = t;
	}
	if (src != a)
		memcpy(a, src, n * size);
	free(b);
	return 0;
}
