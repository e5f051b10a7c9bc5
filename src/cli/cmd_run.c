/* reticle run: launch a program under the native engine with collectors. */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <reticle/cachesim.h>
#include <reticle/collector.h>
#include <reticle/error.h>
#include <reticle/session.h>
#include "cli.h"
#include "control.h"

static void usage(FILE *f)
{
	fputs("usage: reticle run [-c COLLECTORS] [--collector ./x.so[:ARGS]] [-o PROFILE] [--cold]\n"
	      "                   [--freq HZ] [--event E] [--cache SPEC]... [--interval N]\n"
	      "                   [--bbv-out FILE] [--trace FILE] [--sample periodic:ON:OFF]\n"
	      "                   [--warmup N] [--warmup-lower N]\n"
	      "                   [--no-chain] [--aslr | --no-aslr]\n"
	      "                   [--modules LIST] [--functions LIST]\n"
	      "                   [--from EDGE] [--to EDGE]\n"
	      "                   [--stats]\n"
	      "                   [-f CONTROL_FILE]\n"
	      "                   [-- PROGRAM [ARGS...]]\n"
	      "\n"
	      "Runs PROGRAM (an unmodified x86-64 ELF, or a script) under reticle and writes one\n"
	      "profile (SQLite) for the run: PROFILE (default reticle.PID.db), every process\n"
	      "PROGRAM forks or execs inside it ('reticle report --tree' lists them).\n"
	      "PROGRAM's stdin, stdout, stderr and exit status pass through; reticle's own\n"
	      "messages go to stderr. A target killed by a signal makes reticle exit with\n"
	      "128+signal, as shells do; 127 when PROGRAM is not found, 126 when it cannot\n"
	      "be run (not executable, or not x86-64), 1 when the profile cannot be written\n"
	      "(checked before PROGRAM starts) or reticle fails. An executable file that is\n"
	      "neither ELF nor a #! script runs under /bin/sh, as execvp runs it. Signals\n"
	      "sent to reticle itself (TERM, HUP, INT, QUIT, USR1, USR2) go on to PROGRAM.\n"
	      "\n"
	      "  -c, --collect LIST   comma-separated collectors (default fcount):\n", f);
	for (size_t i = 0; i < rtl_collector_count(); i++)
		fprintf(f, "                         %-9s %s\n", rtl_collector_at(i)->name,
			rtl_collector_at(i)->summary);
	fputs("      --collector SO[:ARGS]  also a collector built outside reticle: a shared\n"
	      "                       object defining rtl_collector_entry() (reticle/collector.h,\n"
	      "                       examples/collectors/); ARGS go to it. Repeatable; without\n"
	      "                       -c, only the plug-ins run\n"
	      "  -o, --output FILE    the profile (all processes of the run); under an MPI\n"
	      "                       launcher each rank writes FILE with .rankN before its\n"
	      "                       extension (reticle.rankN.db without -o): 'reticle merge'\n"
	      "                       makes one profile of them\n"
	      "      --cold           neither use nor update the warm-start cache\n"
	      "      --debug-on-fault at a fault (SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT),\n"
	      "                       the prompt of 'reticle debug' on the terminal, before\n"
	      "                       the signal is delivered (bt, registers, x, disas...)\n"
	      "      --debug-dir DIR  look for separate debug files (names) in DIR first,\n"
	      "                       then in $RETICLE_DEBUG_DIR and /usr/lib/debug\n"
	      "      --freq HZ        sample collector: samples per second of each running\n"
	      "                       thread (default 1000; at most the kernel's\n"
	      "                       perf_event_max_sample_rate)\n"
	      "      --event E        sample collector: what to sample on: cpu-clock (default),\n"
	      "                       task-clock, page-faults, context-switches, or, where the\n"
	      "                       machine has a PMU, cycles, instructions, cache-references,\n"
	      "                       cache-misses, branches, branch-misses\n"
	      "      --cache SPEC     memtrace collector: a cache configuration to simulate, as\n"
	      "                       'reticle cachesim --cache' takes it (docs/cachesim.md);\n"
	      "                       repeatable, every one fed in the same pass (default:\n"
	      "                       cachegrind,l1i=32k:8:64,l1d=32k:8:64,ll=8m:16:64)\n"
	      "      --trace FILE     memtrace collector: write the data accesses to FILE as a\n"
	      "                       Dinero din trace (r, w, m for a modify; hex address\n"
	      "                       and size) instead of simulating caches ('reticle\n"
	      "                       cachesim FILE' reads it); other processes' in FILE.PID\n"
	      "      --no-chain       memtrace collector: a record for every access (the\n"
	      "                       static analysis off: accesses whose address follows\n"
	      "                       from the record before them in their block share it;\n"
	      "                       the stream and the results are the same)\n"
	      "      --aslr, --no-aslr  run PROGRAM with or without address randomization;\n"
	      "                       by default it is off with memtrace and bbv (their\n"
	      "                       results follow addresses and instruction counts: two\n"
	      "                       runs, or a bbv run and its sampled memtrace run, see\n"
	      "                       the same ones) and as the system has it otherwise;\n"
	      "                       the profile's meta 'aslr' says which\n"
	      "      --sample periodic:ON:OFF  memtrace collector: trace ON instructions of\n"
	      "                       each thread out of every ON+OFF, at a random offset in\n"
	      "                       each period (fixed seed; the rest runs in untraced\n"
	      "                       twins of the copies); meta memtrace_estimate_N_LEVEL:\n"
	      "                       each miss ratio with its 95% confidence interval\n"
	      "      --sample simpoint:SIMPOINTS,WEIGHTS  memtrace collector: trace only the\n"
	      "                       intervals 'reticle simpoint --simpoints --weights' chose\n"
	      "                       (with --interval N, their size) and write each cache's\n"
	      "                       miss ratio estimated from them (with its 95% interval\n"
	      "                       where each cluster has two points or more)\n"
	      "      --warmup N       with --sample: the N instructions before each traced\n"
	      "                       window are traced too, into the caches but not into\n"
	      "                       the estimate, so that the window starts with caches\n"
	      "                       as the whole run would have them (default 0: each\n"
	      "                       starts with what the last window left)\n"
	      "      --warmup-lower N with --sample: the N instructions before those warm the\n"
	      "                       levels below the first (L2, L3) only, through one\n"
	      "                       first-level cache, at about the cost of one first\n"
	      "                       level: a 1 MiB L2 needs millions of instructions of\n"
	      "                       warm-up, an L1D thousands (default 0)\n"
	      "      --interval N     bbv collector: instructions per interval (default\n"
	      "                       100000000)\n"
	      "      --bbv-out FILE   bbv collector: where the vectors go, exp-bbv's format\n"
	      "                       ('reticle simpoint FILE' reads it; default: the profile's\n"
	      "                       name with .bb for .db); other processes' in FILE.PID\n"
	      "      --modules LIST   measure only the functions of these modules: comma-\n"
	      "                       separated globs on a module's path or file name\n"
	      "                       (libc.so*,myprog); repeatable\n"
	      "      --functions LIST measure only the functions named so (globs: parse_*,\n"
	      "                       main); with --modules, those of these modules\n"
	      "      --from EDGE      count from EDGE on, in each process: SECONDS after the\n"
	      "                       start (5s, 300ms), call:NAME (the first call of\n"
	      "                       function NAME: exact in the thread that calls it),\n"
	      "                       fork, exec, dlopen, signal or signal:N (the process's\n"
	      "                       first); counting only (not with sample, shim,\n"
	      "                       calltime, memtrace, bbv)\n"
	      "      --to EDGE        stop counting at EDGE: as --from, or +SECONDS after the\n"
	      "                       start edge; the profile's meta 'span' says FROM..TO\n"
	      "      --stats          print engine statistics at the end\n"
	      "  -f, --file FILE      a control file: Lua assignments of application,\n"
	      "                       arguments, collect, collectors, output, cold, stats,\n"
	      "                       debug_dirs, freq, event, modules, functions, from,\n"
	      "                       to (e.g. collect = {\"fcount\",\n"
	      "                       \"calltime\"});\n"
	      "                       options given here override it, and a PROGRAM after\n"
	      "                       -- its application and arguments\n"
	      "  -h, --help           this help\n"
	      "\n"
	      "Warm start: for each binary, reticle remembers which functions ran and their\n"
	      "decoded instructions (in $RETICLE_CACHE_DIR, default $XDG_CACHE_HOME/reticle or\n"
	      "~/.cache/reticle) and relocates them at the program's entry point on the next\n"
	      "run, instead of stopping the program at each one's first call. Counts are the\n"
	      "same either way. The cache keeps to $RETICLE_CACHE_MAX_MB megabytes (default\n"
	      "2048), dropping the files used longest ago.\n", f);
}

