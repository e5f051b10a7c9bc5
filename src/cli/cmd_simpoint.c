/* reticle simpoint: SimPoint 3.0 simulation points from basic-block vectors
 * (valgrind exp-bbv's file). */
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <reticle/error.h>
#include <reticle/simpoint.h>
#include "cli.h"

static void usage(FILE *f)
{
	fputs("usage: reticle simpoint BBVFILE [-k MAX] [--seed N] [OPTIONS]\n"
	      "Chooses simulation points from basic-block vectors (valgrind --tool=exp-bbv output,\n"
	      "lines 'T:id:count :id:count ...', one per interval), after SimPoint 3.0.\n\n"
	      "  -k, --max-k MAX     largest number of clusters tried (default 10, at most 64)\n"
	      "  --seed N            seed of the projection and of k-means (default 1)\n"
	      "  --dims N            projected dimensions (default 15)\n"
	      "  --inits N           k-means runs per k, best kept (default 5)\n"
	      "  --points N          about N points in all instead of one per cluster: each\n"
	      "                      cluster gets a share by its size (two at least), each\n"
	      "                      drawn at random from its own run of the cluster's\n"
	      "                      intervals in time order; 'reticle run --sample simpoint'\n"
	      "                      then gives each estimate a confidence interval\n"
	      "  --format F          text (default) or json\n"
	      "  --simpoints FILE    also write SimPoint's .simpoints file (INTERVAL CLUSTER)\n"
	      "  --weights FILE      also write SimPoint's .weights file (WEIGHT CLUSTER, one\n"
	      "                      line per cluster: its share of the intervals)\n"
	      "Prints the chosen k, the BIC of every k, and one line per point: the 0-based\n"
	      "interval, its weight (share of intervals in its cluster, divided among the\n"
	      "cluster's points), its cluster.\n", f);
}

static int write_files(const rtl_simpoint_result *r, const char *sp, const char *wf)
{
	FILE *a = sp ? fopen(sp, "w") : NULL, *b = wf ? fopen(wf, "w") : NULL;

	if ((sp && !a) || (wf && !b)) {
		cli_error("%s: cannot write", sp && !a ? sp : wf);
		if (a)
			fclose(a);
		if (b)
			fclose(b);
		return CLI_EXIT_FAIL;
	}
	for (size_t i = 0; a && i < r->npoints; i++)
		fprintf(a, "%zu %d\n", r->points[i].interval, r->points[i].cluster);
	/* one line per cluster, its points' weights added up, in the order of
	 * its first point */
	double *w = calloc((size_t)r->k + 1, sizeof(*w));
	bool *done = calloc((size_t)r->k + 1, sizeof(*done));
	for (size_t i = 0; w && i < r->npoints; i++)
		w[r->points[i].cluster] += r->points[i].weight;
	for (size_t i = 0; b && w && done && i < r->npoints; i++) {
		int k = r->points[i].cluster;
		if (!done[k]) {
			done[k] = true;
			fprintf(b, "%.6f %d\n", w[k], k);
		}
	}
	bool failed = b && (!w || !done);
	free(w);
	free(done);
	if (a)
		fclose(a);
	if (b)
		fclose(b);
	if (failed)
		cli_error("%s: out of memory", wf);
	return failed ? CLI_EXIT_FAIL : 0;
}

