/* reticle: a thin driver over libreticle. Each subcommand is a file cmd_*.c. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>
#include <reticle/error.h>
#include "cli.h"
#include "util/array.h"

struct command {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *summary;
};

static const struct command commands[] = {
#define X(name, fn, summary) { #name, fn, summary },
#include "commands.def"
#undef X
};

void cli_error(const char *fmt, ...)
{
	va_list ap;

	fputs("reticle: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* Separate debug files are searched in $RETICLE_DEBUG_DIR, then in
 * /usr/lib/debug (src/elf/debugfile.c): DIR goes first. */
int cli_add_debug_dir(const char *dir)
{
	const char *old = getenv("RETICLE_DEBUG_DIR");
	char *v = NULL;
	if (!*dir || strchr(dir, ':')) {
		cli_error("--debug-dir: '%s' is not a directory name reticle can use", dir);
		return -1;
	}
	if (asprintf(&v, "%s%s%s", dir, old && *old ? ":" : "", old && *old ? old : "") < 0)
		return -1;
	int err = setenv("RETICLE_DEBUG_DIR", v, 1);
	free(v);
	return err;
}

static struct timespec started;

static void print_log(int level, const char *msg, void *user)
{
	static const char *const tags[] = { "error", "warning", "info", "debug" };
	int verbosity = *(int *)user;

	if (level > verbosity)
		return;
	if (level < 3) {   /* error, warning, info */
		fprintf(stderr, "reticle: %s: %s\n", tags[level], msg);
		return;
	}
	/* debug lines carry the time since reticle started: where start-up goes */
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	double ms = (now.tv_sec - started.tv_sec) * 1e3 + (now.tv_nsec - started.tv_nsec) / 1e6;
	fprintf(stderr, "reticle: debug: %9.3f ms: %s\n", ms, msg);
}

static void usage(FILE *f)
{
	fputs("usage: reticle COMMAND [OPTIONS] [ARGS...]\n\ncommands:\n", f);
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].summary);
	fputs("\n'reticle COMMAND --help' describes each command.\n"
	      "Environment: RETICLE_VERBOSE=0..3 sets how much reticle logs (default 1: warnings);\n"
	      "RETICLE_CACHE_DIR moves the warm-start cache and RETICLE_CACHE_MAX_MB bounds it\n"
	      "('reticle run --help'); RETICLE_PIN=0 stops 'reticle run' from sharing one CPU\n"
	      "with a program that is starting up; DEBUGINFOD_URLS lets reticle fetch the\n"
	      "debug files of stripped binaries (names) from debuginfod servers.\n", f);
}

int main(int argc, char **argv)
{
	static int verbosity = 1;
	const char *v = getenv("RETICLE_VERBOSE");

	clock_gettime(CLOCK_MONOTONIC, &started);
	if (v)
		verbosity = atoi(v);
	/* reticle allocates and frees per relocated function, some arrays of
	 * a megabyte: keep freed memory instead of unmapping and faulting it
	 * in again for the next function */
	mallopt(M_MMAP_THRESHOLD, 64 << 20);
	mallopt(M_TRIM_THRESHOLD, 256 << 20);
	/* and the heap's first 60 MiB in huge pages, which the kernel gives
	 * on request: the records of a warm start (python3.11: 10,000
	 * functions' states, 100,000 blocks) are megabytes written at once,
	 * a fault per 4 KiB page otherwise (a third of the time reticle
	 * spends before the program runs) */
	void *heap = malloc(60 << 20);
	rtl_advise_huge(heap, 60 << 20);
	free(heap);
	rtl_set_log(print_log, &verbosity);
	rtl_set_log_level(verbosity);
	if (argc < 2) {
		usage(stderr);
		return CLI_EXIT_USAGE;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "--version")) {
		puts("reticle 0.1.0");
		return 0;
	}
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(argv[1], commands[i].name))
			return commands[i].fn(argc - 1, argv + 1);
	cli_error("unknown command '%s' (try 'reticle --help')", argv[1]);
	return CLI_EXIT_USAGE;
}

/* Whether the profile can be written where asked (PATH, or reticle.PID.db
 * in the current directory): found out before the program runs, not
 * after. Prints why not, as command CMD. */
bool cli_output_writable(const char *cmd, const char *path)
{
	char *copy = strdup(path ? path : "reticle.db");
	if (!copy)
		return false;
	char *slash = strrchr(copy, '/');
	const char *dir = slash ? (slash == copy ? "/" : (*slash = 0, copy)) : ".";
	struct stat st;
	bool ok = false;
	if (path && !stat(path, &st) && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) {
		/* /dev/null, a FIFO: the finished profile is copied into it */
		ok = !access(path, W_OK);
		if (!ok)
			cli_error("%s: cannot write the profile %s: %s", cmd, path, strerror(errno));
		free(copy);
		return ok;
	}
	if (stat(dir, &st))
		cli_error("%s: cannot write the profile %s%s: %s", cmd, path ? path : "in ", path ? "" : dir,
			  strerror(errno));
	else if (!S_ISDIR(st.st_mode))
		cli_error("%s: cannot write the profile %s: %s is not a directory", cmd, path, dir);
	else if (access(dir, W_OK | X_OK))
		cli_error("%s: cannot write the profile %s%s: %s", cmd, path ? path : "in ", path ? "" : dir,
			  strerror(errno));
	else if (path && !stat(path, &st) && S_ISDIR(st.st_mode))
		cli_error("%s: cannot write the profile %s: it is a directory", cmd, path);
	else if (path && !stat(path, &st) && access(path, W_OK))
		cli_error("%s: cannot write the profile %s: %s", cmd, path, strerror(errno));
	else
		ok = true;
	free(copy);
	return ok;
}

int cli_parse_freq(const char *cmd, const char *arg, unsigned *freq)
{
	char *end;
	unsigned long v = strtoul(arg, &end, 10);
	if (!*arg || *end || !v || v > 1000000) {
		cli_error("%s: --freq takes samples per second, a whole number from 1 (the kernel's limit: "
			  "/proc/sys/kernel/perf_event_max_sample_rate)", cmd);
		return -1;
	}
	*freq = (unsigned)v;
	return 0;
}