/* $RETICLE_CACHE_MAX_MB, 0 (the library's default) when unset or not a number. */

/* "fcount, bbcount, ...": the built-in collectors' names. */
static const char *builtin_names(void)
{
	static char buf[256];
	size_t used = 0;
	for (size_t i = 0; i < rtl_collector_count() && used < sizeof(buf); i++)
		used += (size_t)snprintf(buf + used, sizeof(buf) - used, "%s%s", i ? ", " : "",
					 rtl_collector_at(i)->name);
	return buf;
}

/* LIST's collectors into OUT; "shim:PERIOD" and "calltime:all" set *O. */
int cli_parse_collectors(const char *cmd, const char *list, const struct rtl_collector **out, size_t *n,
			 struct cli_collector_opts *o)
{
	*o = (struct cli_collector_opts){ 0 };
	char *copy = strdup(list), *save = NULL;
	*n = 0;
	if (!copy)
		return -ENOMEM;
	size_t len = strlen(list);
	if (len && (list[0] == ',' || list[len - 1] == ',' || strstr(list, ",,"))) {
		/* '-c fcount,' is likely a name left out, not one collector */
		cli_error("%s: an empty name in the collector list '%s' (built in: %s)", cmd, list, builtin_names());
		free(copy);
		return -RTL_ERR_UNKNOWN_COLLECTOR;
	}
	for (char *name = strtok_r(copy, ",", &save); name; name = strtok_r(NULL, ",", &save)) {
		if (!strncmp(name, "shim:", 5)) {
			char *end;
			unsigned long v = strtoul(name + 5, &end, 10);
			if (!name[5] || *end || !v || v > 100000000) {
				cli_error("%s: shim:PERIOD takes the observer's period in TSC cycles (e.g. shim:1000), "
					  "not '%s'", cmd, name + 5);
				free(copy);
				return -RTL_ERR_BAD_OPTION;
			}
			o->shim_period = (unsigned)v;
			name[4] = 0;
		} else if (!strncmp(name, "calltime:", 9)) {
			if (strcmp(name + 9, "all")) {
				cli_error("%s: calltime takes one option, calltime:all (time every call of leaf "
					  "functions too), not '%s'", cmd, name + 9);
				free(copy);
				return -RTL_ERR_BAD_OPTION;
			}
			o->time_all_calls = true;
			name[8] = 0;
		}
		const struct rtl_collector *c = rtl_collector_find(name);
		if (!c) {
			cli_error("unknown collector '%s' (built in: %s; a plug-in loads with --collector ./x.so)",
				  name, builtin_names());
			free(copy);
			return -RTL_ERR_UNKNOWN_COLLECTOR;
		}
		bool dup = false;
		for (size_t i = 0; i < *n; i++)
			dup |= out[i] == c;
		if (!dup && *n < MAX_COLLECTORS)
			out[(*n)++] = c;
	}
	free(copy);
	if (!*n) {
		cli_error("%s: no collector given (-c takes a comma-separated list: %s)", cmd, builtin_names());
		return -RTL_ERR_UNKNOWN_COLLECTOR;
	}
	return 0;
}

