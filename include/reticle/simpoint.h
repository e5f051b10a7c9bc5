/* SimPoint phase selection over basic-block vectors (BBVs).
 *
 * An rtl_bbv holds one sparse vector per fixed-size interval of execution:
 * block id -> count (executions x block length, valgrind exp-bbv's "T:id:n"
 * convention). A collector pushes intervals with rtl_bbv_add_interval();
 * rtl_bbv_read() loads exp-bbv's file. rtl_simpoint_choose() follows
 * SimPoint 3.0: normalize each vector, project it to a few dimensions with
 * a seeded uniform [-1, 1] matrix, k-means (several random seeds per k),
 * BIC for every k, the smallest k whose BIC reaches 90% of the observed
 * range, the interval nearest each centroid as representative, weight =
 * share of intervals. Deterministic for a given seed.
 *
 * Ownership: rtl_bbv is the caller's (rtl_bbv_destroy); the points array
 * returned by rtl_simpoint_choose() is the caller's to free(). */
#ifndef RETICLE_SIMPOINT_H
#define RETICLE_SIMPOINT_H

#include <reticle/api.h>

#include <stddef.h>
#include <stdint.h>

typedef struct rtl_bbv rtl_bbv;

RTL_API int rtl_bbv_create(rtl_bbv **out);
RTL_API void rtl_bbv_destroy(rtl_bbv *v);
/* Appends one interval: N (block id, count) pairs; ids are 1-based
 * (-EINVAL, nothing added, for an id 0). */
RTL_API int rtl_bbv_add_interval(rtl_bbv *v, const uint32_t *ids, const uint64_t *counts, size_t n);
/* Reads an exp-bbv file. -RTL_ERR_BAD_INPUT with ERR naming the line, or
 * saying the file holds no interval. */
RTL_API int rtl_bbv_read(const char *path, rtl_bbv **out, char *err, size_t errlen);
RTL_API size_t rtl_bbv_intervals(const rtl_bbv *v);
/* Sum of the counts of interval I (its instructions, for exp-bbv). */
RTL_API uint64_t rtl_bbv_interval_total(const rtl_bbv *v, size_t i);

typedef struct rtl_simpoint_opts {
	int max_k;          /* largest k tried (default 10) */
	uint64_t seed;      /* projection and k-means seeds (default 1) */
	int dims;           /* projected dimensions (default 15) */
	int inits;          /* k-means runs per k, best kept (default 5) */
	int iters;          /* k-means iterations at most (default 100) */
	double bic_frac;    /* share of the BIC range to reach (default 0.9) */
	/* About this many points in all instead of one per cluster (0: one
	 * per cluster, SimPoint's): each cluster gets a share by its size,
	 * two at least where it has two intervals, each drawn at random
	 * (from SEED) from its own run of the cluster's intervals in time
	 * order. Several points per cluster give a sampled estimate its
	 * variance (reticle run --sample simpoint), and follow what the
	 * vectors do not tell apart, such as data that grows. */
	size_t points;
} rtl_simpoint_opts;

typedef struct rtl_simpoint {
	size_t interval;    /* 0-based interval index */
	double weight;      /* share of intervals in its cluster (divided among
			     * the cluster's points where it has several) */
	int cluster;
	size_t members;
} rtl_simpoint;

typedef struct rtl_simpoint_result {
	int k;
	double bic[64];     /* bic[k - 1] for k = 1..max_k tried */
	int tried;
	rtl_simpoint *points;   /* npoints, sorted by interval; free() it */
	size_t npoints;         /* k, or more with OPTS->points */
	int *label;             /* cluster of every interval; free() it */
} rtl_simpoint_result;

/* OPTS may be NULL (defaults). */
RTL_API int rtl_simpoint_choose(const rtl_bbv *v, const rtl_simpoint_opts *opts, rtl_simpoint_result *out);

#endif
