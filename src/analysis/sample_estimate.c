/* Ratio estimates from sampled windows (see sample_estimate.h). */
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include "analysis/sample_estimate.h"

static const double SINGLE_MAX = 0.01;

/* Sums over one stratum's windows of one cell: enough for the mean and
 * the variance of miss - R acc for any R, known only at the end. */
struct sums {
	uint64_t n;
	double a, m, aa, mm, am;
};

struct sample_estimate {
	size_t ncells, nstrata;
	double *weight;      /* per stratum */
	struct sums *s;      /* ncells x nstrata */
};

struct sample_estimate *sample_estimate_new(size_t ncells, size_t nstrata, const double *weight)
{
	struct sample_estimate *e = calloc(1, sizeof(*e));
	if (!e)
		return NULL;
	if (!weight)
		nstrata = 1;
	e->ncells = ncells;
	e->nstrata = nstrata;
	e->weight = malloc((nstrata ? nstrata : 1) * sizeof(*e->weight));
	size_t cells = ncells * nstrata;
	e->s = calloc(cells ? cells : 1, sizeof(*e->s));
	if (!e->weight || !e->s) {
		sample_estimate_free(e);
		return NULL;
	}
	for (size_t h = 0; h < nstrata; h++)
		e->weight[h] = weight ? weight[h] : 1.0;
	return e;
}

void sample_estimate_free(struct sample_estimate *e)
{
	if (!e)
		return;
	free(e->weight);
	free(e->s);
	free(e);
}

void sample_estimate_add(struct sample_estimate *e, size_t cell, size_t h, double acc, double miss)
{
	if (!e || cell >= e->ncells || h >= e->nstrata)
		return;
	struct sums *s = &e->s[cell * e->nstrata + h];
	s->n++;
	s->a += acc;
	s->m += miss;
	s->aa += acc * acc;
	s->mm += miss * miss;
	s->am += acc * miss;
}

struct sample_result sample_estimate_get(const struct sample_estimate *e, size_t cell, double covered)
{
	struct sample_result r = { 0, -1, 0, 0, 0 };
	if (!e || cell >= e->ncells)
		return r;
	const struct sums *s = &e->s[cell * e->nstrata];
	bool known = true;
	double total = 0, single = 0;   /* weights: all strata's, those of one window */
	for (size_t h = 0; h < e->nstrata; h++) {
		total += e->weight[h] > 0 ? e->weight[h] : 0;
		if (!s[h].n) {
			known &= e->weight[h] <= 0;
			continue;
		}
		r.acc += e->weight[h] * s[h].a / (double)s[h].n;
		r.miss += e->weight[h] * s[h].m / (double)s[h].n;
		r.windows += s[h].n;
		single += s[h].n == 1 && e->weight[h] > 0 ? e->weight[h] : 0;
	}
	/* strata of one window have no variance to measure: below 1% of the
	 * weight in all (a cluster of one or two intervals, traced whole by
	 * reticle simpoint --points) they are left out of it, else the
	 * interval is unknown */
	known &= single <= SINGLE_MAX * total;
	if (r.acc <= 0)
		return r;
	r.ratio = r.miss / r.acc;
	if (!known)
		return r;
	double var = 0, R = r.ratio;
	for (size_t h = 0; h < e->nstrata; h++) {
		if (s[h].n < 2)
			continue;
		double n = (double)s[h].n;
		/* sum of (m - R a)^2 less n times its mean squared */
		double ss = s[h].mm - 2 * R * s[h].am + R * R * s[h].aa;
		double mean = (s[h].m - R * s[h].a) / n;
		double s2 = (ss - n * mean * mean) / (n - 1);
		var += e->weight[h] * e->weight[h] * (s2 > 0 ? s2 : 0) / n;
	}
	if (covered > 0 && covered < 1)
		var *= 1 - covered;
	r.half = 1.96 * sqrt(var) / r.acc;
	return r;
}
