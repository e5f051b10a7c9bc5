/* A miss ratio estimated from sampled windows, with its 95% confidence
 * interval: the ratio estimator of survey sampling over windows (each a
 * pair accesses, misses), stratified where windows come in strata (the
 * clusters of SimPoint, each with its share of the run), otherwise one
 * stratum of windows drawn one per period (memtrace's jittered periodic
 * windows, taken as a simple random sample: slightly conservative).
 *
 * R = sum_h W_h mean_h(miss) / sum_h W_h mean_h(acc); its variance
 * (Taylor linearization) sum_h W_h^2 s_h^2 / n_h / X^2, with s_h^2 the
 * sample variance of miss - R acc in stratum h and X the denominator,
 * times (1 - f) for the share f of the run the windows cover where that
 * is known. Strata of one window each have no variance to measure: if
 * they hold more than 1% of the weight in all, the interval is unknown
 * (SimPoint's usual one point per cluster); below that they are left out
 * of the variance (clusters of one or two intervals, which reticle
 * simpoint --points traces whole). */
#ifndef RETICLE_ANALYSIS_SAMPLE_ESTIMATE_H
#define RETICLE_ANALYSIS_SAMPLE_ESTIMATE_H
#include <stddef.h>
#include <stdint.h>

struct sample_estimate;

/* NCELLS independent quantities (a configuration's level each), windows in
 * NSTRATA strata of weights WEIGHT (NULL: one stratum, weight 1). NULL on
 * allocation failure. */
struct sample_estimate *sample_estimate_new(size_t ncells, size_t nstrata, const double *weight);
void sample_estimate_free(struct sample_estimate *e);
/* One window of stratum H: ACC accesses and MISS misses of cell CELL. */
void sample_estimate_add(struct sample_estimate *e, size_t cell, size_t h, double acc, double miss);

struct sample_result {
	double ratio;        /* 0 without accesses */
	double half;         /* half-width of the 95% interval; < 0: unknown */
	double acc, miss;    /* weighted sums of the windows' means */
	uint64_t windows;
};
/* CELL's estimate; COVERED is the share of the run the windows cover
 * (0 when unknown: no finite-population correction). */
struct sample_result sample_estimate_get(const struct sample_estimate *e, size_t cell, double covered);
#endif
