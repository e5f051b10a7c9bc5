/* Profile store write speed: a synthetic profile the size of a large run
 * (by default 100,000 functions, 1,000,000 blocks, 300,000 call sites)
 * written through the API, timed from create to commit.
 *
 *   bench_store_write OUT.db [FUNCTIONS BLOCKS_PER_FUNCTION CALLS_PER_FUNCTION] */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <reticle/error.h>
#include <reticle/profile.h>

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static int fill(rtl_profile *p, long nfn, long nblk, long ncall)
{
	int64_t mod, *ids = malloc(nfn * sizeof(*ids));
	char name[32];
	int err;

	if (!ids)
		return -1;
	if ((err = rtl_profile_set_meta(p, "command", "bench")) ||
	    (err = rtl_profile_add_module(p, "/usr/bin/bench", 0x555555554000ull, &mod)))
		goto out;
	for (long f = 0; f < nfn && !err; f++) {
		uint64_t addr = 0x10000 + (uint64_t)f * 0x100;

		snprintf(name, sizeof(name), "function_%ld", f);
		err = rtl_profile_add_function(p, mod, name, addr, 0x100, 1, NULL, &ids[f]);
		for (long b = 0; b < nblk && !err; b++)
			err = rtl_profile_add_block(p, ids[f], addr + b * 8, 3, (uint64_t)(f + b));
		if (!err)
			err = rtl_profile_set_function_counts(p, ids[f], RTL_HAVE_CALLS | RTL_HAVE_INSTRS,
							      (uint64_t)f, (uint64_t)f * 3 * nblk);
	}
	for (long f = 0; f < nfn && !err; f++)
		for (long c = 0; c < ncall && !err; c++)
			err = rtl_profile_add_call(p, ids[f], 0x10000 + f * 0x100 + 0x40 + c,
						   ids[(f * 7 + c + 1) % nfn], (uint64_t)c + 1);
out:
	free(ids);
	return err;
}

int main(int argc, char **argv)
{
	long nfn = argc > 2 ? atol(argv[2]) : 100000;
	long nblk = argc > 3 ? atol(argv[3]) : 10;
	long ncall = argc > 4 ? atol(argv[4]) : 3;
	rtl_profile *p;
	double t0 = now(), t1;
	int err;

	if (argc < 2) {
		fprintf(stderr, "usage: bench_store_write OUT.db [FUNCTIONS BLOCKS CALLS]\n");
		return 2;
	}
	if ((err = rtl_profile_create(argv[1], &p)) || (err = fill(p, nfn, nblk, ncall)) ||
	    (err = rtl_profile_commit(p))) {
		fprintf(stderr, "bench_store_write: %s\n", rtl_strerror(err));
		return 1;
	}
	rtl_profile_close(p);
	t1 = now();
	printf("store write: %ld functions, %ld blocks, %ld call sites in %.3f s"
	       " (%.0f rows/s)\n", nfn, nfn * nblk, nfn * ncall, t1 - t0,
	       (double)(nfn * (1 + nblk + ncall)) / (t1 - t0));
	return 0;
}
