/* Reuse distances of a stream of line references (fully-associative LRU
 * stack distances) with a Fenwick tree over last-access times: each line
 * keeps one mark at the time of its latest access, so the distance of a
 * reference is the number of marks after the line's previous time. Times
 * are renumbered when the tree fills, so memory follows the number of
 * distinct lines, not the trace length. O(log n) per reference. */
#ifndef RETICLE_ANALYSIS_REUSE_H
#define RETICLE_ANALYSIS_REUSE_H

#include <reticle/cachesim.h>

struct cs_reuse;
int cs_reuse_create(uint32_t line, struct cs_reuse **out);
void cs_reuse_run(struct cs_reuse *r, const rtl_access *a, size_t n);
void cs_reuse_hist(const struct cs_reuse *r, rtl_reuse_hist *out);
void cs_reuse_free(struct cs_reuse *r);

#endif
