/* The cache API on small streams whose counts follow from first principles
 * (worked out by hand in the comments), the trace readers, attribution. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <reticle/cachesim.h>
#include <reticle/error.h>
#include "check.h"

static rtl_cachesim *bank(const char *const *specs, int n)
{
	rtl_cachesim *b;
	char err[256];

	rtl_cachesim_create(&b);
	for (int i = 0; i < n; i++) {
		rtl_cache_config c;
		CHECK(rtl_cache_config_parse(specs[i], &c, err, sizeof(err)) == 0);
		CHECK_EQ(rtl_cachesim_add(b, &c), i);
	}
	return b;
}

static uint64_t misses(rtl_cachesim *b, int cfg, int level)
{
	rtl_cache_stats s;
	uint64_t m = 0;

	CHECK(rtl_cachesim_stats(b, cfg, level, &s) == 0);
	for (int k = 0; k < RTL_ACC_KINDS; k++)
		m += s.miss[k];
	return m;
}

/* Lines A B A C A in one 2-way set: LRU keeps A (C evicts B): 3 misses;
 * FIFO evicts A for C: 4 misses. Tree-PLRU with 4 ways over A B C D A E A:
 * E evicts B (the tree points away from A's half after the A access), so
 * A hits again: 5 misses; FIFO evicts A for E: 6 misses. */
static void policies(void)
{
	static const char *const s[] = { "l1d=128:2:64", "l1d=128:2:64:fifo",
					  "l1d=256:4:64:plru", "l1d=256:4:64:fifo" };
	uint64_t seq1[] = { 0, 1, 0, 2, 0 }, seq2[] = { 0, 1, 2, 3, 0, 4, 0 };
	rtl_access a[7];
	rtl_cachesim *b = bank(s, 2), *c = bank(s + 2, 2);

	for (int i = 0; i < 5; i++)
		a[i] = (rtl_access){ .addr = seq1[i] * 64, .size = 4, .kind = RTL_ACC_LOAD };
	CHECK(rtl_cachesim_push(b, a, 5) == 0);
	CHECK_EQ(misses(b, 0, RTL_L1D), 3);
	CHECK_EQ(misses(b, 1, RTL_L1D), 4);
	for (int i = 0; i < 7; i++)
		a[i] = (rtl_access){ .addr = seq2[i] * 64, .size = 4, .kind = RTL_ACC_LOAD };
	CHECK(rtl_cachesim_push(c, a, 7) == 0);
	CHECK_EQ(misses(c, 0, RTL_L1D), 5);
	CHECK_EQ(misses(c, 1, RTL_L1D), 6);
	rtl_cachesim_destroy(b);
	rtl_cachesim_destroy(c);
}

/* Write-back, one 2-way set: store A, load B, load C (A, dirty, leaves:
 * write-back 1), store C, then 8 bytes at 60 touch A (B leaves, clean) and
 * B (C leaves, dirty: write-back 2); L2 sees them as WRITEBACK accesses.
 * Write-through: every store goes down. The crossing load counts twice
 * when split, once with cross=once. */
