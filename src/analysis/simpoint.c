/* SimPoint 3.0 phase selection (see include/reticle/simpoint.h). */
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <reticle/error.h>
#include <reticle/simpoint.h>
#include "bbv.h"
#include "util/hash.h"

static uint64_t splitmix(uint64_t x)
{
	return rtl_mix64(x + 0x9e3779b97f4a7c15ULL);
}

/* Entry (block, dim) of the projection matrix, uniform in [-1, 1]: computed
 * from the seed, so block ids need no bound and no table. */
static double proj(uint64_t seed, uint32_t block, int dim)
{
	uint64_t h = splitmix(seed ^ splitmix(((uint64_t)block << 8) | (uint64_t)dim));
	return (double)(h >> 11) * (2.0 / 9007199254740992.0) - 1.0;
}

/* Normalized, projected points: R x D. */
static double *project(const rtl_bbv *v, uint64_t seed, int D)
{
	double *x = calloc(v->nint * (size_t)D, sizeof(*x));

	if (!x)
		return NULL;
	for (size_t i = 0; i < v->nint; i++) {
		double tot = v->total[i] ? (double)v->total[i] : 1.0;
		for (size_t j = v->start[i]; j < v->start[i + 1]; j++)
			for (int d = 0; d < D; d++)
				x[i * D + d] += v->count[j] / tot * proj(seed, v->id[j], d);
	}
	return x;
}

static double dist2(const double *a, const double *b, int D)
{
	double s = 0;

	for (int d = 0; d < D; d++)
		s += (a[d] - b[d]) * (a[d] - b[d]);
	return s;
}

struct km {
	size_t R;
	int D, K;
	const double *x;
	double *c;      /* K x D centroids */
	int *lab;
	size_t *cnt;
};

static int nearest(const struct km *m, size_t i)
{
	int best = 0;
	double bd = DBL_MAX;

	for (int k = 0; k < m->K; k++) {
		double d = dist2(m->x + i * m->D, m->c + (size_t)k * m->D, m->D);
		if (d < bd)
			bd = d, best = k;
	}
	return best;
}

/* Centroids from labels; an empty cluster takes the point farthest from
 * its own centroid, so that K clusters stay K. */
static void recenter(struct km *m)
{
	memset(m->c, 0, (size_t)m->K * m->D * sizeof(*m->c));
	memset(m->cnt, 0, m->K * sizeof(*m->cnt));
	for (size_t i = 0; i < m->R; i++) {
		m->cnt[m->lab[i]]++;
		for (int d = 0; d < m->D; d++)
			m->c[(size_t)m->lab[i] * m->D + d] += m->x[i * m->D + d];
	}
	for (int k = 0; k < m->K; k++) {
		if (!m->cnt[k])
			continue;
		for (int d = 0; d < m->D; d++)
			m->c[(size_t)k * m->D + d] /= (double)m->cnt[k];
	}
	for (int k = 0; k < m->K; k++) {
		if (m->cnt[k])
			continue;
		size_t far = 0;
		double fd = -1;
		for (size_t i = 0; i < m->R; i++) {
			double d = dist2(m->x + i * m->D, m->c + (size_t)m->lab[i] * m->D, m->D);
			if (d > fd && m->cnt[m->lab[i]] > 1)
				fd = d, far = i;
		}
		m->cnt[m->lab[far]]--;
		m->lab[far] = k;
		m->cnt[k] = 1;
		memcpy(m->c + (size_t)k * m->D, m->x + far * m->D, m->D * sizeof(double));
	}
}

/* One k-means run from K distinct random points; returns the distortion. */
static double kmeans(struct km *m, uint64_t seed, int iters)
{
	uint64_t r = seed;

	for (int k = 0; k < m->K; k++) {
		size_t pick;
		int dup;
		do {   /* K distinct intervals (R >= K); lab[] keeps the picks */
			r = splitmix(r);
			pick = r % m->R;
			dup = 0;
			for (int j = 0; j < k; j++)
				dup |= m->lab[j] == (int)pick;
		} while (dup);
		m->lab[k] = (int)pick;
		memcpy(m->c + (size_t)k * m->D, m->x + pick * m->D, m->D * sizeof(double));
	}
	for (size_t i = 0; i < m->R; i++)
		m->lab[i] = -1;
	for (int it = 0; it < iters; it++) {
		int changed = 0;
		for (size_t i = 0; i < m->R; i++) {
			int k = nearest(m, i);
			changed |= k != m->lab[i];
			m->lab[i] = k;
		}
		recenter(m);
		if (!changed)
			break;
	}
	double sse = 0;
	for (size_t i = 0; i < m->R; i++)
		sse += dist2(m->x + i * m->D, m->c + (size_t)m->lab[i] * m->D, m->D);
	return sse;
}

