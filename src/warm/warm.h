/* Warm start's store (src/warm/): what earlier runs of a binary left in
 * the cache directory, and copies made ahead of first calls in this one.
 * The patcher reads it (saved decodings and copies, copies made ahead) and
 * keeps what it makes; the engine's warm start (engine/warm.c) decides
 * which functions are relocated from it and when, and saves at the end. */
#ifndef RETICLE_WARM_H
#define RETICLE_WARM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <reticle/binary.h>
#include "space/space.h"

struct probe_set;
struct x86_insn;
struct x86_reloc;

/* files.c: the cache's files */
/* The file of BIN with SUFFIX in cache directory DIR (malloc'd), or NULL. */
char *warm_file_path(const char *dir, const rtl_binary *bin, const char *suffix);
/* Makes directory DIR and those above it as needed: 0 or -errno. */
int warm_make_dirs(const char *dir);
/* Writes the N PARTS to PATH through a temporary file renamed over it
 * (its directory made when missing). */
void warm_write_file(const char *path, const void *const *parts, const size_t *lens, int n);
/* The cache within its size: */
/* PATH (or open FD) served this run: its time says so (once a day). */
void warm_touch(const char *path, int fd);
/* Removes the least recently used files of DIR while it holds more than MAX. */
void warm_prune(const char *dir, uint64_t max_bytes);

/* armed_text.c: a module's text with its int3s, mapped instead of written */
enum { ARMED_TEXT_HEADER = 4096 };   /* the file's text starts after it */
/* The pages the loader maps for BIN's executable segment: link-time
 * ADDR, file offset OFF, LEN bytes. */
struct armed_seg {
	uint64_t addr, off, len;
};
/* BIN's one executable segment (false for none or several). */
bool armed_text_segment(const rtl_binary *bin, struct armed_seg *seg);
/* The file in cache directory DIR of BIN's segment SEG armed at the N
 * entries IDX (function indices), when it is there and holds them
 * (malloc'd path; *BINST: the binary's stat), else NULL. */
struct stat;
char *armed_text_find(const char *dir, const rtl_binary *bin, const struct armed_seg *seg,
		      const uint32_t *idx, size_t n, struct stat *binst);
/* Writes that file for the next run, on a helper thread of SV's (started
 * at the first; CPUS: where it may run, NULL: any). */
struct armed_saver;
struct os_cpus;
struct armed_saver *armed_saver_new(const struct os_cpus *cpus);
void armed_text_save(struct armed_saver *sv, const char *dir, const rtl_binary *bin,
		     const struct armed_seg *seg, const uint32_t *idx, size_t n);
/* Waits for the files queued, and frees SV. */
void armed_saver_free(struct armed_saver *sv);

/* facts_cache.c: a binary's discovered functions */
/* Opens PATH as rtl_binary_open does, its functions from the facts an
 * earlier run saved in cache directory DIR when they still hold (else
 * discovered, and saved for the next run); DIR NULL: no cache. */
int warm_open_binary(const char *dir, const char *path, rtl_binary **out);

/* prepare.c: a copy made for no process */
/* A position-free copy (isa/x86_64/persist.h) of function K of BIN with
 * the plans of PROBES, made from the binary alone: *BLOB malloc'd. */
struct x86_foreign_cache;
int prepare_copy(const rtl_binary *bin, size_t k, const struct probe_set *probes,
		 struct x86_foreign_cache *foreign, void **blob, size_t *len);

/* ahead.c: copies made ahead of first calls on a helper thread */
struct ahead;
/* NULL when it cannot start; CPUS: where the helper may run (NULL: any);
 * PROBES: the session's. */
struct ahead *ahead_new(const struct os_cpus *cpus, const struct probe_set *probes);
/* Stops the helper; false when it could not be waited for: then it still
 * reads the binaries it was given, which must not be closed. */
bool ahead_free(struct ahead *pd);
/* Tells the helper to stop after the copy it is making (no first call
 * will come for more): its last copy overlaps the profile's writing. */
void ahead_stop(struct ahead *pd);
/* Function K of BIN is likely to be called soon (a copy calls it). */
void ahead_want(struct ahead *pd, const rtl_binary *bin, size_t k);
/* All of BIN's functions, in address order, when there is nothing else to do. */
void ahead_sweep(struct ahead *pd, const rtl_binary *bin);
/* Function K of BIN's copy made ahead (prepare_copy's blob, *BLOB malloc'd). */
bool ahead_take(struct ahead *pd, const rtl_binary *bin, size_t k, void **blob, size_t *len);
/* decode_cache.c: the warm-start list's functions, decoded */
/* M's file in cache directory DIR. */
void dcache_open(struct module *m, const char *dir);
/* The instructions of F (of M, whose bytes are CODE), when the cache has
 * them (*OUT malloc'd, run-time addresses). Safe beside other threads. */
bool dcache_get(const struct module *m, const rtl_function *f, const uint8_t *code,
		struct x86_insn **out, size_t *n);
/* Keeps the N instructions of function K of M (its bytes CODE) for the next run. */
void dcache_keep(struct module *m, size_t k, const uint8_t *code, const struct x86_insn *insns,
		 size_t n);
/* Writes M's cache for the functions of LIST (link-time entries & MASK). */
void dcache_save(struct module *m, const uint64_t *list, size_t nlist, uint64_t mask);
void dcache_free(struct module *m);

/* copy_cache.c: the warm-start list's functions, relocated */
/* M's file in cache directory DIR for the copies of probe set PROBES,
 * with original return addresses or not. */
/* MODE: "" for code-cache return addresses, "r" original ones, "rs" the
 * soft kind (x86_reloc_env's original_returns_soft). */
void ccache_open(struct module *m, const char *dir, const struct probe_set *probes, const char *mode);
/* F's saved copy (a blob for isa/x86_64/persist.h) when its bytes are
 * CODE, else NULL. Safe beside other threads. */
const void *ccache_find(const struct module *m, const rtl_function *f, const uint8_t *code, size_t *len);
/* Saves R, the copy of function K of M (its bytes CODE) just emitted with
 * single-thread counters [CTR_LO, CTR_HI), which branches to TARGETS
 * outside it, for the next run; false when it cannot. */
struct x86_reloc;
bool ccache_keep(struct module *m, size_t k, const uint8_t *code, const struct x86_reloc *r,
		 uint64_t ctr_lo, uint64_t ctr_hi, const uint64_t *targets, size_t ntargets);
/* Saves BLOB (malloc'd, taken over), a copy of function K of M made from
 * its bytes CODE (prepare_copy), for the next run. */
void ccache_keep_blob(struct module *m, size_t k, const uint8_t *code, void *blob, size_t len);
/* Writes M's file for the functions of LIST (link-time entries & MASK). */
void ccache_save(struct module *m, const uint64_t *list, size_t nlist, uint64_t mask);
void ccache_free(struct module *m);


#endif