static void writes_and_crossing(void)
{
	static const char *const s[] = { "l1d=128:2:64:wb,l2=1k:2:64", "l1d=128:2:64:wt,l2=1k:2:64",
					  "l1d=1k:2:64", "cross=once,l1d=1k:2:64" };
	rtl_access a[] = {
		{ .addr = 0, .size = 4, .kind = RTL_ACC_STORE },
		{ .addr = 64, .size = 4, .kind = RTL_ACC_LOAD },
		{ .addr = 128, .size = 4, .kind = RTL_ACC_LOAD },
		{ .addr = 128, .size = 4, .kind = RTL_ACC_STORE },
	};
	rtl_access x = { .addr = 60, .size = 8, .kind = RTL_ACC_LOAD };
	rtl_cachesim *b = bank(s, 4);
	rtl_cache_stats st;

	CHECK(rtl_cachesim_push(b, a, 4) == 0);
	CHECK(rtl_cachesim_push(b, &x, 1) == 0);
	CHECK(rtl_cachesim_stats(b, 0, RTL_L2, &st) == 0);
	CHECK_EQ(st.access[RTL_ACC_WRITEBACK], 2);
	CHECK(rtl_cachesim_stats(b, 0, RTL_L1D, &st) == 0);
	CHECK_EQ(st.writebacks, 2);
	CHECK(rtl_cachesim_stats(b, 1, RTL_L2, &st) == 0);
	CHECK_EQ(st.access[RTL_ACC_STORE], 2);
	CHECK(rtl_cachesim_stats(b, 2, RTL_L1D, &st) == 0);
	CHECK_EQ(st.access[RTL_ACC_LOAD], 4);     /* 2 loads + the crossing load split in 2 */
	CHECK(rtl_cachesim_stats(b, 3, RTL_L1D, &st) == 0);
	CHECK_EQ(st.access[RTL_ACC_LOAD], 3);     /* counted once */
	/* the last bytes of the address space: one line, no wrap-around */
	x = (rtl_access){ .addr = UINT64_MAX - 3, .size = 8, .kind = RTL_ACC_LOAD };
	CHECK(rtl_cachesim_push(b, &x, 1) == 0);
	CHECK(rtl_cachesim_stats(b, 2, RTL_L1D, &st) == 0);
	CHECK_EQ(st.access[RTL_ACC_LOAD], 5);
	rtl_cachesim_destroy(b);
}

static int sum_cb(const rtl_instr_cost *c, void *user)
{
	uint64_t *t = user;
	t[0] += c->access;
	t[1] += c->miss;
	return 0;
}

/* Attribution: instruction 0x10 loads 4 new lines, 0x20 reloads the first. */
static void attribution(void)
{
	static const char *const s[] = { "l1d=64k:4:64" };
	rtl_access a[5];
	rtl_cachesim *b = bank(s, 1);
	uint64_t tot[2] = { 0, 0 }, ranges[2][2] = { { 0x10, 0x18 }, { 0x18, 0x40 } };
	rtl_instr_cost f[2];

	for (int i = 0; i < 4; i++)
		a[i] = (rtl_access){ .addr = (uint64_t)i * 64, .iaddr = 0x10, .size = 8 };
	a[4] = (rtl_access){ .addr = 0, .iaddr = 0x20, .size = 8 };
	CHECK(rtl_cachesim_enable_attribution(b, 0, RTL_L1D) == 0);
	CHECK(rtl_cachesim_push(b, a, 5) == 0);
	CHECK(rtl_cachesim_foreach_instr(b, sum_cb, tot) == 0);
	CHECK_EQ(tot[0], 5);
	CHECK_EQ(tot[1], 4);
	CHECK(rtl_cachesim_sum_functions(b, (const uint64_t (*)[2])ranges, 2, f) == 0);
	CHECK_EQ(f[0].miss, 4);
	CHECK_EQ(f[1].access, 1);
	CHECK_EQ(f[1].miss, 0);
	rtl_cachesim_destroy(b);
}

/* Reuse distances of lines A B C A B D A: A at distance 2, B at 2, A at 2
 * (B D in between... A B D -> distinct {B, D} = 2). Cold: A B C D. */
static void reuse(void)
{
	uint64_t seq[] = { 0, 1, 2, 0, 1, 3, 0 };
	rtl_access a[7];
	rtl_cachesim *b;
	rtl_reuse_hist h;

	rtl_cachesim_create(&b);
	CHECK(rtl_cachesim_enable_reuse(b, 64) == 0);
	for (int i = 0; i < 7; i++)
		a[i] = (rtl_access){ .addr = seq[i] * 64 + 3, .size = 4 };
	CHECK(rtl_cachesim_push(b, a, 7) == 0);
	CHECK(rtl_cachesim_reuse(b, &h) == 0);
	CHECK_EQ(h.total, 7);
	CHECK_EQ(h.cold, 4);
	CHECK_EQ(h.bucket[2], 3);               /* distance 2 is in [2, 3] */
	CHECK_EQ(rtl_reuse_misses(&h, 2), 7);   /* 2 lines: every reuse misses */
	CHECK_EQ(rtl_reuse_misses(&h, 4), 4);   /* 4 lines: only cold misses */
	rtl_cachesim_destroy(b);
}

