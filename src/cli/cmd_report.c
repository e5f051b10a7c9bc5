/* reticle report: parses options, opens the profile and hands it to the
 * library's exporter (include/reticle/report.h). */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <reticle/error.h>
#include <reticle/profile.h>
#include <reticle/report.h>
#include "cli.h"

static void report_usage(FILE *f)
{
	fputs("usage: reticle report [--format text|json|callgrind] [--top N] [--all]\n"
	      "                      [-o OUT] PROFILE\n"
	      "\n"
	      "Reads PROFILE (written by 'reticle run') and prints its functions by count:\n"
	      "module, address, name, calls and instructions executed (Ir).\n"
	      "\n"
	      "  -f, --format F  text (default): the run's facts and a table;\n"
	      "                  json: one document with every row and the call sites;\n"
	      "                  callgrind: for callgrind_annotate and KCachegrind (self Ir\n"
	      "                  and call counts are exact, the inclusive cost of calls is\n"
	      "                  a gprof-style estimate)\n"
	      "  -n, --top N     at most N functions (text: 20 by default; json: all;\n"
	      "                  0: no limit; callgrind always writes every function)\n"
	      "      --all       also functions that never ran or were not instrumented\n"
	      "                  (and no row limit unless --top is given)\n"
	      "  -o, --output OUT  write to OUT instead of standard output\n"
	      "  -h, --help      show this help\n", f);
}

/* N from "--top N": a non-negative decimal integer. */
static int parse_top(const char *s, unsigned long *top)
{
	char *end;

	errno = 0;
	if (!*s || *s == '-' || *s == '+' || *s == ' ')
		return -1;
	*top = strtoul(s, &end, 10);
	return errno || *end ? -1 : 0;
}

struct report_args {
	int format, all, top_given;
	rtl_report_options opt;
	const char *out, *profile;
};

static int parse_args(int argc, char **argv, struct report_args *a)
{
	static const struct option longopts[] = {
		{ "format", required_argument, NULL, 'f' },
		{ "top", required_argument, NULL, 'n' },
		{ "all", no_argument, NULL, 'a' },
		{ "output", required_argument, NULL, 'o' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	int c;

	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":f:n:o:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'f':
			if ((a->format = rtl_report_format_parse(optarg)) < 0) {
				cli_error("report: unknown format '%s' (expected text, json or callgrind)",
					  optarg);
				return CLI_EXIT_USAGE;
			}
			break;
		case 'n':
			if (parse_top(optarg, &a->opt.top) < 0) {
				cli_error("report: --top expects a non-negative integer, not '%s'", optarg);
				return CLI_EXIT_USAGE;
			}
			a->top_given = 1;
			break;
		case 'a': a->opt.all = 1; break;
		case 'o': a->out = optarg; break;
		case 'h': report_usage(stdout); return -1;
		case ':':
			cli_error("report: option '%s' needs a value", argv[optind - 1]);
			return CLI_EXIT_USAGE;
		default:
			cli_error("report: unknown option '%s' (try 'reticle report --help')",
				  argv[optind - 1]);
			return CLI_EXIT_USAGE;
		}
	}
	if (optind != argc - 1) {
		cli_error(optind == argc ? "report: no PROFILE given (try 'reticle report --help')"
			  : "report: more than one PROFILE given");
		return CLI_EXIT_USAGE;
	}
	a->profile = argv[optind];
	if (!a->top_given && a->format == RTL_REPORT_TEXT && !a->opt.all)
		a->opt.top = 20;
	return 0;
}

static int write_report(rtl_profile *p, const struct report_args *a)
{
	FILE *out = stdout;
	int err;

	if (a->out && !(out = fopen(a->out, "w"))) {
		cli_error("report: cannot write '%s': %s", a->out, strerror(errno));
		return CLI_EXIT_FAIL;
	}
	err = rtl_report_write(p, a->format, &a->opt, out);
	if (out != stdout && fclose(out) && !err)
		err = -EIO;
	if (err) {
		cli_error("report: cannot write the report%s%s: %s", a->out ? " to " : "",
			  a->out ? a->out : "", rtl_strerror(err));
		if (a->out)
			unlink(a->out);
		return CLI_EXIT_FAIL;
	}
	return 0;
}

int cmd_report(int argc, char **argv)
{
	struct report_args a = { .format = RTL_REPORT_TEXT };
	rtl_profile *p;
	int rc, err;

	if ((rc = parse_args(argc, argv, &a)))
		return rc < 0 ? 0 : rc;
	if ((err = rtl_profile_open(a.profile, &p))) {
		cli_error("report: cannot read profile '%s': %s", a.profile, rtl_strerror(err));
		return CLI_EXIT_FAIL;
	}
	rc = write_report(p, &a);
	rtl_profile_close(p);
	return rc;
}
