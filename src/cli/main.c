/* reticle: a thin driver over libreticle. Each subcommand is a file cmd_*.c. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
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
	/* and the heap's first 60 MiB in huge pages when the kernel gives
	 * them cheaply: the records of a warm start (python3.11: 10,000
	 * functions' states, 100,000 blocks) are megabytes written at once, a
	 * fault per 4 KiB page otherwise. Not after an idle spell on a VM
	 * that handed its free memory back to its host: a warm gcc -c took
	 * 0.145 s then with huge pages, 0.108 s without, and back to back
	 * 0.093 s with them, 0.112 s without; with the probe 0.115 and
	 * 0.090 s (BENCHMARKS.md). */
	void *heap = malloc(60 << 20);
	if (heap && rtl_huge_pages_cheap(heap, 60 << 20))
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

/* The kernel's own file system DIR is on (proc, sysfs...), where no file
 * can be created, or NULL. */
static const char *kernel_fs(const char *dir)
{
	static const struct { unsigned long magic; const char *name; } fss[] = {
		{ PROC_SUPER_MAGIC, "proc" }, { SYSFS_MAGIC, "sysfs" }, { CGROUP_SUPER_MAGIC, "cgroup" },
		{ CGROUP2_SUPER_MAGIC, "cgroup2" }, { DEBUGFS_MAGIC, "debugfs" }, { TRACEFS_MAGIC, "tracefs" },
		{ SECURITYFS_MAGIC, "securityfs" }, { BPF_FS_MAGIC, "bpf" }, { DEVPTS_SUPER_MAGIC, "devpts" },
		{ PSTOREFS_MAGIC, "pstore" }, { EFIVARFS_MAGIC, "efivarfs" },
	};
	struct statfs fs;
	if (statfs(dir, &fs))
		return NULL;
	for (size_t i = 0; i < sizeof(fss) / sizeof(*fss); i++)
		if ((unsigned long)fs.f_type == fss[i].magic)
			return fss[i].name;
	return NULL;
}

const char *cli_create_error(const char *path, int err)
{
	static char why[PATH_MAX + 128];
	char *copy = strdup(path);
	char *slash = copy ? strrchr(copy, '/') : NULL;
	const char *dir = slash ? (slash == copy ? "/" : (*slash = 0, copy)) : ".";
	const char *fs = copy ? kernel_fs(dir) : NULL;
	if (fs)
		snprintf(why, sizeof(why), "%s is on the kernel's %s file system, where no file can be created "
			 "(%s)", dir, fs, strerror(err));
	else
		snprintf(why, sizeof(why), "%s", strerror(err));
	free(copy);
	return why;
}

/* Whether the profile can be written where asked (PATH, or reticle.PID.db
 * in the current directory): found out before the program runs, not
 * after, by doing what the end does (src/store/profile.c), which access()
 * does not tell for root: a new or regular file is written under a
 * temporary name beside it, then renamed over it; the temporary file is
 * made here, a byte written to it, and removed. An existing regular file
 * must open for writing. A character or block device (/dev/null) gets the
 * finished file's bytes: it must open for writing and take a write (of
 * nothing: /dev/full refuses even that); a FIFO is not opened (its reader
 * would see the end of it). Prints why not, as command CMD. */
bool cli_output_writable(const char *cmd, const char *path)
{
	char *copy = strdup(path ? path : "reticle.db");
	if (!copy)
		return false;
	char *slash = strrchr(copy, '/');
	const char *dir = slash ? (slash == copy ? "/" : (*slash = 0, copy)) : ".";
	const char *name = path ? path : "in ", *where = path ? "" : dir;
	struct stat st;
	char *tmp = NULL;
	int fd = -1, err = 0;
	bool exists = path && !stat(path, &st), ok = false;
	if (exists && S_ISDIR(st.st_mode)) {
		cli_error("%s: cannot write the profile %s: it is a directory", cmd, path);
	} else if (exists && !S_ISREG(st.st_mode)) {   /* written into at the end */
		const char *why = NULL;
		if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) {
			fd = open(path, O_WRONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
			err = fd < 0 || write(fd, "", 0) < 0 ? errno : 0;
		} else if (S_ISSOCK(st.st_mode)) {
			err = ENXIO;
			why = "it is a socket";
		} else {   /* a FIFO, a pipe (>(...)): not opened, its reader would see the end */
			err = access(path, W_OK) ? errno : 0;
		}
		if (err)
			cli_error("%s: cannot write the profile %s: %s", cmd, path, why ? why : strerror(err));
		ok = !err;
	} else if (stat(dir, &st)) {
		cli_error("%s: cannot write the profile %s%s: %s", cmd, name, where, strerror(errno));
	} else if (!S_ISDIR(st.st_mode)) {
		cli_error("%s: cannot write the profile %s: %s is not a directory", cmd, path, dir);
	} else if (asprintf(&tmp, "%s/%s.tmp.XXXXXX", dir, slash ? slash + 1 : copy) < 0) {
		tmp = NULL;
		cli_error("%s: %s", cmd, strerror(ENOMEM));
	} else if ((fd = mkstemp(tmp)) < 0) {
		err = errno;
		cli_error("%s: cannot write the profile %s%s: %s", cmd, name, where,
			  cli_create_error(tmp, err));
	} else if (write(fd, "", 1) != 1) {   /* a full file system, a quota */
		cli_error("%s: cannot write the profile %s%s: %s", cmd, name, where, strerror(errno));
	} else if (exists) {   /* replaced by the rename: it must be writable too */
		int old = open(path, O_WRONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
		/* (a program running from it: the rename replaces it all the same) */
		ok = old >= 0 || errno == ETXTBSY;
		if (!ok)
			cli_error("%s: cannot write the profile %s: %s", cmd, path, strerror(errno));
		if (old >= 0)
			close(old);
	} else {
		ok = true;
	}
	if (tmp && fd >= 0)   /* the temporary file: nothing is left */
		unlink(tmp);
	if (fd >= 0)
		close(fd);
	free(tmp);
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
