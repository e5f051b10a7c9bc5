/* SimPoint on vectors with a known answer: intervals drawn from three
 * distinct code mixes (with small noise) must come out as k = 3 clusters
 * whose members are exactly the intervals of each mix, weights = shares,
 * each representative one of its own mix; and the exp-bbv reader. */
#include <stdio.h>
#include <stdlib.h>
#include <reticle/simpoint.h>
#include <reticle/error.h>
#include "check.h"

static uint64_t rng = 12345;
static unsigned noise(void)
{
	rng = rng * 6364136223846793005ull + 1442695040888963407ull;
	return (unsigned)(rng >> 60);   /* 0..15 */
}

int main(int argc, char **argv)
{
	/* mix m uses blocks 10m+1 .. 10m+4 with counts around 1000 */
	static const int pattern[] = { 0, 1, 1, 2, 0, 0, 1, 2, 2, 2, 0, 1, 0, 2, 1, 1, 0, 2, 0, 0,
				       1, 2, 0, 1, 2, 2, 0, 0, 1, 0 };
	enum { R = sizeof(pattern) / sizeof(pattern[0]) };
	int share[3] = { 0, 0, 0 };
	rtl_bbv *v;
	rtl_simpoint_result r;

	CHECK(rtl_bbv_create(&v) == 0);
	for (int i = 0; i < R; i++) {
		uint32_t ids[4];
		uint64_t cnt[4];
		for (int b = 0; b < 4; b++) {
			ids[b] = (uint32_t)(10 * pattern[i] + b + 1);
			cnt[b] = 1000u * (uint64_t)(b + 1) + noise();
		}
		CHECK(rtl_bbv_add_interval(v, ids, cnt, 4) == 0);
		share[pattern[i]]++;
	}
	CHECK(rtl_simpoint_choose(v, NULL, &r) == 0);
	CHECK_EQ(r.k, 3);
	for (int p = 0; p < r.k; p++) {
		int mix = pattern[r.points[p].interval];
		CHECK_EQ((long long)(r.points[p].weight * R + 0.5), share[mix]);
		for (int i = 0; i < R; i++)   /* the cluster is exactly the mix */
			CHECK((r.label[i] == r.points[p].cluster) == (pattern[i] == mix));
	}
	CHECK_EQ(r.npoints, 3);
	free(r.points);
	free(r.label);

	/* --points 12: about 12 points, two at least per cluster, each in its
	 * cluster, distinct and in order, the cluster's weight shared among
	 * them; each drawn from its own run of the cluster's intervals */
	rtl_simpoint_opts o = { .max_k = 10, .seed = 1, .dims = 15, .inits = 5, .iters = 100, .bic_frac = 0.9,
				.points = 12 };
	CHECK(rtl_simpoint_choose(v, &o, &r) == 0);
	CHECK_EQ(r.k, 3);
	CHECK(r.npoints >= 10 && r.npoints <= 14);
	double wsum[3] = { 0 };
	int n[3] = { 0 }, last_rank[3] = { -1, -1, -1 };
	for (size_t p = 0; p < r.npoints; p++) {
		int mix = pattern[r.points[p].interval], k = r.points[p].cluster;
		CHECK(p == 0 || r.points[p].interval > r.points[p - 1].interval);
		CHECK_EQ(r.label[r.points[p].interval], k);
		wsum[mix] += r.points[p].weight;
		n[mix]++;
		int rank = 0;   /* its rank among its cluster's intervals */
		for (size_t i = 0; i < r.points[p].interval; i++)
			rank += r.label[i] == k;
		CHECK(rank > last_rank[mix]);
		last_rank[mix] = rank;
	}
	for (int m = 0; m < 3; m++) {
		CHECK(n[m] >= 2);
		CHECK_EQ((long long)(wsum[m] * R + 0.5), share[m]);
	}
	free(r.points);
	free(r.label);
	rtl_bbv_destroy(v);

	/* the reader: comments and blank lines skipped, totals are the sums */
	char path[512], err[256];
	snprintf(path, sizeof(path), "%s/t.bb", argc > 1 ? argv[1] : ".");
	FILE *f = fopen(path, "w");
	fputs("# comment\n\nT:1:10 :2:5   \nT:3:7\n", f);
	fclose(f);
	CHECK(rtl_bbv_read(path, &v, err, sizeof(err)) == 0);
	CHECK_EQ(rtl_bbv_intervals(v), 2);
	CHECK_EQ(rtl_bbv_interval_total(v, 0), 15);
	CHECK_EQ(rtl_bbv_interval_total(v, 1), 7);
	rtl_bbv_destroy(v);
	return CHECK_DONE();
}
