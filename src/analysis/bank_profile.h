/* A cache bank's results in a profile, as the memtrace collector writes
 * them, natively (engine/memtrace.c) and simulated (sim/memtrace.c): the
 * misses of the attributed level per instruction (metrics mem_misses_read
 * and mem_misses_write; the bank's accesses carry an instruction's address
 * shifted left by one, the low bit set for a store), and each
 * configuration's accesses and misses per data level (meta
 * memtrace_cache_C_LEVEL: "NAME: loads A M stores A M"). */
#ifndef RETICLE_ANALYSIS_BANK_PROFILE_H
#define RETICLE_ANALYSIS_BANK_PROFILE_H

#include <stdint.h>
#include <reticle/cachesim.h>
#include <reticle/profile.h>

/* The meta key names of the levels (enum rtl_cache_level_id). */
extern const char *const bank_level_names[RTL_LEVELS];

/* FUNCTION_OF gives the profile id of the function holding the
 * instruction at INSN and its address in the profile (*SITE), or -1. */
int bank_profile_write(const rtl_cachesim *bank, rtl_profile *prof,
		       int64_t (*function_of)(uint64_t insn, uint64_t *site, void *ctx), void *ctx);

#endif
