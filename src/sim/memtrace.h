/* reticle sim -c memtrace: the simulated program's data accesses fed to a
 * bank of simulated caches on-line (reticle/cachesim.h), as the native
 * memtrace collector feeds it, and written into the run's profile in the
 * same form (the metrics mem_loads, mem_stores, mem_misses_read,
 * mem_misses_write per instruction; the meta memtrace_cache_C_LEVEL), so
 * that `reticle report` and its cachegrind export read both alike. */
#ifndef RETICLE_SIM_MEMTRACE_H
#define RETICLE_SIM_MEMTRACE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <reticle/cachesim.h>
#include <reticle/profile.h>

struct rtl_sim;

/* Starts tracing M's data accesses through the N configurations CFGS
 * (copied); at the end of the run a summary per configuration and level
 * goes to REPORT. 0 or -err. */
int sim_memtrace_start(struct rtl_sim *m, const rtl_cache_config *cfgs, size_t n, FILE *report);
/* Writes what M's memtrace measured into PROF: FUNCTION_OF gives the
 * profile id of the function holding an instruction (-1: none) and the
 * instruction's address in the profile (*SITE). */
int sim_memtrace_write(struct rtl_sim *m, rtl_profile *prof,
		       int64_t (*function_of)(uint64_t pc, uint64_t *site, void *ctx), void *ctx);
void sim_memtrace_free(struct rtl_sim *m);

#endif
