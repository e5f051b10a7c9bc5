/* reticle attach: measure a process that is already running, sampled (no
 * ptrace) or instrumented (traced, then left as it was). */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <reticle/collector.h>
#include <reticle/error.h>
#include <reticle/session.h>
#include "cli.h"

static void usage(FILE *f)
{
	fputs("usage: reticle attach [-c LIST] [--freq HZ] [--event E] [--duration SECONDS]\n"
	      "                      [-o PROFILE] PID\n"
	      "\n"
	      "Measures process PID while it runs, every thread it has and every thread\n"
	      "and process it creates meanwhile, until --duration seconds have passed,\n"
	      "Ctrl-C (or SIGTERM, SIGHUP, SIGQUIT, or 'reticle detach PID'), or the\n"
	      "process exits; then writes PROFILE (default reticle.PID.db) for\n"
	      "'reticle report'.\n"
	      "\n"
	      "-c sample (the default) samples call stacks with perf_event: no ptrace,\n"
	      "the process is neither stopped nor changed.\n"
	      "-c with fcount, bbcount, edges, callgraph, loops, cover or calltime\n"
	      "instruments it as 'reticle run' does: its threads are stopped a\n"
	      "moment, functions are relocated at their first call from then on, and\n"
	      "at the end every patch is taken back and the code cache unmapped: the\n"
	      "process runs on, unmodified. Counts and times cover the calls made\n"
	      "while attached (a call already running when reticle came is neither\n"
	      "counted nor timed). If reticle is killed with SIGKILL, the process is\n"
	      "left with its patches and dies at its next instrumented call.\n"
	      "\n"
	      "  -c, --collect LIST   sample, or the collectors above (comma-separated)\n"
	      "      --freq HZ        samples per second of each running thread (default 1000)\n"
	      "      --event E        cpu-clock (default), task-clock, ... as 'reticle run'\n"
	      "  -d, --duration S     stop after S seconds (default: until Ctrl-C or the end)\n"
	      "  -o, --output FILE    the profile\n"
	      "  -h, --help           this help\n", f);
}

/* -c LIST: 'sample' alone, or counting collectors. How many, or -1 after
 * a message. */
static int parse_list(const char *list, const struct rtl_collector **out)
{
	static const char *const counting[] = { "fcount", "bbcount", "edges", "callgraph", "loops", "cover",
						 "calltime" };
	char *copy = strdup(list), *save = NULL;
	int n = 0, bad = 0;
	for (char *name = strtok_r(copy, ",", &save); name && !bad; name = strtok_r(NULL, ",", &save)) {
		const struct rtl_collector *c = rtl_collector_find(name);
		bool ok = false;
		for (size_t i = 0; i < sizeof(counting) / sizeof(*counting); i++)
			ok |= !strcmp(name, counting[i]);
		if (!c) {
			cli_error("attach: unknown collector '%s' (see 'reticle run --help')", name);
			bad = 1;
		} else if (!ok && strcmp(name, "sample")) {
			cli_error("attach: the %s collector cannot attach yet (it starts with the program: "
				  "'reticle run'); attach takes sample, or fcount, bbcount, edges, callgraph, "
				  "loops, cover and calltime", name);
			bad = 1;
		} else if (n >= 8) {
			cli_error("attach: too many collectors");
			bad = 1;
		} else {
			out[n++] = c;
		}
	}
	free(copy);
	if (!bad && !n)
		cli_error("attach: -c takes at least one collector");
	for (int i = 0; !bad && n > 1 && i < n; i++)
		if (!strcmp(out[i]->name, "sample")) {
			cli_error("attach: sample attaches alone (no ptrace); count in another attach");
			bad = 1;
		}
	return bad || !n ? -1 : n;
}

