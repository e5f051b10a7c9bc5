/* reticle report: parses options, opens the profile and hands it to the
 * library's exporter (include/reticle/report.h). */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <reticle/error.h>
#include <reticle/profile.h>
#include <reticle/report.h>
#include "cli.h"

static void report_usage(FILE *f)
{
	fputs("usage: reticle report [--format FORMAT] [--top N] [--all]\n"
	      "                      [--no-demangle] [--inline] [--samples] [--process ID | --tree]\n"
	      "                      [--module M]\n"
	      "                      [-o OUT] PROFILE\n"
	      "\n"
	      "Reads PROFILE (written by 'reticle run') and prints its functions by count:\n"
	      "module, address, name, calls and instructions executed (Ir).\n"
	      "\n"
	      "  -f, --format F  text (default): the run's facts and a table;\n"
	      "                  json: one document with every row, the call sites,\n"
	      "                  branches, times and plug-ins' metrics;\n"
	      "                  callgrind: for callgrind_annotate and KCachegrind (self Ir,\n"
	      "                  call counts and jumps are exact, the inclusive cost of\n"
	      "                  calls is a gprof-style estimate)\n"
	      "                  lcov: a tracefile for genhtml: per source file, the\n"
	      "                  lines with code and their executions (needs bbcount\n"
	      "                  or cover, and DWARF), functions and their calls,\n"
	      "                  branches (edges); files not on disk are left out\n"
	      "                  fdata: BOLT's profile of one module (llvm-bolt -data=F):\n"
	      "                  branch, jump and fall-through counts (edges, bbcount),\n"
	      "                  calls between its functions (callgraph)\n"
	      "                  folded: flame-graph stacks from the calling-context\n"
	      "                  tree (calltime): each call path and its exclusive ns;\n"
	      "                  from sampled stacks (sample): its samples\n"
	      "                  chrome: trace event JSON (Perfetto, chrome://tracing):\n"
	      "                  per thread, each call path as an event as long as its\n"
	      "                  inclusive time, nested under its caller (the tree, not\n"
	      "                  a timeline)\n"
	      "                  pprof: profile.proto for go tool pprof (calls and\n"
	      "                  exclusive ns per call path; binary: needs -o)\n"
	      "                  svg: a flame graph of the calling-context tree, to\n"
	      "                  open in a browser (zooms on a click)\n"
	      "                  cachegrind: for cg_annotate, from memtrace: data reads,\n"
	      "                  writes and L1D misses per source line (Dr D1mr Dw D1mw)\n"
	      "      --module M  fdata: the module (path or file name; default: the\n"
	      "                  program, the run's first module)\n"
	      "  -n, --top N     at most N functions (text: 20 by default; json: all;\n"
	      "                  0: no limit; callgrind always writes every function)\n"
	      "      --all       also functions that never ran or were not instrumented\n"
	      "                  (and no row limit unless --top is given)\n"
	      "  -p, --process ID  only process image ID (see --tree); by default the\n"
	      "                  counts of every process of the run are added up, per\n"
	      "                  module path and address\n"
	      "      --tree      print the run's process tree: every image (a process\n"
	      "                  between exec calls) under the one that forked or\n"
	      "                  exec'd it, with pid, exit status, time and counts\n"
	      "      --no-demangle  keep C++ and Rust names as the symbols spell them\n"
	      "                  (text and callgrind show them as c++filt does; json\n"
	      "                  always has the symbol's name)\n"
	      "      --inline    text: also the Ir of inlined code by the inlined\n"
	      "                  function (DWARF's inlined calls, the innermost; needs\n"
	      "                  bbcount or cover)\n"
	      "      --samples   folded, chrome, pprof, svg: draw the stacks of the sample\n"
	      "                  collector, not calltime's tree (the default when the\n"
	      "                  profile has no calltime tree)\n"
	      "      --debug-dir DIR  look for separate debug files (source lines) in DIR\n"
	      "                  first, then in $RETICLE_DEBUG_DIR and /usr/lib/debug\n"
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
	int format, all, top_given, tree;
	long long process;
	rtl_report_options opt;
	const char *out, *profile;
};

static int parse_args(int argc, char **argv, struct report_args *a)
{
	static const struct option longopts[] = {
		{ "format", required_argument, NULL, 'f' },
		{ "top", required_argument, NULL, 'n' },
		{ "all", no_argument, NULL, 'a' },
		{ "no-demangle", no_argument, NULL, 'D' },
		{ "inline", no_argument, NULL, 'I' },
		{ "samples", no_argument, NULL, 'S' },
		{ "output", required_argument, NULL, 'o' },
		{ "process", required_argument, NULL, 'p' },
		{ "tree", no_argument, NULL, 't' },
		{ "debug-dir", required_argument, NULL, 'g' },
		{ "module", required_argument, NULL, 'm' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	int c;

	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":f:n:o:p:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'f':
			if ((a->format = rtl_report_format_parse(optarg)) < 0) {
				cli_error("report: unknown format '%s' (expected text, json, callgrind, lcov, fdata, "
					  "folded, chrome, pprof, svg or cachegrind)",
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
		case 'S': a->opt.samples = 1; break;
		case 'p': {
			char *end;
			errno = 0;
			a->process = strtoll(optarg, &end, 10);
			if (errno || *end || !*optarg || a->process < 1) {
				cli_error("report: --process expects an image id from --tree, not '%s'", optarg);
				return CLI_EXIT_USAGE;
			}
			break;
		}
		case 't': a->tree = 1; break;
		case 'g':
			if (cli_add_debug_dir(optarg))
				return CLI_EXIT_USAGE;
			break;
		case 'D': a->opt.no_demangle = 1; break;
		case 'I': a->opt.inlined = 1; break;
		case 'm': a->opt.module = optarg; break;
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
	if (a->tree && a->process) {
		cli_error("report: --tree lists every process; it takes no --process");
		return CLI_EXIT_USAGE;
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

/* Where the report goes: standard output; OUT itself when it exists and is
 * not a regular file (a device, a pipe); else a temporary file beside OUT,
 * renamed over it once complete, so a failed report never leaves a partial
 * file nor removes anything but its own temporary. */
struct output {
	FILE *f;
	char *tmp;
};

static int open_output(const char *path, struct output *o)
{
	struct stat st;
	int fd;

	o->f = stdout;
	o->tmp = NULL;
	if (!path)
		return 0;
	if (stat(path, &st) == 0 && !S_ISREG(st.st_mode))
		return (o->f = fopen(path, "w")) ? 0 : -errno;
	if (asprintf(&o->tmp, "%s.tmp.XXXXXX", path) < 0)
		return -ENOMEM;
	if ((fd = mkstemp(o->tmp)) < 0 || !(o->f = fdopen(fd, "w"))) {
		int err = -errno;

		if (fd >= 0)
			close(fd), unlink(o->tmp);
		free(o->tmp);
		o->tmp = NULL;
		return err;
	}
	if (stat(path, &st) == 0) {
		fchmod(fd, st.st_mode & 07777);         /* keep OUT's mode */
	} else {
		mode_t mask = umask(0);                 /* the CLI has one thread */

		umask(mask);
		fchmod(fd, 0666 & ~mask);
	}
	return 0;
}

/* Closes O; on success moves the temporary file to PATH. */
static int close_output(struct output *o, const char *path, int err)
{
	if (o->f != stdout && fclose(o->f) && !err)
		err = -errno;
	if (o->tmp) {
		if (!err && rename(o->tmp, path) < 0)
			err = -errno;
		if (err)
			unlink(o->tmp);
		free(o->tmp);
	}
	return err;
}

static int write_report(rtl_profile *p, const struct report_args *a)
{
	struct output o;
	int err;

	if (a->format == RTL_REPORT_PPROF && !a->tree && !a->out && isatty(STDOUT_FILENO)) {
		cli_error("report: pprof's format is binary: write it to a file with -o FILE");
		return CLI_EXIT_USAGE;
	}
	if ((err = open_output(a->out, &o))) {
		cli_error("report: cannot write '%s': %s", a->out, cli_create_error(a->out, -err));
		return CLI_EXIT_FAIL;
	}
	err = a->tree ? rtl_report_tree(p, o.f) : rtl_report_write(p, a->format, &a->opt, o.f);
	if (err == -EIO)
		err = -(errno ? errno : EIO);
	else if (err == -ENODATA && a->format == RTL_REPORT_LCOV && !a->tree) {
		cli_error("report: '%s' has no block counts for lcov (run with -c cover or -c bbcount)",
			  a->profile);
		close_output(&o, a->out, err);
		return CLI_EXIT_FAIL;
	} else if ((err == -ENODATA || err == -ENOENT || err == -ENOTSUP) && a->format == RTL_REPORT_FDATA &&
		   !a->tree) {
		if (err == -ENOTSUP)
			cli_error("report: %s in '%s' has no function symbols (stripped): fdata names functions as "
				  "BOLT reads them, by symbol; profile a build that keeps its symbols",
				  a->opt.module ? a->opt.module : "the program", a->profile);
		else if (err == -ENOENT && a->opt.module)
			cli_error("report: '%s' has no module '%s' (reticle report --format json lists them)",
				  a->profile, a->opt.module);
		else
			cli_error("report: '%s' has no branch, block or call counts of %s for fdata "
				  "(run with -c edges,bbcount,callgraph)", a->profile,
				  a->opt.module ? a->opt.module : "the program");
		close_output(&o, a->out, err);
		return CLI_EXIT_FAIL;
	} else if (err == -ENODATA && (a->format == RTL_REPORT_FOLDED || a->format == RTL_REPORT_CHROME ||
					 a->format == RTL_REPORT_PPROF || a->format == RTL_REPORT_SVG) && !a->tree) {
		cli_error("report: '%s' has no calling contexts%s (run with -c calltime or -c sample)", a->profile,
			  a->opt.samples ? " from samples" : "");
		close_output(&o, a->out, err);
		return CLI_EXIT_FAIL;
	} else if (err == -ENODATA && a->format == RTL_REPORT_CACHEGRIND) {
		cli_error("report: '%s' has no data accesses (run with -c memtrace)", a->profile);
		close_output(&o, a->out, err);
		return CLI_EXIT_FAIL;
	} else if (err) {
		cli_error("report: cannot read profile '%s': %s", a->profile, rtl_strerror(err));
		close_output(&o, a->out, err);
		return CLI_EXIT_FAIL;
	}
	if ((err = close_output(&o, a->out, err))) {
		cli_error("report: cannot write the report%s%s: %s", a->out ? " to " : "",
			  a->out ? a->out : "", rtl_strerror(err));
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
	if (a.process && (err = rtl_profile_select_process(p, a.process))) {
		cli_error("report: '%s' has no process image %lld%s", a.profile, a.process,
			  err == -ENOENT ? " (reticle report --tree lists them)" : "");
		rtl_profile_close(p);
		return CLI_EXIT_FAIL;
	}
	rc = write_report(p, &a);
	rtl_profile_close(p);
	return rc;
}
