/* A relocated copy saved in one run and placed at another address in a
 * later one (warm start's copy cache, warm/copy_cache.c).
 *
 * A copy depends on where it is, where its counters are, where its module
 * is loaded, and which functions have copies when it is made (a branch out
 * goes to the target's copy when there is one). The writer logs every field
 * that depends on one of those (writer.h); x86_persist names each such
 * field's target by what it is: a place in the copy, the function's N-th
 * counter, a link-time address in the module, or an original address to
 * redirect again. x86_restore makes from that, for a new address, new
 * counters, the module's new load address and the redirections of the
 * moment, the result x86_emit would make then: the same bytes and records. */
#ifndef RETICLE_X86_PERSIST_H
#define RETICLE_X86_PERSIST_H

#include <stddef.h>
#include <stdint.h>
#include "isa/x86_64/relocate.h"

struct x86_persist_info {
	uint64_t fn;              /* run-time address of the function */
	uint64_t bias;            /* its module's: run-time = link-time + bias */
	uint64_t mod_lo, mod_hi;  /* the module's run-time extent */
	/* the counters x86_emit allocated for it, 8 bytes each, in order */
	uint64_t ctr_lo, ctr_hi;
	/* its direct branch targets outside it (x86_external_targets), run-time */
	const uint64_t *targets;
	size_t ntargets;
};

/* *BLOB (malloc'd, *LEN bytes, a multiple of 8) describes R, emitted at
 * R->w.base (16-byte aligned) with single-thread counters. Fails with
 * -RTL_ERR_UNSUPPORTED when a field depends on something else. */
int x86_persist(const struct x86_reloc *r, const struct x86_persist_info *in, void **blob,
		size_t *len);

/* The direct branch targets outside the function that BLOB holds, at run
 * time for a module with BIAS: at most MAX in OUT, how many in *N.
 * Fails on a malformed blob. */
int x86_persisted_targets(const void *blob, size_t len, uint64_t bias, uint64_t *out, size_t max,
			  size_t *n);

/* The copy BLOB describes, of the function at run-time ENV->addr in a
 * module with BIAS, for run-time address DEST (16-byte aligned): counters
 * from ENV->new_counter, branches out through ENV->redirect, as x86_emit
 * would. Fails on a malformed blob (-RTL_ERR_BAD_INPUT), or a target out of
 * reach or counters full (-RTL_ERR_NO_SPACE). */
int x86_restore(const void *blob, size_t len, const struct x86_reloc_env *env, uint64_t dest,
		uint64_t bias, struct x86_reloc *out);

/* NULL when A and B are the same copy with the same records, else what
 * differs first (in BUF). */
const char *x86_reloc_differs(const struct x86_reloc *a, const struct x86_reloc *b, char *buf,
			      size_t len);

#endif
