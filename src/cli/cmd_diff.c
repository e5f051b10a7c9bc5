/* reticle diff: two profiles compared function by function
 * (rtl_report_diff). */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <reticle/error.h>
#include <reticle/profile.h>
#include <reticle/report.h>
#include "cli.h"

static const char usage_text[] =
	"usage: reticle diff [--top N] [--no-demangle] PROFILE_A PROFILE_B\n"
	"\n"
	"Compares two profiles function by function: functions are the same when\n"
	"their module's file name and their name are (so a rebuilt program still\n"
	"matches; unnamed code, sub_<hex>, only within one build). For each: its\n"
	"Ir in A and in B (calls, when the two do not both have instruction counts),\n"
	"B - A, B/A, and instructions per call in each; rows by the size of the\n"
	"difference, functions counted in one profile only included. Each profile's\n"
	"processes are added up, as 'reticle report' does.\n"
	"\n"
	"  -n, --top N      at most N rows (default 20; 0: all)\n"
	"      --no-demangle  keep C++ and Rust names as the symbols spell them\n"
	"  -h, --help       show this help\n";

static int open_profile(const char *path, rtl_profile **p)
{
	int err = rtl_profile_open(path, p);
	if (err)
		cli_error("diff: cannot read profile '%s': %s", path, rtl_strerror(err));
	return err;
}

int cmd_diff(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "top", required_argument, NULL, 'n' },
		{ "no-demangle", no_argument, NULL, 'D' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	rtl_report_options o = { .top = 20 };
	int c;
	char *end;

	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, "+n:h", opts, NULL)) != -1) {
		if (c == 'h') {
			fputs(usage_text, stdout);
			return 0;
		} else if (c == 'n') {
			errno = 0;
			o.top = strtoul(optarg, &end, 10);
			if (errno || !*optarg || *end || *optarg == '-') {
				cli_error("diff: --top takes a number, not '%s'", optarg);
				return CLI_EXIT_USAGE;
			}
		} else if (c == 'D') {
			o.no_demangle = 1;
		} else {
			cli_error("diff: unknown option or missing argument '%s' (try 'reticle diff --help')",
				  argv[optind - 1]);
			return CLI_EXIT_USAGE;
		}
	}
	if (optind != argc - 2) {
		cli_error("diff: expected PROFILE_A PROFILE_B (try 'reticle diff --help')");
		return CLI_EXIT_USAGE;
	}
	rtl_profile *a, *b;
	if (open_profile(argv[optind], &a))
		return CLI_EXIT_FAIL;
	if (open_profile(argv[optind + 1], &b)) {
		rtl_profile_close(a);
		return CLI_EXIT_FAIL;
	}
	int err = rtl_report_diff(a, b, &o, stdout);
	if (err == -ENODATA)
		cli_error("diff: '%s' and '%s' have no count in common (Ir or calls: run both with the "
			  "same collectors)", argv[optind], argv[optind + 1]);
	else if (err)
		cli_error("diff: %s", rtl_strerror(err));
	rtl_profile_close(a);
	rtl_profile_close(b);
	return err ? CLI_EXIT_FAIL : 0;
}