/* BIC of a spherical-Gaussian mixture (Pelleg and Moore's X-means score,
 * as SimPoint uses it): log-likelihood minus p/2 log R. */
static double bic(const struct km *m, double sse)
{
	double R = (double)m->R, D = m->D, K = m->K;
	double var = R > K ? sse / (D * (R - K)) : 0;
	double ll = 0;

	if (var < 1e-300)
		var = 1e-300;
	for (int k = 0; k < m->K; k++)
		if (m->cnt[k])
			ll += m->cnt[k] * log(m->cnt[k] / R);
	ll += -R * D / 2 * log(2 * M_PI * var) - D * (R - K) / 2;
	double p = (K - 1) + D * K + 1;
	return ll - p / 2 * log(R);
}

static int cmp_point(const void *a, const void *b)
{
	const rtl_simpoint *x = a, *y = b;
	return x->interval < y->interval ? -1 : x->interval > y->interval;
}

/* Representatives of the clustering in M: the interval nearest each centroid. */
static rtl_simpoint *represent(const struct km *m)
{
	rtl_simpoint *p = calloc(m->K, sizeof(*p));

	if (!p)
		return NULL;
	for (int k = 0; k < m->K; k++) {
		double bd = DBL_MAX;
		for (size_t i = 0; i < m->R; i++) {
			if (m->lab[i] != k)
				continue;
			double d = dist2(m->x + i * m->D, m->c + (size_t)k * m->D, m->D);
			if (d < bd)
				bd = d, p[k].interval = i;
		}
		p[k].cluster = k;
		p[k].members = m->cnt[k];
		p[k].weight = (double)m->cnt[k] / (double)m->R;
	}
	qsort(p, m->K, sizeof(*p), cmp_point);
	return p;
}

/* OPTS->points instead of one per cluster (rtl_simpoint_opts): cluster
 * k's members in time order cut into N runs, a random member of each. */
static rtl_simpoint *spread(const struct km *m, size_t want, uint64_t seed, size_t *n)
{
	size_t total = 0, *take = calloc(m->K, sizeof(*take));
	if (!take)
		return NULL;
	for (int k = 0; k < m->K; k++) {
		size_t t = (size_t)llround((double)want * (double)m->cnt[k] / (double)m->R);
		t = t < 2 ? 2 : t;
		take[k] = t < m->cnt[k] ? t : m->cnt[k];
		total += take[k];
	}
	rtl_simpoint *p = calloc(total ? total : 1, sizeof(*p));
	size_t *seen = calloc(m->K, sizeof(*seen)), *next = calloc(m->K, sizeof(*next));
	size_t *pick = calloc(total ? total : 1, sizeof(*pick)), *first = calloc(m->K + 1, sizeof(*first));
	if (!p || !seen || !next || !pick || !first) {
		free(p);
		p = NULL;
		goto out;
	}
	for (int k = 0; k < m->K; k++)
		first[k + 1] = first[k] + take[k];
	/* run j of cluster k holds its members j*cnt/take .. (j+1)*cnt/take - 1;
	 * the pick within it: a random rank, then the member of that rank */
	for (int k = 0; k < m->K; k++)
		for (size_t j = 0; j < take[k]; j++) {
			size_t lo = j * m->cnt[k] / take[k], hi = (j + 1) * m->cnt[k] / take[k];
			uint64_t r = splitmix(seed ^ splitmix(((uint64_t)k << 32) | j));
			pick[first[k] + j] = lo + r % (hi - lo);
		}
	for (size_t i = 0; i < m->R; i++) {
		int k = m->lab[i];
		size_t rank = seen[k]++, j = next[k];
		if (j < take[k] && pick[first[k] + j] == rank) {
			rtl_simpoint *q = &p[first[k] + j];
			q->interval = i;
			q->cluster = k;
			q->members = m->cnt[k];
			q->weight = (double)m->cnt[k] / (double)m->R / (double)take[k];
			next[k]++;
		}
	}
	qsort(p, total, sizeof(*p), cmp_point);
	*n = total;
out:
	free(take);
	free(seen);
	free(next);
	free(pick);
	free(first);
	return p;
}

