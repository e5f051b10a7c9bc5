/* Per-function data of one binary kept between runs: warm start's decoded
 * instructions (decode_cache.c) and relocated copies (copy_cache.c).
 *
 * One file per binary and kind, in the warm-start cache directory: entries
 * sorted by link-time address, each with the function's size, a hash of its
 * bytes and a hash of its blob. A function whose bytes changed, or whose
 * blob is damaged, is not found: a stale or damaged file costs time, never
 * correctness. Blobs made in a run join the file's (those of the functions
 * still listed) when it ends. */
#ifndef RETICLE_WARM_FN_CACHE_H
#define RETICLE_WARM_FN_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <reticle/binary.h>

struct fn_cache;

/* The cache of file PATH, whose files start with MAGIC: empty when there
 * is no such file, or it is not one. NULL when out of memory. */
struct fn_cache *fncache_open(const char *path, const char magic[8]);
void fncache_free(struct fn_cache *c);

/* F's blob (8-byte aligned, *LEN bytes) when the file has one made from
 * F's bytes CODE, else NULL. Reads only the file: safe beside other threads
 * (but not beside fncache_keep and fncache_save). */
const void *fncache_find(const struct fn_cache *c, const rtl_function *f, const uint8_t *code,
			 size_t *len);

/* Keeps BLOB (malloc'd, taken over; LEN a multiple of 8), made from CODE,
 * the bytes of function K of BIN, for the next run. */
void fncache_keep(struct fn_cache *c, const rtl_binary *bin, size_t k, const uint8_t *code,
		  void *blob, size_t len);

/* Writes the file with the blobs, this run's or the file's, of the
 * functions of BIN whose link-time entries are LIST[i] & MASK; leaves the
 * file as it is when that would not change it. */
void fncache_save(struct fn_cache *c, const rtl_binary *bin, const uint64_t *list, size_t n,
		  uint64_t mask);

#endif