static void print(const rtl_simpoint_result *r, const rtl_bbv *v, int json)
{
	if (json) {
		printf("{\"intervals\":%zu,\"k\":%d,\"bic\":[", rtl_bbv_intervals(v), r->k);
		for (int i = 0; i < r->tried; i++)
			printf("%s%.6g", i ? "," : "", r->bic[i]);
		printf("],\"points\":[");
		for (size_t i = 0; i < r->npoints; i++)
			printf("%s{\"interval\":%zu,\"weight\":%.6f,\"cluster\":%d,\"members\":%zu}",
			       i ? "," : "", r->points[i].interval, r->points[i].weight,
			       r->points[i].cluster, r->points[i].members);
		printf("]}\n");
		return;
	}
	printf("%zu intervals, k = %d\nBIC:", rtl_bbv_intervals(v), r->k);
	for (int i = 0; i < r->tried; i++)
		printf(" k=%d:%.4g", i + 1, r->bic[i]);
	printf("\n%10s %10s %8s %8s\n", "interval", "weight", "cluster", "members");
	for (size_t i = 0; i < r->npoints; i++)
		printf("%10zu %10.6f %8d %8zu\n", r->points[i].interval, r->points[i].weight,
		       r->points[i].cluster, r->points[i].members);
}

static int number(const char *opt, const char *s, long lo, long hi, long *out)
{
	char *e;

	*out = strtol(s, &e, 0);
	if (*e || *out < lo || *out > hi) {
		cli_error("%s: expected a number from %ld to %ld, got '%s'", opt, lo, hi, s);
		return -1;
	}
	return 0;
}

int cmd_simpoint(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "max-k", required_argument, 0, 'k' }, { "seed", required_argument, 0, 's' },
		{ "dims", required_argument, 0, 'd' }, { "inits", required_argument, 0, 'i' },
		{ "format", required_argument, 0, 'f' }, { "simpoints", required_argument, 0, 'p' },
		{ "weights", required_argument, 0, 'w' }, { "points", required_argument, 0, 'P' },
		{ "help", no_argument, 0, 'h' },
		{ 0, 0, 0, 0 } };
	rtl_simpoint_opts o = { .max_k = 10, .seed = 1, .dims = 15, .inits = 5, .iters = 100, .bic_frac = 0.9 };
	const char *sp = NULL, *wf = NULL;
	int json = 0, c;
	long n;
	char err[512];
	rtl_bbv *v;
	rtl_simpoint_result r;

	while ((c = getopt_long(argc, argv, "k:h", lo, NULL)) != -1) {
		switch (c) {
		case 'k': if (number("--max-k", optarg, 1, 64, &n)) return CLI_EXIT_USAGE; o.max_k = (int)n; break;
		case 's': o.seed = strtoull(optarg, NULL, 0); break;
		case 'd': if (number("--dims", optarg, 1, 1000, &n)) return CLI_EXIT_USAGE; o.dims = (int)n; break;
		case 'i': if (number("--inits", optarg, 1, 1000, &n)) return CLI_EXIT_USAGE; o.inits = (int)n; break;
		case 'f':
			if (strcmp(optarg, "text") && strcmp(optarg, "json")) {
				cli_error("--format: expected text or json, got '%s'", optarg);
				return CLI_EXIT_USAGE;
			}
			json = !strcmp(optarg, "json");
			break;
		case 'P':
			if (number("--points", optarg, 1, 1000000, &n))
				return CLI_EXIT_USAGE;
			o.points = (size_t)n;
			break;
		case 'p': sp = optarg; break;
		case 'w': wf = optarg; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return CLI_EXIT_USAGE;
		}
	}
	if (optind + 1 != argc) {
		cli_error("simpoint: give one BBV file (try 'reticle simpoint --help')");
		return CLI_EXIT_USAGE;
	}
	int rc = rtl_bbv_read(argv[optind], &v, err, sizeof(err));
	if (rc < 0) {
		if (rc == -RTL_ERR_BAD_INPUT)
			cli_error("%s", err);
		else
			cli_error("%s: %s", argv[optind], rtl_strerror(rc));
		return CLI_EXIT_FAIL;
	}
	rc = rtl_simpoint_choose(v, &o, &r);
	if (rc < 0) {
		cli_error("simpoint: %s", rtl_strerror(rc));
		rtl_bbv_destroy(v);
		return CLI_EXIT_FAIL;
	}
	print(&r, v, json);
	rc = write_files(&r, sp, wf);
	free(r.points);
	free(r.label);
	rtl_bbv_destroy(v);
	return rc;
}