/* The first of the variables NAMES set to a non-negative number, or -1. */
static long env_number(const char *const *names)
{
	for (; *names; names++) {
		const char *v = getenv(*names);
		char *end;
		long n = v && *v ? strtol(v, &end, 10) : -1;
		if (v && *v && !*end && n >= 0)
			return n;
	}
	return -1;
}

/* The MPI rank of this process, when a launcher started it as one (Open
 * MPI, MPICH's hydra and other PMI launchers, MVAPICH, Slurm's srun), and
 * the job's size; -1 when none is set. */
static long mpi_rank(long *size)
{
	static const char *const ranks[] = { "OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK",
					     "MV2_COMM_WORLD_RANK", "SLURM_PROCID", NULL };
	static const char *const sizes[] = { "OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "MV2_COMM_WORLD_SIZE",
					     "SLURM_NTASKS", NULL };
	*size = env_number(sizes);
	return env_number(ranks);
}

/* OUTPUT with ".rankN" before its extension (p.db: p.rank3.db), or
 * reticle.rankN.db without one: each rank writes its own. */
static char *ranked_output(const char *output, long rank)
{
	char *out = NULL;
	if (!output)
		return asprintf(&out, "reticle.rank%ld.db", rank) < 0 ? NULL : out;
	const char *base = strrchr(output, '/'), *dot = strrchr(base ? base + 1 : output, '.');
	if (!dot || dot == (base ? base + 1 : output))
		return asprintf(&out, "%s.rank%ld", output, rank) < 0 ? NULL : out;
	return asprintf(&out, "%.*s.rank%ld%s", (int)(dot - output), output, rank, dot) < 0 ? NULL : out;
}

/* What the command line (and a control file) ask for. */
enum { MAX_GLOBS = 32 };

