/* reticle annotate: one function's counts per source line or instruction
 * (rtl_report_annotate). */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <reticle/error.h>
#include <reticle/profile.h>
#include <reticle/report.h>
#include "cli.h"

static const char usage_text[] =
	"usage: reticle annotate [--disasm] [--debug-dir DIR] PROFILE FUNCTION\n"
	"\n"
	"Prints FUNCTION (its symbol's name or its demangled name; every module's\n"
	"function of that name) from PROFILE: the source lines of its executed code\n"
	"with the instructions executed on each (Ir, from bbcount), read from DWARF\n"
	"and the source files, and its instructions with their counts where DWARF\n"
	"does not place them.\n"
	"\n"
	"  --disasm    the instructions with their counts, not the source\n"
	"  --debug-dir DIR  look for separate debug files in DIR first (then\n"
	"              $RETICLE_DEBUG_DIR, then /usr/lib/debug)\n"
	"  -h, --help  show this help\n";

int cmd_annotate(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "disasm", no_argument, NULL, 'd' },
		{ "debug-dir", required_argument, NULL, 'g' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	int disasm = 0, c, err;
	rtl_profile *p;

	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
		if (c == 'h') {
			fputs(usage_text, stdout);
			return 0;
		} else if (c == 'd') {
			disasm = 1;
		} else if (c == 'g') {
			if (cli_add_debug_dir(optarg))
				return CLI_EXIT_USAGE;
		} else {
			cli_error("annotate: unknown option '%s' (try 'reticle annotate --help')",
				  argv[optind - 1]);
			return CLI_EXIT_USAGE;
		}
	}
	if (optind != argc - 2) {
		cli_error("annotate: expected PROFILE FUNCTION (try 'reticle annotate --help')");
		return CLI_EXIT_USAGE;
	}
	if ((err = rtl_profile_open(argv[optind], &p))) {
		cli_error("annotate: cannot read profile '%s': %s", argv[optind], rtl_strerror(err));
		return CLI_EXIT_FAIL;
	}
	err = rtl_report_annotate(p, argv[optind + 1], disasm, stdout);
	rtl_profile_close(p);
	if (err == -ENOENT) {
		cli_error("annotate: no function named '%s' in '%s'", argv[optind + 1], argv[optind]);
		return CLI_EXIT_FAIL;
	}
	if (err) {
		cli_error("annotate: %s", rtl_strerror(err));
		return CLI_EXIT_FAIL;
	}
	return 0;
}