int cmd_attach(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "collect", required_argument, NULL, 'c' },
		{ "freq", required_argument, NULL, 'F' },
		{ "event", required_argument, NULL, 'E' },
		{ "duration", required_argument, NULL, 'd' },
		{ "output", required_argument, NULL, 'o' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	const char *output = NULL, *event = NULL;
	const struct rtl_collector *colls[8];
	int ncolls = 0;
	unsigned freq = 0;
	double duration = 0;
	int opt;
	char *end;
	optind = 1;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, "+c:d:o:h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'c':
			if ((ncolls = parse_list(optarg, colls)) < 0)
				return CLI_EXIT_USAGE;
			break;
		case 'F':
			if (cli_parse_freq("attach", optarg, &freq))
				return CLI_EXIT_USAGE;
			break;
		case 'E': event = optarg; break;
		case 'd':
			duration = strtod(optarg, &end);
			if (!*optarg || *end || !(duration > 0)) {
				cli_error("attach: --duration takes seconds, a number above 0, not '%s'", optarg);
				return CLI_EXIT_USAGE;
			}
			break;
		case 'o': output = optarg; break;
		case 'h': usage(stdout); return 0;
		default:
			cli_error("attach: unknown option or missing argument '%s' (try 'reticle attach --help')",
				  argv[optind - 1]);
			return CLI_EXIT_USAGE;
		}
	}
	if (optind + 1 != argc) {
		cli_error("attach: give one process id (usage: reticle attach [OPTIONS] PID)");
		return CLI_EXIT_USAGE;
	}
	long pid = strtol(argv[optind], &end, 10);
	if (!*argv[optind] || *end || pid <= 0) {
		cli_error("attach: '%s' is not a process id", argv[optind]);
		return CLI_EXIT_USAGE;
	}
	if (!cli_output_writable("attach", output))
		return CLI_EXIT_FAIL;
	if (!ncolls)
		colls[ncolls++] = rtl_collector_find("sample");
	bool sampling = !strcmp(colls[0]->name, "sample");
	if (!sampling && (freq || event)) {
		cli_error("attach: --freq and --event are the sample collector's");
		return CLI_EXIT_USAGE;
	}
	/* what ran in earlier attaches (and runs) is relocated at the attach */
	char *warm = sampling ? NULL : cli_warm_cache_dir();
	struct rtl_session_opts opts = { .sz = sizeof(opts), .output = output, .collectors = colls,
					 .ncollectors = (size_t)ncolls, .sample_event = event, .sample_freq = freq,
					 .warm_cache = warm, .warm_cache_max = cli_cache_max_bytes() };
	rtl_session *s;
	int err = rtl_session_create(&opts, &s), status = 0;
	free(warm);
	if (err) {
		cli_error("attach: %s", rtl_strerror(err));
		return CLI_EXIT_FAIL;
	}
	/* before the process is touched: a Ctrl-C while attaching must not
	 * leave it with reticle's patches. Ctrl-\\ (QUIT) too ends the
	 * measurement cleanly: dying, reticle would leave them in place. A
	 * closed stderr (SIGPIPE) loses reticle's messages, not the run. */
	cli_stop_on_signals(s, CLI_STOP_INT);
	if ((err = rtl_session_attach(s, (pid_t)pid, duration))) {
		cli_stop_on_signals(NULL, CLI_STOP_INT);
		rtl_session_destroy(s);
		return cli_attach_error("attach", pid, err, sampling);
	}
	const char *what = sampling ? "sampling" : "instrumenting";
	if (duration > 0)
		fprintf(stderr, "reticle: %s process %ld for %g s (Ctrl-C stops sooner)\n", what, pid, duration);
	else
		fprintf(stderr, "reticle: %s process %ld until it ends (Ctrl-C stops)\n", what, pid);
	err = rtl_session_run(s, &status);
	cli_stop_on_signals(NULL, CLI_STOP_INT);
	int rc = 0;
	if (err) {
		cli_error("attach: %s", rtl_strerror(err));
		rc = CLI_EXIT_FAIL;
	} else if (rtl_session_profile_count(s))
		fprintf(stderr, "reticle: profile written to %s\n", rtl_session_profile_path(s, 0));
	else
		rc = CLI_EXIT_FAIL;
	rtl_session_destroy(s);
	return rc;
}
