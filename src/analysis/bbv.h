/* Layout of rtl_bbv, shared by bbv.c and simpoint.c: all intervals'
 * (id, count) pairs in two flat arrays, interval i at [start[i], start[i+1]). */
#ifndef RETICLE_ANALYSIS_BBV_H
#define RETICLE_ANALYSIS_BBV_H

#include <stddef.h>
#include <stdint.h>

struct rtl_bbv {
	uint32_t *id;
	uint64_t *count;
	size_t n, cap;
	size_t *start;     /* nint + 1 entries */
	uint64_t *total;
	size_t nint, intcap;
};

#endif
