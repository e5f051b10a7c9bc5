/* reticle attach: sample a process that is already running. */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <reticle/collector.h>
#include <reticle/error.h>
#include <reticle/session.h>
#include "cli.h"

static void usage(FILE *f)
{
	fputs("usage: reticle attach [-c sample] [--freq HZ] [--event E] [--duration SECONDS]\n"
	      "                      [-o PROFILE] PID\n"
	      "\n"
	      "Samples process PID while it runs: every thread it has and every thread\n"
	      "and process it creates meanwhile, with call stacks (the sample collector;\n"
	      "perf_event, no ptrace: the process is neither stopped nor changed). Ends\n"
	      "after --duration seconds, at Ctrl-C (or SIGTERM), or when the process\n"
	      "exits, and writes PROFILE (default reticle.PID.db): 'reticle report'\n"
	      "shows where the time went. Collectors that instrument code cannot attach\n"
	      "yet.\n"
	      "\n"
	      "  -c, --collect LIST   sample (the default, and the only one for now)\n"
	      "      --freq HZ        samples per second of each running thread (default 1000)\n"
	      "      --event E        cpu-clock (default), task-clock, ... as 'reticle run'\n"
	      "  -d, --duration S     stop after S seconds (default: until Ctrl-C or the end)\n"
	      "  -o, --output FILE    the profile\n"
	      "  -h, --help           this help\n", f);
}

static rtl_session *current;

static void on_stop(int sig)
{
	(void)sig;
	if (current)
		rtl_session_stop(current);
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
	unsigned freq = 0;
	double duration = 0;
	int opt;
	char *end;
	optind = 1;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, "+c:d:o:h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'c':
			if (strcmp(optarg, "sample")) {
				cli_error("attach: only the sample collector can attach for now (not '%s'): the "
					  "others instrument code when the program starts ('reticle run')", optarg);
				return CLI_EXIT_USAGE;
			}
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
	const struct rtl_collector *sample = rtl_collector_find("sample");
	struct rtl_session_opts opts = { .sz = sizeof(opts), .output = output, .collectors = &sample,
					 .ncollectors = 1, .sample_event = event, .sample_freq = freq };
	rtl_session *s;
	int err = rtl_session_create(&opts, &s), status = 0;
	if (err) {
		cli_error("attach: %s", rtl_strerror(err));
		return CLI_EXIT_FAIL;
	}
	if ((err = rtl_session_attach(s, (pid_t)pid, duration))) {
		if (err == -ESRCH)
			cli_error("attach: no process %ld", pid);
		else if (err == -EPERM)
			cli_error("attach: process %ld: not allowed (another user's process needs root)", pid);
		rtl_session_destroy(s);
		return err == -RTL_ERR_BAD_OPTION ? CLI_EXIT_USAGE : CLI_EXIT_FAIL;
	}
	current = s;
	struct sigaction sa = { .sa_handler = on_stop };
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	if (duration > 0)
		fprintf(stderr, "reticle: sampling process %ld for %g s (Ctrl-C stops sooner)\n", pid, duration);
	else
		fprintf(stderr, "reticle: sampling process %ld until it ends (Ctrl-C stops)\n", pid);
	err = rtl_session_run(s, &status);
	current = NULL;
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