struct run_args {
	const char *collect, *output;
	const char *plugins[MAX_COLLECTORS / 2];
	size_t nplugins;
	bool stats, cold, debug_on_fault;
	char **program;
	const char *event;        /* the sample collector's */
	unsigned freq;
	const char *caches[32];   /* the memtrace collector's */
	size_t ncaches;
	uint64_t interval;        /* the bbv collector's */
	const char *bbv_out;
	const char *trace;        /* memtrace --trace */
	bool no_chain;            /* memtrace --no-chain */
	int aslr;                 /* RTL_ASLR_*: --aslr, --no-aslr */
	uint64_t sample_on, sample_off;   /* memtrace --sample periodic:ON:OFF */
	uint64_t warmup, warmup_lower;    /* memtrace --warmup, --warmup-lower */
	const char *simpoint;     /* memtrace --sample simpoint:SIMPOINTS,WEIGHTS */
	/* the run's context: scope (NULL-ended globs) and span */
	const char *modules[MAX_GLOBS + 1], *functions[MAX_GLOBS + 1];
	size_t nmodules, nfunctions;
	const char *from, *to;
};

/* The comma-separated globs of LIST (split in place) added to V (N of
 * them, NULL-ended); 0, or an exit status after a message. */
static int add_globs(const char *opt, char *list, const char **v, size_t *n)
{
	for (char *g = strtok(list, ","); g; g = strtok(NULL, ",")) {
		if (*n == MAX_GLOBS) {
			cli_error("run: at most %d globs in %s", MAX_GLOBS, opt);
			return CLI_EXIT_USAGE;
		}
		v[(*n)++] = g;
		v[*n] = NULL;
	}
	return 0;
}

/* SimPoint's points, read from its two files. */
struct points {
	uint64_t *at;          /* intervals, ascending */
	double *weight;        /* each point's part of its cluster's weight */
	uint32_t *cluster;
	size_t n, cap;
};

static void points_free(struct points *p)
{
	free(p->at);
	free(p->weight);
	free(p->cluster);
	*p = (struct points){ 0 };
}

/* SPEC = "SIMPOINTS,WEIGHTS" (reticle simpoint --simpoints, --weights:
 * "INTERVAL CLUSTER", "WEIGHT CLUSTER" lines): the intervals in order,
 * the points of one cluster sharing its weight. */
static int read_points(const char *spec, struct points *pts)
{
	const char *comma = strchr(spec, ',');
	char sp[4096];
	*pts = (struct points){ 0 };
	if (!comma || (size_t)(comma - spec) >= sizeof(sp)) {
		cli_error("run: --sample simpoint:%s: simpoint:SIMPOINTS,WEIGHTS (the files of reticle simpoint "
			  "--simpoints F --weights F)", spec);
		return CLI_EXIT_USAGE;
	}
	memcpy(sp, spec, (size_t)(comma - spec));
	sp[comma - spec] = 0;
	FILE *fs = fopen(sp, "r"), *fw = fopen(comma + 1, "r");
	double wt[1024] = { 0 };
	bool have[1024] = { false };
	unsigned count[1024] = { 0 };
	unsigned long long iv;
	unsigned c;
	double w;
	int rc = 0;
	if (!fs || !fw) {
		cli_error("run: --sample: cannot read %s: %s", !fs ? sp : comma + 1, strerror(errno));
		rc = CLI_EXIT_USAGE;
	}
	while (!rc && fw && fscanf(fw, "%lf %u", &w, &c) == 2)
		if (c < 1024 && w >= 0) {
			wt[c] = w;
			have[c] = true;
		}
	while (!rc && fs && fscanf(fs, "%llu %u", &iv, &c) == 2) {
		if (c >= 1024 || !have[c]) {
			cli_error("run: --sample: %s names cluster %u, which %s does not weigh", sp, c, comma + 1);
			rc = CLI_EXIT_USAGE;
			break;
		}
		if (pts->n == pts->cap) {
			pts->cap = pts->cap ? 2 * pts->cap : 16;
			uint64_t *na = realloc(pts->at, pts->cap * sizeof(*na));
			if (na)
				pts->at = na;
			double *nw = na ? realloc(pts->weight, pts->cap * sizeof(*nw)) : NULL;
			if (nw)
				pts->weight = nw;
			uint32_t *nc = nw ? realloc(pts->cluster, pts->cap * sizeof(*nc)) : NULL;
			if (!nc) {
				rc = CLI_EXIT_FAIL;
				break;
			}
			pts->cluster = nc;
		}
		size_t k = pts->n++;   /* kept in order of the interval */
		while (k && pts->at[k - 1] > iv) {
			pts->at[k] = pts->at[k - 1];
			pts->cluster[k] = pts->cluster[k - 1];
			k--;
		}
		if (k && pts->at[k - 1] == iv) {
			cli_error("run: --sample: %s names interval %llu twice", sp, iv);
			rc = CLI_EXIT_USAGE;
			break;
		}
		pts->at[k] = iv;
		pts->cluster[k] = c;
		count[c]++;
	}
	if (!rc && !pts->n) {
		cli_error("run: --sample: no point in %s", sp);
		rc = CLI_EXIT_USAGE;
	}
	for (size_t k = 0; !rc && k < pts->n; k++)
		pts->weight[k] = wt[pts->cluster[k]] / count[pts->cluster[k]];
	if (fs)
		fclose(fs);
	if (fw)
		fclose(fw);
	if (rc)
		points_free(pts);
	return rc;
}

