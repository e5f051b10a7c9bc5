/* reticle cachesim: simulates a bank of cache hierarchies over one address
 * trace in one pass; optional reuse-distance histogram and miss-ratio curve. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <string.h>
#include <reticle/cachesim.h>
#include <reticle/error.h>
#include "cli.h"
#include "util/array.h"
#include "util/json.h"

static const char *const level_names[RTL_LEVELS] = { "l1i", "l1d", "l1", "l2", "l3" };
static const char *const kind_names[RTL_ACC_KINDS] = { "load", "store", "modify", "ifetch", "writeback" };

static void usage(FILE *f)
{
	fputs("usage: reticle cachesim --cache SPEC [--cache SPEC...] [OPTIONS] [TRACE]\n"
	      "       reticle cachesim --mrc [OPTIONS] [TRACE]\n"
	      "Simulates every cache hierarchy over one address trace (a file; stdin when TRACE\n"
	      "is '-' or absent) in one pass.\n\n"
	      "  --cache SPEC        a hierarchy, e.g. l1i=32k:8:64,l1d=32k:8:64:lru:wb,l2=1m:16:64\n"
	      "                      levels l1i l1d l1 l2 l3 (ll = last level) = SIZE:WAYS:LINE[:OPTS];\n"
	      "                      OPTS lru fifo random plru, wb wt wnone, wa nwa; WAYS may be 'full';\n"
	      "                      items cross=split|once modify=rw|load maxsize=N inclusive=yes\n"
	      "                      seed=N name=TEXT; preset 'cachegrind' = valgrind cachegrind's model\n"
	      "  --input-format F    auto (default), din (Dinero extended), din-classic, lackey\n"
	      "  --format F          text (default) or json\n"
	      "  --mrc               also print the reuse-distance histogram and the miss-ratio\n"
	      "                      curve of fully-associative LRU (all accesses)\n"
	      "  --mrc-line N        line size for --mrc (default 64)\n"
	      "  --mrc-max SIZE      largest cache size of the curve (default 64m)\n"
	      "  --attribute LEVEL   attribute accesses and misses of LEVEL (l1i l1d l1 l2 l3) of\n"
	      "                      the first --cache to instruction addresses (lackey traces and\n"
	      "                      din traces with fetch records carry them); print the\n"
	      "                      instructions with the most misses\n"
	      "  --top N             how many instructions --attribute prints (default 20)\n"
	      "  --interval N        also write, every N instructions, each level's accesses and\n"
	      "                      misses in that interval, as CSV (interval,instructions,config,\n"
	      "                      level,accesses,misses) to --interval-out FILE; a fetch of the\n"
	      "                      address just fetched (rep iterations) is not a new instruction,\n"
	      "                      as valgrind exp-bbv counts, so intervals match its BBVs\n"
	      "  --interval-out FILE where --interval writes (required with it)\n"
	      "Conventions: docs/cachesim.md.\n", f);
}

struct opts {
	rtl_cache_config *cfg;
	int ncfg;
	int informat;
	int json;
	int mrc;
	uint32_t mrc_line;
	uint64_t mrc_max;
	int attr_level;
	int top;
	uint64_t interval;
	const char *interval_out;
	const char *trace;
};

static uint64_t parse_bytes(const char *s)
{
	char *end;
	uint64_t v = strtoull(s, &end, 0);

	if (*end == 'k' || *end == 'K')
		v <<= 10;
	else if (*end == 'm' || *end == 'M')
		v <<= 20;
	else if (*end == 'g' || *end == 'G')
		v <<= 30;
	return v;
}

static int parse_args(int argc, char **argv, struct opts *o)
{
	static const struct option lo[] = {
		{ "cache", required_argument, 0, 'c' }, { "format", required_argument, 0, 'f' },
		{ "input-format", required_argument, 0, 'i' }, { "mrc", no_argument, 0, 'm' },
		{ "mrc-line", required_argument, 0, 'l' }, { "mrc-max", required_argument, 0, 'x' },
		{ "attribute", required_argument, 0, 'a' }, { "top", required_argument, 0, 't' },
		{ "interval", required_argument, 0, 'n' }, { "interval-out", required_argument, 0, 'o' },
		{ "help", no_argument, 0, 'h' }, { 0, 0, 0, 0 } };
	static const char *const fmts[] = { "auto", "din", "din-classic", "lackey" };
	char err[256];
	int c;

	while ((c = getopt_long(argc, argv, "c:f:h", lo, NULL)) != -1) {
		switch (c) {
		case 'c':
			o->cfg = realloc(o->cfg, (o->ncfg + 1) * sizeof(*o->cfg));
			if (rtl_cache_config_parse(optarg, &o->cfg[o->ncfg], err, sizeof(err))) {
				cli_error("--cache '%s': %s", optarg, err);
				return CLI_EXIT_USAGE;
			}
			o->ncfg++;
			break;
		case 'f':
			if (strcmp(optarg, "text") && strcmp(optarg, "json")) {
				cli_error("--format: expected text or json, got '%s'", optarg);
				return CLI_EXIT_USAGE;
			}
			o->json = !strcmp(optarg, "json");
			break;
		case 'i':
			o->informat = -1;
			for (int i = 0; i < 4; i++)
				if (!strcmp(optarg, fmts[i]))
					o->informat = i;
			if (o->informat < 0) {
				cli_error("--input-format: expected auto, din, din-classic or lackey, got '%s'", optarg);
				return CLI_EXIT_USAGE;
			}
			break;
		case 'm': o->mrc = 1; break;
		case 'l':
			o->mrc_line = (uint32_t)parse_bytes(optarg);
			if (!o->mrc_line || (o->mrc_line & (o->mrc_line - 1))) {
				cli_error("--mrc-line: '%s' is not a power of two", optarg);
				return CLI_EXIT_USAGE;
			}
			break;
		case 'x': o->mrc_max = parse_bytes(optarg); break;
		case 'a':
			o->attr_level = -1;
			for (int i = 0; i < RTL_LEVELS; i++)
				if (!strcmp(optarg, level_names[i]))
					o->attr_level = i;
			if (o->attr_level < 0) {
				cli_error("--attribute: expected l1i, l1d, l1, l2 or l3, got '%s'", optarg);
				return CLI_EXIT_USAGE;
			}
			break;
		case 't':
			o->top = atoi(optarg);
			if (o->top < 1) {
				cli_error("--top: expected a positive number, got '%s'", optarg);
				return CLI_EXIT_USAGE;
			}
			break;
		case 'n':
			o->interval = strtoull(optarg, NULL, 0);
			if (!o->interval) {
				cli_error("--interval: expected a positive number of instructions, got '%s'", optarg);
				return CLI_EXIT_USAGE;
			}
			break;
		case 'o': o->interval_out = optarg; break;
		case 'h': usage(stdout); exit(0);
		default: usage(stderr); return CLI_EXIT_USAGE;
		}
	}
	if (!o->ncfg && !o->mrc) {
		cli_error("cachesim: give at least one --cache SPEC (or --mrc)");
		return CLI_EXIT_USAGE;
	}
	if (!o->interval != !o->interval_out) {
		cli_error("cachesim: --interval and --interval-out go together");
		return CLI_EXIT_USAGE;
	}
	if (optind + 1 < argc) {
		cli_error("cachesim: one trace file at most");
		return CLI_EXIT_USAGE;
	}
	o->trace = optind < argc ? argv[optind] : NULL;
	return 0;
}

static uint64_t sum(const uint64_t *v)
{
	uint64_t s = 0;

	for (int k = 0; k < RTL_ACC_KINDS; k++)
		s += v[k];
	return s;
}

static void print_level_text(const char *lname, const rtl_cache_stats *s)
{
	for (int k = 0; k < RTL_ACC_KINDS; k++) {
		if (!s->access[k])
			continue;
		printf("  %-4s %-9s %14llu %14llu %12llu %9.4f%%\n", lname, kind_names[k],
		       (unsigned long long)s->access[k], (unsigned long long)(s->access[k] - s->miss[k]),
		       (unsigned long long)s->miss[k], 100.0 * s->miss[k] / s->access[k]);
	}
	uint64_t a = sum(s->access), m = sum(s->miss);
	printf("  %-4s %-9s %14llu %14llu %12llu %9.4f%%   compulsory %llu  writebacks %llu\n", lname,
	       "total", (unsigned long long)a, (unsigned long long)(a - m), (unsigned long long)m,
	       a ? 100.0 * m / a : 0.0, (unsigned long long)s->compulsory,
	       (unsigned long long)s->writebacks);
}

static void print_level_json(const char *lname, const rtl_cache_stats *s, int first)
{
	printf("%s\"%s\":{", first ? "" : ",", lname);
	for (int k = 0; k < RTL_ACC_KINDS; k++)
		printf("\"%s\":{\"accesses\":%llu,\"hits\":%llu,\"misses\":%llu},", kind_names[k],
		       (unsigned long long)s->access[k], (unsigned long long)(s->access[k] - s->miss[k]),
		       (unsigned long long)s->miss[k]);
	uint64_t a = sum(s->access), m = sum(s->miss);
	printf("\"accesses\":%llu,\"hits\":%llu,\"misses\":%llu,\"compulsory\":%llu,"
	       "\"writebacks\":%llu}", (unsigned long long)a, (unsigned long long)(a - m),
	       (unsigned long long)m, (unsigned long long)s->compulsory,
	       (unsigned long long)s->writebacks);
}

static void print_configs(const rtl_cachesim *b, int json)
{
	for (int i = 0; i < rtl_cachesim_count(b); i++) {
		const rtl_cache_config *c = rtl_cachesim_config(b, i);
		int first = 1;
		if (json) {
			printf("%s{\"name\":", i ? "," : "");
			rtl_json_string(stdout, c->name);
			printf(",\"levels\":{");
		}
		else
			printf("config %s\n  %-4s %-9s %14s %14s %12s %10s\n", c->name, "lvl", "kind",
			       "accesses", "hits", "misses", "miss-ratio");
		for (int l = 0; l < RTL_LEVELS; l++) {
			rtl_cache_stats s;
			if (!c->level[l].present || rtl_cachesim_stats(b, i, l, &s))
				continue;
			if (json)
				print_level_json(level_names[l], &s, first);
			else
				print_level_text(level_names[l], &s);
			first = 0;
		}
		if (json)
			printf("}}");
	}
}

static void print_mrc(const rtl_cachesim *b, const struct opts *o)
{
	rtl_reuse_hist h;

	if (rtl_cachesim_reuse(b, &h))
		return;
	if (o->json) {
		printf(",\"reuse\":{\"line\":%u,\"references\":%llu,\"cold\":%llu,\"buckets\":[", h.line,
		       (unsigned long long)h.total, (unsigned long long)h.cold);
		for (int k = 0; k < RTL_REUSE_BUCKETS; k++)
			printf("%s%llu", k ? "," : "", (unsigned long long)h.bucket[k]);
		printf("],\"mrc\":[");
	} else {
		printf("reuse distances (line %u bytes): %llu references, %llu cold\n", h.line,
		       (unsigned long long)h.total, (unsigned long long)h.cold);
		for (int k = 0; k < RTL_REUSE_BUCKETS; k++)
			if (h.bucket[k])
				printf("  distance %12llu..%-12llu %14llu\n",
				       (unsigned long long)(k ? 1ULL << (k - 1) : 0),
				       (unsigned long long)(k ? (1ULL << k) - 1 : 0),
				       (unsigned long long)h.bucket[k]);
		printf("miss-ratio curve (fully-associative LRU)\n  %12s %10s %14s %10s\n",
		       "size", "lines", "misses", "ratio");
	}
	int first = 1;
	for (uint64_t size = h.line; size <= o->mrc_max; size *= 2, first = 0) {
		uint64_t m = rtl_reuse_misses(&h, size / h.line);
		double r = h.total ? (double)m / h.total : 0;
		if (o->json)
			printf("%s{\"size\":%llu,\"misses\":%llu,\"ratio\":%.6f}", first ? "" : ",",
			       (unsigned long long)size, (unsigned long long)m, r);
		else
			printf("  %12llu %10llu %14llu %9.4f%%\n", (unsigned long long)size,
			       (unsigned long long)(size / h.line), (unsigned long long)m, 100 * r);
	}
	if (o->json)
		printf("]}");
}

struct intervals;
static int simulate_trace(rtl_cachesim *b, const struct opts *o, uint64_t *refs, struct intervals *iv);

struct costs {
	rtl_instr_cost *v;
	size_t n, cap;
};

static int collect(const rtl_instr_cost *c, void *user)
{
	struct costs *cs = user;

	if (rtl_grow(&cs->v, &cs->cap, cs->n + 1, sizeof(*cs->v)))
		return -1;
	cs->v[cs->n++] = *c;
	return 0;
}

static int by_misses(const void *x, const void *y)
{
	const rtl_instr_cost *a = x, *b = y;

	if (a->miss != b->miss)
		return a->miss > b->miss ? -1 : 1;
	return a->iaddr < b->iaddr ? -1 : a->iaddr > b->iaddr;
}

static void print_attribution(const rtl_cachesim *b, const struct opts *o)
{
	struct costs cs = { 0 };

	if (o->attr_level < 0)
		return;
	rtl_cachesim_foreach_instr(b, collect, &cs);
	qsort(cs.v, cs.n, sizeof(*cs.v), by_misses);
	if (o->json)
		printf(",\"attribution\":{\"level\":\"%s\",\"instructions\":[", level_names[o->attr_level]);
	else
		printf("top instructions by %s misses (%s)\n  %18s %14s %12s\n", level_names[o->attr_level],
		       rtl_cachesim_config(b, 0)->name, "instruction", "accesses", "misses");
	for (size_t i = 0; i < cs.n && i < (size_t)o->top; i++) {
		if (o->json)
			printf("%s{\"iaddr\":%llu,\"accesses\":%llu,\"misses\":%llu}", i ? "," : "",
			       (unsigned long long)cs.v[i].iaddr, (unsigned long long)cs.v[i].access,
			       (unsigned long long)cs.v[i].miss);
		else
			printf("  %#18llx %14llu %12llu\n", (unsigned long long)cs.v[i].iaddr,
			       (unsigned long long)cs.v[i].access, (unsigned long long)cs.v[i].miss);
	}
	if (o->json)
		printf("]}");
	free(cs.v);
}

/* --interval: cumulative counts at the previous boundary, per configuration
 * and level, to print differences. */