/* Best of OPTS->inits runs for K clusters, left in M. */
static double best_of(struct km *m, int K, const rtl_simpoint_opts *o, int *best_lab, double *best_c)
{
	double best = DBL_MAX;

	m->K = K;
	for (int s = 0; s < o->inits; s++) {
		double sse = kmeans(m, splitmix(o->seed * 1000003u + (uint64_t)K * 131u + (uint64_t)s), o->iters);
		if (sse < best) {
			best = sse;
			memcpy(best_lab, m->lab, m->R * sizeof(int));
			memcpy(best_c, m->c, (size_t)K * m->D * sizeof(double));
		}
	}
	memcpy(m->lab, best_lab, m->R * sizeof(int));
	memcpy(m->c, best_c, (size_t)K * m->D * sizeof(double));
	recenter(m);
	return best;
}

int rtl_simpoint_choose(const rtl_bbv *v, const rtl_simpoint_opts *opts, rtl_simpoint_result *out)
{
	rtl_simpoint_opts o = { .max_k = 10, .seed = 1, .dims = 15, .inits = 5, .iters = 100, .bic_frac = 0.9 };
	struct km m = { 0 };
	int rc = -ENOMEM, *lab = NULL, **labs = NULL;
	double *bc = NULL;

	if (opts)
		o = *opts;
	memset(out, 0, sizeof(*out));
	if (!v->nint)
		return -RTL_ERR_BAD_INPUT;
	if (o.max_k < 1 || o.max_k > 64 || o.dims < 1 || o.inits < 1 || o.iters < 1)
		return -EINVAL;
	if ((size_t)o.max_k > v->nint)
		o.max_k = (int)v->nint;
	m.R = v->nint;
	m.D = o.dims;
	m.x = project(v, o.seed, o.dims);
	m.c = calloc((size_t)o.max_k * o.dims, sizeof(double));
	m.lab = calloc(m.R, sizeof(int));
	m.cnt = calloc(o.max_k, sizeof(size_t));
	lab = calloc(m.R, sizeof(int));
	bc = calloc((size_t)o.max_k * o.dims, sizeof(double));
	labs = calloc(o.max_k, sizeof(*labs));
	if (!m.x || !m.c || !m.lab || !m.cnt || !lab || !bc || !labs)
		goto out;
	double lo = DBL_MAX, hi = -DBL_MAX;
	for (int K = 1; K <= o.max_k; K++) {
		double sse = best_of(&m, K, &o, lab, bc);
		out->bic[K - 1] = bic(&m, sse);
		lo = fmin(lo, out->bic[K - 1]);
		hi = fmax(hi, out->bic[K - 1]);
		if (!(labs[K - 1] = malloc(m.R * sizeof(int))))
			goto out;
		memcpy(labs[K - 1], m.lab, m.R * sizeof(int));
	}
	out->tried = o.max_k;
	out->k = o.max_k;
	for (int K = 1; K <= o.max_k; K++)
		if (out->bic[K - 1] >= lo + o.bic_frac * (hi - lo)) {
			out->k = K;
			break;
		}
	/* rebuild the chosen clustering's centroids from its labels */
	m.K = out->k;
	memcpy(m.lab, labs[out->k - 1], m.R * sizeof(int));
	recenter(&m);
	out->npoints = (size_t)out->k;
	out->points = o.points ? spread(&m, o.points, splitmix(o.seed ^ 0x706f696e7473ull), &out->npoints)
			       : represent(&m);
	out->label = malloc(m.R * sizeof(int));
	if (!out->points || !out->label)
		goto out;
	memcpy(out->label, m.lab, m.R * sizeof(int));
	rc = 0;
out:
	for (int K = 0; labs && K < o.max_k; K++)
		free(labs[K]);
	free(labs);
	free((void *)m.x);
	free(m.c);
	free(m.lab);
	free(m.cnt);
	free(lab);
	free(bc);
	if (rc) {
		free(out->points);
		free(out->label);
		out->points = NULL;
		out->label = NULL;
	}
	return rc;
}