/* What options left unsaid, from the control file CTL: the command line
 * wins, a program after -- replaces its application and arguments.
 * *FROM_FILE: the argv built from it, to free. */
static int take_control(struct run_args *a, const struct run_control *ctl, char ***from_file)
{
	a->collect = a->collect ? a->collect : ctl->collect;
	a->output = a->output ? a->output : ctl->output;
	a->freq = a->freq ? a->freq : ctl->freq;
	a->event = a->event ? a->event : ctl->event;
	a->from = a->from ? a->from : ctl->from;
	a->to = a->to ? a->to : ctl->to;
	const struct { char **v; size_t n; const char **to; size_t *nto; const char *what; } lists[] = {
		{ ctl->modules, ctl->nmodules, a->modules, &a->nmodules, "modules" },
		{ ctl->functions, ctl->nfunctions, a->functions, &a->nfunctions, "functions" },
	};
	for (size_t l = 0; l < 2; l++) {
		if (*lists[l].nto || !lists[l].n)
			continue;   /* the command line's win */
		if (lists[l].n > MAX_GLOBS) {
			cli_error("run: at most %d %s in a control file", MAX_GLOBS, lists[l].what);
			return CLI_EXIT_USAGE;
		}
		for (size_t i = 0; i < lists[l].n; i++)
			lists[l].to[i] = lists[l].v[i];
		lists[l].to[lists[l].n] = NULL;
		*lists[l].nto = lists[l].n;
	}
	size_t room = sizeof(a->plugins) / sizeof(*a->plugins);
	if (!a->nplugins) {
		if (ctl->nplugins > room) {
			cli_error("run: at most %zu collectors in a control file", room);
			return CLI_EXIT_USAGE;
		}
		memcpy(a->plugins, ctl->plugins, ctl->nplugins * sizeof(*a->plugins));
		a->nplugins = ctl->nplugins;
	}
	a->stats |= ctl->stats == 1;
	a->cold |= ctl->cold == 1;
	for (size_t i = 0; i < ctl->ndebug_dirs; i++)
		if (cli_add_debug_dir(ctl->debug_dirs[i]))
			return CLI_EXIT_USAGE;
	if (!a->program[0] && ctl->application) {
		*from_file = calloc(ctl->narguments + 2, sizeof(char *));
		if (!*from_file)
			return CLI_EXIT_FAIL;
		(*from_file)[0] = ctl->application;
		memcpy(*from_file + 1, ctl->arguments, ctl->narguments * sizeof(char *));
		a->program = *from_file;
	}
	return 0;
}

static int run_program(const struct run_args *a);