struct intervals {
	FILE *f;
	uint64_t every, instrs, last_fetch, index;
	uint64_t (*prev)[RTL_LEVELS][2];
};

static void interval_close(const rtl_cachesim *b, struct intervals *iv, uint64_t instrs)
{
	for (int c = 0; c < rtl_cachesim_count(b); c++)
		for (int l = 0; l < RTL_LEVELS; l++) {
			rtl_cache_stats s;
			if (!rtl_cachesim_config(b, c)->level[l].present || rtl_cachesim_stats(b, c, l, &s))
				continue;
			uint64_t a = sum(s.access), m = sum(s.miss);
			fprintf(iv->f, "%llu,%llu,%d,%s,%llu,%llu\n", (unsigned long long)iv->index,
				(unsigned long long)instrs, c, level_names[l],
				(unsigned long long)(a - iv->prev[c][l][0]),
				(unsigned long long)(m - iv->prev[c][l][1]));
			iv->prev[c][l][0] = a;
			iv->prev[c][l][1] = m;
		}
	iv->index++;
}

/* Pushes BUF[0..N), closing an interval before the fetch that starts the
 * next one. */
static int push_intervals(rtl_cachesim *b, struct intervals *iv, const rtl_access *buf, size_t n)
{
	size_t from = 0;
	int rc;

	for (size_t i = 0; i < n; i++) {
		if (buf[i].kind != RTL_ACC_IFETCH || buf[i].addr == iv->last_fetch)
			continue;
		iv->last_fetch = buf[i].addr;
		if (iv->instrs++ < iv->every || (iv->instrs - 1) % iv->every)
			continue;
		if ((rc = rtl_cachesim_push(b, buf + from, i - from)) < 0)
			return rc;
		from = i;
		interval_close(b, iv, iv->every);
	}
	return rtl_cachesim_push(b, buf + from, n - from);
}

