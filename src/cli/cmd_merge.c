/* reticle merge: profiles (an MPI job's per-rank ones) into one
 * (rtl_profile_merge). */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <reticle/error.h>
#include <reticle/profile.h>
#include "cli.h"

static const char usage_text[] =
	"usage: reticle merge -o OUT PROFILE...\n"
	"\n"
	"Merges profiles into one, OUT: every process image of each becomes one of\n"
	"OUT's, marked with its rank: the MPI rank 'reticle run' recorded under an\n"
	"MPI launcher (mpirun -np 4 reticle run -o p.db -- ./app writes p.rank0.db,\n"
	"p.rank1.db, ...), else the profile's position here. 'reticle report OUT'\n"
	"adds them up and, with two ranks or more, shows the load imbalance per\n"
	"function; --process ID and --tree see each image. Profiles of different\n"
	"programs are merged with a warning.\n"
	"\n"
	"  -o, --output OUT  the merged profile (written whole, or not at all)\n"
	"  -h, --help        show this help\n";

/* The program of PATH's run: its command's first word (malloc'd). */
static char *program_of(const char *path)
{
	rtl_profile *p;
	char *prog = NULL;
	if (rtl_profile_open(path, &p))
		return NULL;
	const char *cmd = rtl_profile_get_meta(p, "command");
	if (cmd)
		prog = strndup(cmd, strcspn(cmd, " "));
	rtl_profile_close(p);
	return prog;
}

int cmd_merge(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *out = NULL;
	int c;

	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, "+o:h", opts, NULL)) != -1) {
		if (c == 'h') {
			fputs(usage_text, stdout);
			return 0;
		} else if (c == 'o') {
			out = optarg;
		} else {
			cli_error("merge: unknown option or missing argument '%s' (try 'reticle merge --help')",
				  argv[optind - 1]);
			return CLI_EXIT_USAGE;
		}
	}
	if (!out || optind >= argc) {
		cli_error("merge: expected -o OUT and at least one PROFILE (try 'reticle merge --help')");
		return CLI_EXIT_USAGE;
	}
	for (int i = optind; i < argc; i++)
		if (!strcmp(argv[i], out)) {
			cli_error("merge: '%s' is both an input and the output", out);
			return CLI_EXIT_USAGE;
		}
	if (!cli_output_writable("merge", out))
		return CLI_EXIT_FAIL;
	char *first = program_of(argv[optind]);
	for (int i = optind + 1; i < argc && first; i++) {
		char *prog = program_of(argv[i]);
		if (prog && strcmp(prog, first))
			fprintf(stderr, "reticle: warning: merge: '%s' ran %s, '%s' ran %s: the counts of "
				"different programs are added up\n", argv[optind], first, argv[i], prog);
		free(prog);
	}
	free(first);
	int err = rtl_profile_merge(out, (const char *const *)argv + optind, (size_t)(argc - optind), NULL, NULL);
	if (err) {
		cli_error("merge: %s", rtl_strerror(err));
		return CLI_EXIT_FAIL;
	}
	fprintf(stderr, "reticle: %d profiles merged into %s\n", argc - optind, out);
	return 0;
}
