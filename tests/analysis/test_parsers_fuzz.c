/* Mutated inputs for the specification parser, the trace reader and the
 * BBV reader: every outcome must be a result or a clean error (message
 * naming the line or parameter), never a crash (run it under ASan/UBSan
 * with -DRETICLE_SANITIZE=ON). Deterministic. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <reticle/cachesim.h>
#include <reticle/error.h>
#include <reticle/simpoint.h>
#include "check.h"

static uint64_t rng = 42;
static uint32_t rnd(uint32_t n)
{
	rng = rng * 6364136223846793005ull + 1442695040888963407ull;
	return (uint32_t)((rng >> 33) % n);
}

static void mutate(char *s, size_t cap)
{
	static const char alphabet[] = "0123456789abcdefxkmKM:,=lLSMI rwimcvT\n-0x";
	size_t n = strlen(s);

	for (int m = 1 + (int)rnd(3); m > 0; m--) {
		size_t at = n ? rnd((uint32_t)n) : 0;
		switch (rnd(3)) {
		case 0: if (n) s[at] = alphabet[rnd(sizeof(alphabet) - 1)]; break;
		case 1: if (n + 1 < cap) { memmove(s + at + 1, s + at, n - at + 1); s[at] = alphabet[rnd(sizeof(alphabet) - 1)]; n++; } break;
		case 2: if (n) { memmove(s + at, s + at + 1, n - at); n--; } break;
		}
	}
}

static void specs(void)
{
	static const char *const seeds[] = { "l1i=32k:8:64,l1d=32k:8:64:lru:wb,l2=1m:16:64",
		"cachegrind,l1i=32768:8:64,l1d=32768:8:64,ll=8m:16:64", "l1=24k:3:64:fifo,seed=5",
		"inclusive=yes,l1=8k:2:64,l2=32k:4:64:plru,l3=64k:4:128", "cross=once,modify=load,maxsize=8,l1d=2k:full:32" };
	rtl_access acc[64];
	int ok = 0;

	for (int i = 0; i < 64; i++)
		acc[i] = (rtl_access){ .addr = rnd(1 << 20), .size = 1 + rnd(64), .kind = rnd(4) };
	for (int it = 0; it < 20000; it++) {
		char s[256], err[256] = "";
		rtl_cache_config c;
		snprintf(s, sizeof(s), "%s", seeds[rnd(5)]);
		mutate(s, sizeof(s));
		int rc = rtl_cache_config_parse(s, &c, err, sizeof(err));
		CHECK(rc == 0 || (rc == -RTL_ERR_BAD_OPTION && err[0]));
		if (rc)
			continue;
		ok++;
		uint64_t lines = 0;
		for (int l = 0; l < RTL_LEVELS; l++)
			lines += c.level[l].present ? c.level[l].size / c.level[l].line : 0;
		if (lines > (1u << 18))
			continue;   /* valid but large: keep the test quick */
		rtl_cachesim *b;
		rtl_cachesim_create(&b);
		CHECK(rtl_cachesim_add(b, &c) == 0);
		CHECK(rtl_cachesim_push(b, acc, 64) == 0);
		rtl_cachesim_destroy(b);
	}
	fprintf(stderr, "specs: %d of 20000 mutants parsed\n", ok);
}

static void traces(const char *dir)
{
	static const char *const seeds[] = { "I  0400d7d4,8\n L 1ffefff000,8\n S 04021a40,4\n M 04021a48,4\n",
		"r 1000 4\nw 2000 8\ni 400 2\n", "0 1000\n1 2000\n2 400\n", "T:1:10 :2:20\nT:3:5\n" };
	char path[512];
	rtl_access v[16];

	snprintf(path, sizeof(path), "%s/fuzz.trace", dir);
	for (int it = 0; it < 3000; it++) {
		char s[512], err[256] = "";
		int which = (int)rnd(4);
		snprintf(s, sizeof(s), "%s", seeds[which]);
		mutate(s, sizeof(s));
		FILE *f = fopen(path, "w");
		fputs(s, f);
		fclose(f);
		if (which == 3) {
			rtl_bbv *bb;
			int rc = rtl_bbv_read(path, &bb, err, sizeof(err));
			CHECK(rc == 0 || (rc == -RTL_ERR_BAD_INPUT && strstr(err, "fuzz.trace")));
			if (!rc)
				rtl_bbv_destroy(bb);
			continue;
		}
		rtl_trace_reader *r;
		CHECK(rtl_trace_open(path, RTL_TRACE_AUTO, &r) == 0);
		long n;
		while ((n = rtl_trace_read(r, v, 16)) > 0)
			for (long i = 0; i < n; i++)
				CHECK(v[i].size >= 1 && v[i].kind <= RTL_ACC_IFETCH);
		CHECK(n == 0 || (n == -RTL_ERR_BAD_INPUT && !strncmp(rtl_trace_error(r), "line ", 5)));
		rtl_trace_close(r);
	}
}

int main(int argc, char **argv)
{
	specs();
	traces(argc > 1 ? argv[1] : ".");
	return CHECK_DONE();
}
