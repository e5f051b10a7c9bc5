/* FNV-1a, 64 bits: names for cache files and keys, not for security. */
#ifndef RETICLE_UTIL_HASH_H
#define RETICLE_UTIL_HASH_H

#include <stddef.h>
#include <stdint.h>

#define FNV1A_INIT 0xcbf29ce484222325ull

/* H extended with the N bytes at P. */
static inline uint64_t fnv1a(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = p;
	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3ull;
	return h;
}

/* splitmix64's finalizer: X's bits mixed, a bijection (seeds, offsets
 * drawn from counters). */
static inline uint64_t rtl_mix64(uint64_t x)
{
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

#endif
