/* Measures references per second of the cache bank on a trace held in
 * memory (the trace is parsed once, outside the timing), for one
 * configuration and for a bank. Usage:
 *   bench_cachesim TRACE REPEAT SPEC [SPEC...]
 * Two figures: "stream" pushes the whole in-memory trace (bounded by memory
 * bandwidth: 24 bytes per access); "buffered" copies it 8192 accesses at a
 * time into a staging buffer, as a collector fills its buffer, and times
 * only rtl_cachesim_push on that cache-resident buffer. Each of REPEAT passes
 * is timed (thread CPU time; wall time with -t N, the bank on N threads);
 * the best and the mean are printed.
 *   bench_cachesim -t N TRACE REPEAT SPEC [SPEC...] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <reticle/cachesim.h>
#include <reticle/error.h>

static int threads = 1;

static double now(void)
{
	struct timespec t;

	/* CPU time (the machine is shared), unless other threads work too */
	clock_gettime(threads > 1 ? CLOCK_MONOTONIC : CLOCK_THREAD_CPUTIME_ID, &t);
	return t.tv_sec + t.tv_nsec * 1e-9;
}

static rtl_access *load(const char *path, size_t *n)
{
	rtl_trace_reader *r;
	size_t cap = 1 << 20;
	rtl_access *v = malloc(cap * sizeof(*v));
	long got;

	*n = 0;
	if (!v || rtl_trace_open(path, RTL_TRACE_AUTO, &r) < 0)
		return NULL;
	while ((got = rtl_trace_read(r, v + *n, cap - *n)) > 0) {
		*n += (size_t)got;
		if (*n == cap && !(v = realloc(v, (cap *= 2) * sizeof(*v))))
			return NULL;
	}
	if (got < 0) {
		fprintf(stderr, "%s: %s\n", path, rtl_trace_error(r));
		return NULL;
	}
	rtl_trace_close(r);
	return v;
}

int main(int argc, char **argv)
{
	size_t n;
	rtl_cachesim *b;
	char err[256];

	if (argc > 2 && !strcmp(argv[1], "-t")) {
		threads = atoi(argv[2]);
		argc -= 2;
		argv += 2;
	}
	if (argc < 4) {
		fprintf(stderr, "usage: bench_cachesim [-t THREADS] TRACE REPEAT SPEC...\n");
		return 2;
	}
	rtl_access *v = load(argv[1], &n);
	int repeat = atoi(argv[2]);
	if (!v)
		return 1;
	rtl_cachesim_create(&b);
	for (int i = 3; i < argc; i++) {
		rtl_cache_config c;
		if (rtl_cache_config_parse(argv[i], &c, err, sizeof(err)) < 0) {
			fprintf(stderr, "%s: %s\n", argv[i], err);
			return 2;
		}
		rtl_cachesim_add(b, &c);
	}
	rtl_cachesim_set_threads(b, threads);
	rtl_cachesim_push(b, v, 1);   /* builds the engines outside the timing */
	enum { STAGE = 8192 };
	static rtl_access stage[STAGE];
	double best_s = 1e30, best_b = 1e30, sum_s = 0, sum_b = 0;
	for (int r = 0; r < repeat; r++) {
		double t0 = now();
		rtl_cachesim_push(b, v, n);
		double dt = now() - t0;
		sum_s += dt;
		best_s = dt < best_s ? dt : best_s;
		dt = 0;
		for (size_t off = 0; off < n; off += STAGE) {
			size_t m = n - off < STAGE ? n - off : STAGE;
			memcpy(stage, v + off, m * sizeof(*v));
			t0 = now();
			rtl_cachesim_push(b, stage, m);
			dt += now() - t0;
		}
		sum_b += dt;
		best_b = dt < best_b ? dt : best_b;
	}
	/* the machine is shared: the best pass is the least disturbed one */
	printf("stream:   refs %zu configs %d engines %d best %.1f M/s mean %.1f M/s\n", n,
	       argc - 3, rtl_cachesim_engines(b), n / best_s / 1e6, n * repeat / sum_s / 1e6);
	printf("buffered: refs %zu configs %d engines %d best %.1f M/s mean %.1f M/s\n", n,
	       argc - 3, rtl_cachesim_engines(b), n / best_b / 1e6, n * repeat / sum_b / 1e6);
	rtl_cachesim_destroy(b);
	free(v);
	return 0;
}