/* Seeded random replacement: the same seed gives the same misses, whether
 * the configuration is alone or beside its twin (which shares its engine);
 * a 4-way random cache of 4 lines over a cyclic sweep of 5 lines misses
 * less than LRU, which misses every time. */
static void random_policy(void)
{
	static const char *const s[] = { "l1d=256:4:64:random,seed=7", "l1d=256:4:64:random,seed=7",
					  "l1d=256:4:64:random,seed=8", "l1d=256:4:64" };
	rtl_access a[5000];
	rtl_cachesim *b = bank(s, 4), *c = bank(s, 1);

	for (int i = 0; i < 5000; i++)
		a[i] = (rtl_access){ .addr = (uint64_t)(i % 5) * 64, .size = 4, .kind = RTL_ACC_LOAD };
	CHECK(rtl_cachesim_push(b, a, 5000) == 0);
	CHECK(rtl_cachesim_push(c, a, 5000) == 0);
	CHECK_EQ(misses(b, 0, RTL_L1D), misses(c, 0, RTL_L1D));
	CHECK_EQ(misses(b, 0, RTL_L1D), misses(b, 1, RTL_L1D));
	CHECK(misses(b, 0, RTL_L1D) != misses(b, 2, RTL_L1D));
	CHECK_EQ(misses(b, 3, RTL_L1D), 5000);
	CHECK(misses(b, 0, RTL_L1D) < 4000);
	a[3].kind = RTL_ACC_WRITEBACK;   /* not a kind a collector pushes */
	CHECK(rtl_cachesim_push(b, a, 5) == -EINVAL);
	rtl_cachesim_destroy(b);
	rtl_cachesim_destroy(c);
}

static void readers(const char *dir)
{
	char path[512];
	rtl_access v[8];
	rtl_trace_reader *r;
	FILE *f;

	snprintf(path, sizeof(path), "%s/t.din", dir);
	f = fopen(path, "w");
	fputs("r 1000 4\nw 0x2000 8 trailing text\ni 400 2\nc 0 0\nm 10 1\n", f);
	fclose(f);
	CHECK(rtl_trace_open(path, RTL_TRACE_AUTO, &r) == 0);
	CHECK_EQ(rtl_trace_read(r, v, 8), 4);
	CHECK_EQ(v[0].addr, 0x1000);
	CHECK_EQ(v[1].kind, RTL_ACC_STORE);
	CHECK_EQ(v[1].size, 8);
	CHECK_EQ(v[2].kind, RTL_ACC_IFETCH);
	CHECK_EQ(v[3].kind, RTL_ACC_LOAD);
	rtl_trace_close(r);
	snprintf(path, sizeof(path), "%s/t.classic", dir);
	f = fopen(path, "w");
	fputs("2 400\n0 1000\n1 2000\n", f);
	fclose(f);
	CHECK(rtl_trace_open(path, RTL_TRACE_AUTO, &r) == 0);
	CHECK_EQ(rtl_trace_read(r, v, 8), 3);
	CHECK_EQ(v[0].kind, RTL_ACC_IFETCH);
	CHECK_EQ(v[2].kind, RTL_ACC_STORE);
	CHECK_EQ(v[2].iaddr, 0x400);
	rtl_trace_close(r);
}

int main(int argc, char **argv)
{
	policies();
	writes_and_crossing();
	attribution();
	reuse();
	random_policy();
	readers(argc > 1 ? argv[1] : ".");
	return CHECK_DONE();
}
