/* The sampled miss-ratio estimate and its 95% interval (analysis/
 * sample_estimate.c) against the textbook formulas computed here in two
 * passes, and against the truth: windows drawn from a known population of
 * intervals, stratified or not, must give intervals that hold the
 * population's ratio about 95% of the time. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include "analysis/sample_estimate.h"
#include "check.h"

static uint64_t rng = 88172645463325252ull;
static double uniform(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (double)(rng >> 11) / 9007199254740992.0;
}

/* A population of intervals in 3 strata with their own miss rates and a
 * trend within each (as sqlite3's growing B-tree). */
enum { POP = 3000, STRATA = 3 };
static double pa[POP], pm[POP];
static int ps[POP];

static void population(void)
{
	for (int i = 0; i < POP; i++) {
		ps[i] = i % 7 == 0 ? 0 : i % 3 == 0 ? 1 : 2;
		pa[i] = 800000 + 400000 * uniform();
		double rate = (ps[i] == 0 ? 0.04 : ps[i] == 1 ? 0.01 : 0.002) * (1 + (double)i / POP);
		pm[i] = pa[i] * rate * (0.3 + 1.4 * uniform());
	}
}

/* The formulas, straight: per stratum means and the sample variance of
 * m - R a about its own mean. */
static void reference(const int *pick, int n, const double *w, int nstrata, double covered, double *ratio,
		      double *half)
{
	double X = 0, Y = 0, var = 0;
	for (int h = 0; h < nstrata; h++) {
		double a = 0, m = 0;
		int k = 0;
		for (int j = 0; j < n; j++)
			if (ps[pick[j]] == h || nstrata == 1)
				a += pa[pick[j]], m += pm[pick[j]], k++;
		X += w[h] * a / k;
		Y += w[h] * m / k;
	}
	double R = Y / X;
	for (int h = 0; h < nstrata; h++) {
		double mean = 0, ss = 0;
		int k = 0;
		for (int j = 0; j < n; j++)
			if (ps[pick[j]] == h || nstrata == 1)
				mean += pm[pick[j]] - R * pa[pick[j]], k++;
		mean /= k;
		for (int j = 0; j < n; j++)
			if (ps[pick[j]] == h || nstrata == 1) {
				double d = pm[pick[j]] - R * pa[pick[j]] - mean;
				ss += d * d;
			}
		var += w[h] * w[h] * ss / (k - 1) / k;
	}
	*ratio = R;
	*half = 1.96 * sqrt(var * (covered > 0 ? 1 - covered : 1)) / X;
}

int main(void)
{
	population();
	double truth_a = 0, truth_m = 0, share[STRATA] = { 0 };
	for (int i = 0; i < POP; i++) {
		truth_a += pa[i];
		truth_m += pm[i];
		share[ps[i]] += 1.0 / POP;
	}
	double truth = truth_m / truth_a;

	/* against the formulas: one stratum, then three */
	int pick[300];
	for (int j = 0; j < 300; j++)
		pick[j] = (int)(uniform() * POP);
	struct sample_estimate *e = sample_estimate_new(2, 1, NULL);
	CHECK(e != NULL);
	for (int j = 0; j < 300; j++)
		sample_estimate_add(e, 1, 0, pa[pick[j]], pm[pick[j]]);
	double R, H, one = 1;
	reference(pick, 300, &one, 1, 0.1, &R, &H);
	struct sample_result r = sample_estimate_get(e, 1, 0.1);
	CHECK(fabs(r.ratio - R) < 1e-12 * R && fabs(r.half - H) < 1e-9 * H && r.windows == 300);
	r = sample_estimate_get(e, 0, 0.1);   /* a cell without windows */
	CHECK(r.ratio == 0 && r.windows == 0);
	sample_estimate_free(e);

	e = sample_estimate_new(1, STRATA, share);
	for (int j = 0; j < 300; j++)
		sample_estimate_add(e, 0, (size_t)ps[pick[j]], pa[pick[j]], pm[pick[j]]);
	reference(pick, 300, share, STRATA, 0, &R, &H);
	r = sample_estimate_get(e, 0, 0);
	CHECK(fabs(r.ratio - R) < 1e-12 * R && fabs(r.half - H) < 1e-9 * H);
	sample_estimate_free(e);

	/* a stratum of one window: no interval; unless it holds under 1% of
	 * the weight, then left out of the variance */
	e = sample_estimate_new(1, 2, (double[]){ 0.5, 0.5 });
	sample_estimate_add(e, 0, 0, 100, 5);
	sample_estimate_add(e, 0, 0, 100, 7);
	sample_estimate_add(e, 0, 1, 100, 1);
	r = sample_estimate_get(e, 0, 0);
	CHECK(r.half < 0 && fabs(r.ratio - 0.035) < 1e-12);
	sample_estimate_free(e);
	e = sample_estimate_new(1, 2, (double[]){ 0.995, 0.005 });
	sample_estimate_add(e, 0, 0, 100, 5);
	sample_estimate_add(e, 0, 0, 100, 7);
	sample_estimate_add(e, 0, 1, 100, 1);
	r = sample_estimate_get(e, 0, 0);
	/* only stratum 0's variance: d = m - R a about its mean, (-1, 1) */
	CHECK(r.half > 0 && fabs(r.half - 1.96 * sqrt(0.995 * 0.995 * 2.0 / 2) / r.acc) < 1e-9);
	sample_estimate_free(e);

	/* coverage: 2,000 stratified samples of 20 windows per stratum; the
	 * interval must hold the truth about 95% of the time */
	int held = 0, trials = 2000;
	for (int t = 0; t < trials; t++) {
		e = sample_estimate_new(1, STRATA, share);
		for (int h = 0; h < STRATA; h++)
			for (int j = 0; j < 20;) {
				int i = (int)(uniform() * POP);
				if (ps[i] == h) {
					sample_estimate_add(e, 0, (size_t)h, pa[i], pm[i]);
					j++;
				}
			}
		r = sample_estimate_get(e, 0, 0);
		held += fabs(r.ratio - truth) <= r.half;
		sample_estimate_free(e);
	}
	printf("the 95%% interval held the truth in %d of %d samples\n", held, trials);
	CHECK(held > 0.92 * trials && held < 0.98 * trials);
	return check_failures ? 1 : 0;
}