static int simulate(rtl_cachesim *b, const struct opts *o, uint64_t *refs)
{
	struct intervals iv = { .every = o->interval, .last_fetch = UINT64_MAX };

	if (o->interval) {
		iv.prev = calloc(rtl_cachesim_count(b) + 1, sizeof(*iv.prev));
		if (!(iv.f = fopen(o->interval_out, "w")) || !iv.prev) {
			cli_error("%s: cannot write", o->interval_out);
			free(iv.prev);
			if (iv.f)
				fclose(iv.f);
			return CLI_EXIT_FAIL;
		}
		fputs("interval,instructions,config,level,accesses,misses\n", iv.f);
	}
	int rc = simulate_trace(b, o, refs, o->interval ? &iv : NULL);
	if (o->interval) {
		if (!rc)
			interval_close(b, &iv, (iv.instrs - 1) % iv.every + 1);
		fclose(iv.f);
		free(iv.prev);
	}
	return rc;
}

static int simulate_trace(rtl_cachesim *b, const struct opts *o, uint64_t *refs, struct intervals *iv)
{
	enum { BUF = 1 << 16 };
	rtl_trace_reader *r;
	rtl_access *buf = malloc(BUF * sizeof(*buf));
	long n;
	int rc = rtl_trace_open(o->trace, o->informat, &r);

	if (rc < 0 || !buf) {
		cli_error("%s: %s", o->trace ? o->trace : "stdin", rtl_strerror(rc ? rc : -12));
		free(buf);
		return CLI_EXIT_FAIL;
	}
	while ((n = rtl_trace_read(r, buf, BUF)) > 0) {
		*refs += (uint64_t)n;
		rc = iv ? push_intervals(b, iv, buf, (size_t)n) : rtl_cachesim_push(b, buf, (size_t)n);
		if (rc < 0)
			break;
	}
	if (n < 0)
		cli_error("%s: %s", o->trace ? o->trace : "stdin",
			  n == -RTL_ERR_BAD_INPUT ? rtl_trace_error(r) : rtl_strerror((int)n));
	else if (rc < 0)
		cli_error("cachesim: %s", rtl_strerror(rc));
	rtl_trace_close(r);
	free(buf);
	return n < 0 || rc < 0 ? CLI_EXIT_FAIL : 0;
}