int cmd_run(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "collect", required_argument, NULL, 'c' },
		{ "output", required_argument, NULL, 'o' },
		{ "stats", no_argument, NULL, 's' },
		{ "cold", no_argument, NULL, 'C' },
		{ "debug-dir", required_argument, NULL, 'g' },
		{ "collector", required_argument, NULL, 'P' },
		{ "file", required_argument, NULL, 'f' },
		{ "freq", required_argument, NULL, 'F' },
		{ "event", required_argument, NULL, 'E' },
		{ "cache", required_argument, NULL, 'K' },
		{ "interval", required_argument, NULL, 'I' },
		{ "bbv-out", required_argument, NULL, 'B' },
		{ "trace", required_argument, NULL, 'T' },
		{ "sample", required_argument, NULL, 'S' },
		{ "no-chain", no_argument, NULL, 'W' },
		{ "aslr", no_argument, NULL, 'R' },
		{ "warmup", required_argument, NULL, 'U' },
		{ "warmup-lower", required_argument, NULL, 'u' },
		{ "no-aslr", no_argument, NULL, 'r' },
		{ "debug-on-fault", no_argument, NULL, 'Q' },
		{ "modules", required_argument, NULL, 'M' },
		{ "functions", required_argument, NULL, 'N' },
		{ "from", required_argument, NULL, 'A' },
		{ "to", required_argument, NULL, 'Z' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	struct run_args a = { 0 };
	const char *control_path = NULL;
	int opt;

	optind = 1;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, "+c:o:f:h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'c': a.collect = optarg; break;
		case 'f': control_path = optarg; break;
		case 'o': a.output = optarg; break;
		case 's': a.stats = true; break;
		case 'C': a.cold = true; break;
		case 'Q': a.debug_on_fault = true; break;
		case 'P':
			if (a.nplugins == sizeof(a.plugins) / sizeof(*a.plugins)) {
				cli_error("run: at most %zu --collector options", a.nplugins);
				return CLI_EXIT_USAGE;
			}
			a.plugins[a.nplugins++] = optarg;
			break;
		case 'g':
			if (cli_add_debug_dir(optarg))
				return CLI_EXIT_USAGE;
			break;
		case 'F':
			if (cli_parse_freq("run", optarg, &a.freq))
				return CLI_EXIT_USAGE;
			break;
		case 'E': a.event = optarg; break;
		case 'K': {
			rtl_cache_config cfg;
			char why[256];
			if (a.ncaches == sizeof(a.caches) / sizeof(*a.caches)) {
				cli_error("run: at most %zu --cache options", a.ncaches);
				return CLI_EXIT_USAGE;
			}
			if (rtl_cache_config_parse(optarg, &cfg, why, sizeof(why)) ||
			    rtl_cache_config_check(&cfg, why, sizeof(why))) {
				cli_error("run: --cache %s: %s", optarg, why);
				return CLI_EXIT_USAGE;
			}
			a.caches[a.ncaches++] = optarg;
			break;
		}
		case 'I': {
			char *end;
			errno = 0;
			unsigned long long v = strtoull(optarg, &end, 10);
			if (errno || *end || !v || v > (1ull << 62) || optarg[0] == '-') {
				cli_error("run: --interval %s: a number of instructions, 1 or more", optarg);
				return CLI_EXIT_USAGE;
			}
			a.interval = v;
			break;
		}
		case 'U': case 'u': {
			char *end;
			errno = 0;
			unsigned long long v = strtoull(optarg, &end, 10);
			if (errno || *end || v > (1ull << 62) || optarg[0] == '-' || !optarg[0]) {
				cli_error("run: --warmup%s %s: a number of instructions", opt == 'u' ? "-lower" : "", optarg);
				return CLI_EXIT_USAGE;
			}
			*(opt == 'U' ? &a.warmup : &a.warmup_lower) = v;
			break;
		}
		case 'B': a.bbv_out = optarg; break;
		case 'M':
			if (add_globs("--modules", optarg, a.modules, &a.nmodules))
				return CLI_EXIT_USAGE;
			break;
		case 'N':
			if (add_globs("--functions", optarg, a.functions, &a.nfunctions))
				return CLI_EXIT_USAGE;
			break;
		case 'A': a.from = optarg; break;
		case 'Z': a.to = optarg; break;
		case 'T': a.trace = optarg; break;
		case 'W': a.no_chain = true; break;
		case 'R': a.aslr = RTL_ASLR_ON; break;
		case 'r': a.aslr = RTL_ASLR_OFF; break;
		case 'S': {
			unsigned long long on, off;
			int used = 0;
			if (!strncmp(optarg, "simpoint:", 9)) {
				a.simpoint = optarg + 9;
				break;
			}
			if (sscanf(optarg, "periodic:%llu:%llu%n", &on, &off, &used) != 2 || optarg[used] || !on || !off ||
			    on > (1ull << 62) || off > (1ull << 62) || strchr(optarg, '-')) {
				cli_error("run: --sample %s: periodic:ON:OFF (ON instructions traced out of every "
					  "ON+OFF, both 1 or more) or simpoint:SIMPOINTS,WEIGHTS", optarg);
				return CLI_EXIT_USAGE;
			}
			a.sample_on = on;
			a.sample_off = off;
			break;
		}
		case 'h': usage(stdout); return 0;
		default:
			cli_error("run: unknown option or missing argument '%s' (try 'reticle run --help')",
				  argv[optind - 1]);
			return CLI_EXIT_USAGE;
		}
	}
	a.program = argv + optind;
	struct run_control ctl;
	char **from_file = NULL;
	int rc = 0;
	if (control_path && control_load(control_path, &ctl))
		return CLI_EXIT_USAGE;
	if (control_path)
		rc = take_control(&a, &ctl, &from_file);
	if (!rc)
		rc = run_program(&a);
	free(from_file);
	if (control_path)
		control_free(&ctl);
	return rc;
}

static int run_session(const struct run_args *a, const char *output, const char *const *meta);

