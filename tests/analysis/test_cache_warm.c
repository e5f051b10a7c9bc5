/* rtl_cachesim_warm_lower against the full simulation: a stream whose L2
 * hits come from reuse far older than a sampled window (a working set
 * twenty times an L1D and smaller than the L2) is simulated whole, then
 * sampled in windows three ways: with the caches left as the last window
 * left them, with a long lower-level warm-up and a short exact one before
 * each window, and with the long warm-up exact. The oracle is the full
 * simulation's counts over the same windows. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <reticle/cachesim.h>
#include "check.h"

enum { N = 6000000, WINDOW = 20000, PERIOD = 400000, LOWER = 300000, EXACT = 3000, CFGS = 3 };
static const char *const specs[CFGS] = {
	"l1d=8k:2:64,l2=256k:8:64",
	"l1d=16k:4:64,l2=256k:8:64",   /* an L2 like the first: one warm-up state for both */
	"l1d=32k:8:64,l2=512k:16:64",
};
static rtl_access stream[N];

static uint64_t rng = 0x2545f4914f6cdd1dull;
static uint64_t next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* 60% a hot set of 64 lines, 30% a working set of 3,000 lines (192 KiB)
 * drifting by 1,600 lines a window period, 10% lines never seen again. */
static void make_stream(void)
{
	uint64_t fresh = 1u << 30;
	for (size_t i = 0; i < N; i++) {
		uint64_t r = next() % 100, line;
		if (r < 60)
			line = next() % 64;
		else if (r < 90)
			line = 4096 + (i / 250) + next() % 3000;
		else
			line = fresh++;
		stream[i] = (rtl_access){ .addr = line * 64 + next() % 56, .size = 8,
					  .kind = next() % 4 ? RTL_ACC_LOAD : RTL_ACC_STORE };
	}
}

static rtl_cachesim *bank(void)
{
	rtl_cachesim *b;
	char err[128];
	CHECK(rtl_cachesim_create(&b) == 0);
	for (int i = 0; i < CFGS; i++) {
		rtl_cache_config c;
		CHECK(rtl_cache_config_parse(specs[i], &c, err, sizeof(err)) == 0);
		CHECK(rtl_cachesim_add(b, &c) == i);
	}
	return b;
}

static void counts(rtl_cachesim *b, int cfg, int level, uint64_t *acc, uint64_t *miss)
{
	rtl_cache_stats s;
	CHECK(rtl_cachesim_stats(b, cfg, level, &s) == 0);
	*acc = *miss = 0;
	for (int k = 0; k < RTL_ACC_KINDS; k++) {
		*acc += s.access[k];
		*miss += s.miss[k];
	}
}

/* The windows' misses per configuration and level (L1D, L2) under MODE:
 * 0 every access pushed; 1 only the windows; 2 the long warm-up through
 * rtl_cachesim_warm_lower, then EXACT pushed; 3 the long warm-up pushed. */
static void windows(int mode, uint64_t out[CFGS][2])
{
	rtl_cachesim *b = bank();
	uint64_t before[CFGS][2], a, m;
	size_t pos = 0;
	for (size_t w = PERIOD - WINDOW; w + WINDOW <= N; w += PERIOD) {
		if (mode == 0)
			CHECK(rtl_cachesim_push(b, stream + pos, w - pos) == 0);
		if (mode == 2) {
			CHECK(rtl_cachesim_warm_lower(b, stream + w - EXACT - LOWER, LOWER) == 0);
			CHECK(rtl_cachesim_push(b, stream + w - EXACT, EXACT) == 0);
		}
		if (mode == 3)
			CHECK(rtl_cachesim_push(b, stream + w - EXACT - LOWER, EXACT + LOWER) == 0);
		for (int c = 0; c < CFGS; c++)
			for (int l = 0; l < 2; l++) {
				counts(b, c, l ? RTL_L2 : RTL_L1D, &a, &m);
				before[c][l] = m;
			}
		CHECK(rtl_cachesim_push(b, stream + w, WINDOW) == 0);
		pos = w + WINDOW;
		for (int c = 0; c < CFGS; c++)
			for (int l = 0; l < 2; l++) {
				counts(b, c, l ? RTL_L2 : RTL_L1D, &a, &m);
				out[c][l] += m - before[c][l];
			}
	}
	rtl_cachesim_destroy(b);
}

static double off(uint64_t x, uint64_t truth)
{
	return ((double)x - (double)truth) / (double)truth;
}

int main(void)
{
	make_stream();
	uint64_t full[CFGS][2] = { { 0 } }, stale[CFGS][2] = { { 0 } }, warm[CFGS][2] = { { 0 } },
		 exact[CFGS][2] = { { 0 } };
	windows(0, full);
	windows(1, stale);
	windows(2, warm);
	windows(3, exact);
	for (int c = 0; c < CFGS; c++) {
		printf("%-28s L2 misses in the windows: full %llu, stale %+.1f%%, lower warm-up %+.1f%%, "
		       "exact warm-up %+.1f%%; L1D: lower warm-up %+.1f%%\n", specs[c],
		       (unsigned long long)full[c][1], 100 * off(stale[c][1], full[c][1]),
		       100 * off(warm[c][1], full[c][1]), 100 * off(exact[c][1], full[c][1]),
		       100 * off(warm[c][0], full[c][0]));
		CHECK(off(stale[c][1], full[c][1]) > 0.15);        /* what the warm-up is for */
		CHECK(off(warm[c][1], full[c][1]) < 0.03 && off(warm[c][1], full[c][1]) > -0.03);
		CHECK(off(warm[c][0], full[c][0]) < 0.01 && off(warm[c][0], full[c][0]) > -0.01);
		CHECK(exact[c][0] == full[c][0]);   /* a warm-up longer than any reuse: exact */
	}

	/* a warm-up counts nothing */
	rtl_cachesim *b = bank();
	uint64_t a0, m0, a1, m1;
	CHECK(rtl_cachesim_push(b, stream, 1000) == 0);
	counts(b, 2, RTL_L2, &a0, &m0);
	CHECK(rtl_cachesim_warm_lower(b, stream + 1000, 100000) == 0);
	counts(b, 2, RTL_L2, &a1, &m1);
	CHECK(a0 == a1 && m0 == m1);
	rtl_cachesim_destroy(b);

	/* levels it cannot move: refused, for the caller to push instead */
	const char *others[] = { "l1d=8k:2:64,l2=256k:8:64:fifo", "l1d=8k:2:64,l2=256k:8:64,inclusive=yes" };
	for (int i = 0; i < 2; i++) {
		char err[128];
		rtl_cache_config c;
		CHECK(rtl_cachesim_create(&b) == 0);
		CHECK(rtl_cache_config_parse(others[i], &c, err, sizeof(err)) == 0);
		CHECK(rtl_cachesim_add(b, &c) == 0);
		CHECK_EQ(rtl_cachesim_warm_lower(b, stream, 1000), -ENOTSUP);
		rtl_cachesim_destroy(b);
	}
	/* no lower level: nothing to do */
	rtl_cache_config c;
	char err[128];
	CHECK(rtl_cachesim_create(&b) == 0);
	CHECK(rtl_cache_config_parse("l1d=8k:2:64", &c, err, sizeof(err)) == 0);
	CHECK(rtl_cachesim_add(b, &c) == 0);
	CHECK(rtl_cachesim_warm_lower(b, stream, 1000) == 0);
	counts(b, 0, RTL_L1D, &a0, &m0);
	CHECK(a0 == 0);
	rtl_cachesim_destroy(b);
	return CHECK_DONE();
}