int cmd_cachesim(int argc, char **argv)
{
	struct opts o = { .mrc_line = 64, .mrc_max = 64ULL << 20, .attr_level = -1, .top = 20 };
	rtl_cachesim *b = NULL;
	uint64_t refs = 0;
	int rc = parse_args(argc, argv, &o);

	if (rc)
		goto out;
	rc = CLI_EXIT_FAIL;
	if (rtl_cachesim_create(&b) < 0)
		goto out;
	for (int i = 0; i < o.ncfg; i++)
		if (rtl_cachesim_add(b, &o.cfg[i]) < 0)
			goto out;
	rtl_cachesim_set_threads(b, (int)sysconf(_SC_NPROCESSORS_ONLN));   /* several first levels at once */
	if (o.mrc && rtl_cachesim_enable_reuse(b, o.mrc_line) < 0)
		goto out;
	if (o.attr_level >= 0 && (!o.ncfg || rtl_cachesim_enable_attribution(b, 0, o.attr_level) < 0)) {
		cli_error("--attribute: the first --cache has no level %s", level_names[o.attr_level]);
		rc = CLI_EXIT_USAGE;
		goto out;
	}
	if ((rc = simulate(b, &o, &refs)))
		goto out;
	if (o.json) {
		printf("{\"references\":%llu,\"engines\":%d,\"configs\":[", (unsigned long long)refs,
		       rtl_cachesim_engines(b));
		print_configs(b, 1);
		printf("]");
		print_mrc(b, &o);
		print_attribution(b, &o);
		printf("}\n");
	} else {
		printf("%llu references, %d configurations, %d simulators after sharing\n",
		       (unsigned long long)refs, o.ncfg, rtl_cachesim_engines(b));
		print_configs(b, 0);
		print_mrc(b, &o);
		print_attribution(b, &o);
	}
out:
	rtl_cachesim_destroy(b);
	free(o.cfg);
	return rc;
}