static int run_program(const struct run_args *a)
{
	const char *output = a->output;
	/* under an MPI launcher: a profile per rank, named and marked by it */
	long size, rank = mpi_rank(&size);
	char *ranked = rank >= 0 ? ranked_output(output, rank) : NULL, rank_s[24], size_s[24];
	const char *meta[5] = { NULL };
	if (rank >= 0) {
		if (!ranked)
			return CLI_EXIT_FAIL;
		output = ranked;
		snprintf(rank_s, sizeof(rank_s), "%ld", rank);
		snprintf(size_s, sizeof(size_s), "%ld", size);
		meta[0] = "mpi_rank";
		meta[1] = rank_s;
		meta[2] = size >= 0 ? "mpi_size" : NULL;
		meta[3] = size_s;
	}
	int rc = run_session(a, output, meta);
	free(ranked);
	return rc;
}

static int run_session(const struct run_args *a, const char *output, const char *const *meta)
{
	char **program = a->program;
	const struct rtl_collector *colls[MAX_COLLECTORS];
	size_t ncolls = 0;
	if (!program[0]) {
		cli_error("run: no program given (usage: reticle run [OPTIONS] -- PROGRAM [ARGS...], "
			  "or application in a control file)");
		return CLI_EXIT_USAGE;
	}
	struct cli_collector_opts copts;
	if ((a->collect || !a->nplugins) &&
	    cli_parse_collectors("run", a->collect ? a->collect : "fcount", colls, &ncolls, &copts))
		return CLI_EXIT_USAGE;
	for (size_t i = 0; i < a->nplugins; i++) {
		int rc = cli_load_collector(a->plugins[i], colls, ncolls, &colls[ncolls]);
		if (rc)
			return rc;
		ncolls++;
	}
	bool sampling = false, shimming = false, tracing = false, vectors = false;
	for (size_t i = 0; i < ncolls; i++) {
		sampling |= !strcmp(colls[i]->name, "sample");
		shimming |= !strcmp(colls[i]->name, "shim");
		tracing |= !strcmp(colls[i]->name, "memtrace");
		vectors |= !strcmp(colls[i]->name, "bbv");
	}
	if ((a->interval || a->bbv_out) && !vectors && !(a->simpoint && tracing)) {
		cli_error("run: --interval and --bbv-out set the bbv collector (or --interval, memtrace's "
			  "--sample simpoint): add it (-c bbv)");
		return CLI_EXIT_USAGE;
	}
	if (a->simpoint && (!a->interval || vectors || !tracing)) {
		cli_error("run: --sample simpoint: needs -c memtrace, without bbv, and --interval N (the "
			  "intervals' size of the vectors the points come from)");
		return CLI_EXIT_USAGE;
	}
	if ((a->ncaches || a->trace || a->sample_on || a->simpoint || a->no_chain) && !tracing) {
		cli_error("run: --cache, --trace, --sample and --no-chain set the memtrace collector: add it (-c memtrace)");
		return CLI_EXIT_USAGE;
	}
	if ((a->warmup || a->warmup_lower) && !a->sample_on && !a->simpoint) {
		cli_error("run: --warmup and --warmup-lower warm the caches before each window of --sample: add it");
		return CLI_EXIT_USAGE;
	}
	if (a->sample_on && vectors) {
		cli_error("run: --sample and the bbv collector both count instructions down: choose one");
		return CLI_EXIT_USAGE;
	}
	if (a->ncaches && a->trace) {
		cli_error("run: --trace writes the accesses instead of simulating --cache: choose one");
		return CLI_EXIT_USAGE;
	}
	if (a->trace && !cli_output_writable("run", a->trace))
		return CLI_EXIT_FAIL;
	if (sampling && shimming) {
		cli_error("run: sample and shim both write the sampled time: choose one");
		return CLI_EXIT_USAGE;
	}
	if ((a->freq || a->event) && !sampling) {
		cli_error("run: --freq and --event set the sample collector: add it (-c sample or -c fcount,sample)");
		return CLI_EXIT_USAGE;
	}
	if (!cli_output_writable("run", output))
		return CLI_EXIT_FAIL;
	/* allocated once every check has passed */
	struct points pts = { 0 };
	if (a->simpoint) {
		int rc = read_points(a->simpoint, &pts);
		if (rc)
			return rc;
	}
	char *bbv_out = NULL;
	const char *bbv_name = a->bbv_out ? a->bbv_out : output;
	if (vectors && bbv_name) {   /* without -o: reticle.PID.bb, beside reticle.PID.db (the session's) */
		/* the profile's name with .bb for .db (or after it) */
		const char *name = bbv_name;
		size_t n = strlen(name);
		bbv_out = malloc(n + 4);
		if (!bbv_out) {
			points_free(&pts);
			return CLI_EXIT_FAIL;
		}
		strcpy(bbv_out, name);
		if (!a->bbv_out)
			strcpy(bbv_out + (n > 3 && !strcmp(name + n - 3, ".db") ? n - 3 : n), ".bb");
		if (!cli_output_writable("run", bbv_out)) {
			free(bbv_out);
			points_free(&pts);
			return CLI_EXIT_FAIL;
		}
	}

	char *warm = a->cold ? NULL : cli_warm_cache_dir();
	struct rtl_session_opts opts = { .sz = sizeof(opts), .output = output,
					 .collectors = colls, .ncollectors = ncolls, .warm_cache = warm,
					 .warm_cache_max = cli_cache_max_bytes(), .meta = meta,
					 .sample_event = a->event, .sample_freq = a->freq, .shim_period = copts.shim_period,
					 .caches = a->caches, .ncaches = a->ncaches,
					 .bbv_interval = a->interval, .bbv_path = bbv_out, .memtrace_trace = a->trace,
					 .memtrace_on = a->sample_on, .memtrace_off = a->sample_off,
					 .memtrace_points = pts.at, .memtrace_weights = pts.weight, .memtrace_npoints = pts.n,
					 .memtrace_interval = a->simpoint ? a->interval : 0,
					 .modules = a->nmodules ? a->modules : NULL,
					 .functions = a->nfunctions ? a->functions : NULL, .from = a->from, .to = a->to,
					 .memtrace_no_chain = a->no_chain, .aslr = a->aslr,
					 .memtrace_clusters = pts.cluster, .memtrace_warmup = a->warmup,
					 .memtrace_warmup_lower = a->warmup_lower,
					 .time_all_calls = copts.time_all_calls };
	rtl_session *s;
	int err = rtl_session_create(&opts, &s), status = 0;
	free(warm);
	free(bbv_out);   /* the session has its copies */
	points_free(&pts);
	if (err == -RTL_ERR_BAD_OPTION)   /* the library said why (a span's edge) */
		return CLI_EXIT_USAGE;
	if (err) {
		cli_error("run: %s", rtl_strerror(err));
		return CLI_EXIT_FAIL;
	}
	if (a->debug_on_fault && cli_debug_on_fault(s)) {
		rtl_session_destroy(s);
		return CLI_EXIT_USAGE;
	}
	if ((err = rtl_session_launch(s, program))) {
		if (err == -RTL_ERR_BAD_OPTION || err == -RTL_ERR_NO_SAMPLING) {
			/* the library said why (an unknown event, a shim period too
			 * short; no sampling here) */
			rtl_session_destroy(s);
			return err == -RTL_ERR_BAD_OPTION ? CLI_EXIT_USAGE : CLI_EXIT_FAIL;
		}
		rtl_session_destroy(s);
		return cli_launch_error(program[0], err);
	}
	/* Like a shell waiting for a job: terminal signals are the target's to
	 * handle; termination requests sent to reticle alone are passed on. */
	cli_forward_signals(rtl_session_pid(s));
	err = rtl_session_run(s, &status);
	if (err)
		cli_error("run: %s", rtl_strerror(err));
	struct rtl_session_stats st;
	rtl_session_stats(s, &st);
	for (size_t i = 0; i < rtl_session_profile_count(s); i++) {
		fprintf(stderr, "reticle: profile written to %s", rtl_session_profile_path(s, i));
		if (st.processes > 1)
			fprintf(stderr, " (%zu processes: reticle report --tree)", st.processes);
		fputc('\n', stderr);
	}
	/* the program's own status passes through, unless it succeeded and
	 * reticle did not */
	if (st.profiles_failed && !err && status == 0)
		err = -RTL_ERR_STORE;
	if (rtl_session_points_unreached(s) && !err && status == 0)
		status = CLI_EXIT_FAIL;   /* the estimate asked for is not there (said above) */
	if (a->stats) {
		fprintf(stderr, "reticle: %zu modules, %zu functions instrumented (%zu from the warm-start "
			"list), %zu skipped, %zu traps, %zu saved copies placed, %.3f s instrumenting\n",
			st.modules, st.functions_instrumented, st.functions_warm, st.functions_skipped,
			st.traps, st.copies_restored, st.instrument_seconds);
		if (st.copies_differing)
			fprintf(stderr, "reticle: %zu saved copies differed from fresh ones\n",
				st.copies_differing);
	}
	rtl_session_destroy(s);
	return err ? CLI_EXIT_FAIL : status;
}
