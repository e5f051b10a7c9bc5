/* reticle probe: runs a probe program (docs/probe.md) on a program it
 * launches or on a running process, and prints its aggregations. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <reticle/binary.h>
#include <reticle/collector.h>
#include <reticle/error.h>
#include <reticle/session.h>
#include "cli.h"
#include "collectors/probe.h"
#include "os/linux/os.h"

static void usage(FILE *f)
{
	fputs("usage: reticle probe [OPTIONS] 'PROGRAM TEXT' -- COMMAND [ARGS...]\n"
	      "       reticle probe [OPTIONS] -f FILE -- COMMAND [ARGS...]\n"
	      "       reticle probe [OPTIONS] ('PROGRAM TEXT' | -f FILE) -p PID\n"
	      "\n"
	      "Runs a probe program: clauses of points, a predicate and aggregations,\n"
	      "compiled inline into the functions they name (no trap, no call per hit;\n"
	      "printf() lines are printed by reticle at each hit, a trap each).\n"
	      "With -- COMMAND it launches the command; with -p it attaches to a running\n"
	      "process until --duration ends, Ctrl-C (or SIGTERM, SIGHUP, SIGQUIT, or the\n"
	      "reader of the results gone), or the process exits, then leaves it as it\n"
	      "was. The aggregations are printed at the end.\n"
	      "A launched command gets the signals sent to reticle (TERM, HUP, INT, QUIT,\n"
	      "USR1, USR2), as with 'reticle run'; when it ends, the aggregations so far are\n"
	      "printed and reticle exits with its status (128+signal). A point that names\n"
	      "no function of the program and the libraries it starts with is refused\n"
	      "(write MODULE:F for a library loaded later). While it runs, 'reticle ctl\n"
	      "PID add|remove|list' changes the program (PID: the measured process).\n"
	      "\n"
	      "  entry:send_msg /onstack(foo)/ { @t = time(); }   time in send_msg\n"
	      "                                                    while foo is on the stack\n"
	      "  entry:malloc /arg0 > 4096/ { @big[func] = count(); }\n"
	      "  exit:fopen* /retval == 0/ { @failed = count(); }\n"
	      "  entry:step /(int)mode == 2/ { @calls = count(); }   a global variable\n"
	      "  entry:open* { printf(\"%s %s\\n\", func, str(arg0)); }\n"
	      "\n"
	      "The grammar is in docs/probe.md.\n"
	      "\n"
	      "  -f, --file FILE       the program, from FILE\n"
	      "  -p, --pid PID         attach to process PID instead of launching\n"
	      "  -d, --duration S      with -p: stop after S seconds\n"
	      "  -i, --interval S      also print the aggregations so far every S seconds\n"
	      "                        (after a line '--- T s'; the final ones after '--- end')\n"
	      "  -r, --results FILE    print the aggregations and printf() lines to FILE\n"
	      "                        (default: standard output)\n"
	      "  -o, --output FILE     also keep the profile (its metrics are the aggregations)\n"
	      "  -h, --help            this help\n", f);
}


enum { TICK_MS = 50 };

struct ticker {
	FILE *out;
	double interval;          /* 0: no printing */
	double start, next;       /* when it began, when it prints next (CLOCK_MONOTONIC s) */
	long pid;                 /* the control socket's, once it listens */
	int ctl;                  /* its fd, -1 before */
	char path[256];
};

/* Every TICK_MS, and as a request comes: the control socket (its
 * listening starts at the first tick, when the process is there), and the
 * aggregations every interval. */
static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* (by the clock: ticks that come late or merge under load do not shift it) */
static void tick(rtl_session *s, void *ctx)
{
	struct ticker *t = ctx;
	double now = now_s();
	if (t->ctl < 0 && t->pid >= 0) {
		long pid = t->pid ? t->pid : (long)rtl_session_pid(s);
		if (pid > 0) {
			t->pid = pid;
			t->ctl = ctl_listen(pid, t->path, sizeof(t->path));
			/* a request is served as it comes, not at the next tick */
			if (t->ctl >= 0 && rtl_session_tick_on_fd(s, t->ctl))
				fprintf(stderr, "reticle: warning: probe: 'reticle ctl' requests wait for the next tick\n");
			if (t->ctl < 0) {
				fprintf(stderr, "reticle: warning: probe: no control socket for 'reticle ctl' (%s)\n",
					strerror(-t->ctl));
				t->pid = -1;
			}
		}
	}
	if (t->ctl >= 0)
		ctl_serve(t->ctl, s, t->pid);
	if (t->interval > 0 && now >= t->next) {
		fprintf(t->out, "--- %.1f s\n", now - t->start);
		probe_collector_print_live(t->out, s);
		while (t->next <= now)
			t->next += t->interval;
	}
}

static char *read_file(const char *path)
{
	FILE *f = fopen(path, "re");
	if (!f)
		return NULL;
	size_t n = 0, cap = 4096;
	char *buf = malloc(cap);
	for (size_t got; buf && (got = fread(buf + n, 1, cap - n - 1, f)) > 0;) {
		n += got;
		if (cap - n < 2) {
			char *b = realloc(buf, cap *= 2);
			if (!b) {
				free(buf);
				buf = NULL;
			}
			buf = b;
		}
	}
	bool bad = ferror(f);
	fclose(f);
	if (buf && bad) {
		free(buf);
		errno = EIO;
		return NULL;
	}
	if (buf)
		buf[n] = 0;
	return buf;
}

/* PROGRAM as execvp finds it (malloc'd), NULL if not. */
static char *find_program(const char *prog)
{
	char path[PATH_MAX];
	return os_find_program(prog, path, sizeof(path)) ? NULL : realpath(path, NULL);
}

/* The binaries a launch of COMMAND starts with: its executable and the
 * libraries its loader lists (the loader's --list runs none of its code);
 * none for a script or what cannot be read (nothing is checked then). */
static void start_modules(const char *command, struct cli_paths *out)
{
	char *exe = find_program(command);
	rtl_binary *bin;
	if (!exe || rtl_binary_open_image(exe, &bin)) {
		free(exe);
		return;
	}
	const char *interp = rtl_binary_interp(bin);
	cli_paths_add(out, exe);
	if (interp && !access(interp, X_OK)) {
		int fds[2];
		pid_t pid = pipe2(fds, O_CLOEXEC) ? -1 : fork();
		if (pid == 0) {
			dup2(fds[1], 1);
			int null = open("/dev/null", O_WRONLY);
			dup2(null, 2);
			execl(interp, interp, "--list", exe, (char *)NULL);
			_exit(127);
		}
		if (pid > 0) {
			close(fds[1]);
			FILE *f = fdopen(fds[0], "r");
			char line[4096];
			while (f && fgets(line, sizeof(line), f)) {
				char *arrow = strstr(line, "=> "), *path = arrow ? arrow + 3 : line + strspn(line, " \t");
				path[strcspn(path, " \n(")] = 0;
				if (*path == '/')
					cli_paths_add(out, path);
			}
			if (f)
				fclose(f);
			else
				close(fds[0]);
			waitpid(pid, NULL, 0);
		} else if (pid < 0 && fds[0] >= 0) {
			close(fds[0]);
			close(fds[1]);
		}
	}
	rtl_binary_close(bin);
	free(exe);
}

/* Runs the loaded program's session (launch or attach); the status to exit
 * with, | 0x100 when it measured. Every INTERVAL seconds (0: never) the
 * aggregations so far go to OUT. */
static int measure(char **command, long pid, double duration, const char *output, double interval, FILE *out)
{
	char tmp[] = "/tmp/reticle-probe-XXXXXX";
	if (!output) {   /* the session writes one; probe keeps none */
		int fd = mkstemp(tmp);
		if (fd < 0) {
			cli_error("probe: cannot create a temporary profile: %s", strerror(errno));
			return CLI_EXIT_FAIL;
		}
		close(fd);
	}
	const struct rtl_collector *colls[1] = { probe_collector() };
	struct rtl_session_opts opts = { .sz = sizeof(opts), .output = output ? output : tmp, .collectors = colls,
					 .ncollectors = 1, .dynamic_probes = true };
	rtl_session *s;
	int status = 0, rc = 0, err = rtl_session_create(&opts, &s);
	if (err) {
		cli_error("probe: %s", rtl_strerror(err));
		if (!output)
			unlink(tmp);
		return CLI_EXIT_FAIL;
	}
	double start = now_s();
	struct ticker ticker = { out, interval, start, start + interval, command ? 0 : pid, -1, "" };
	if ((err = rtl_session_on_tick(s, TICK_MS / 1000.0, tick, &ticker))) {
		cli_error("probe: %s", rtl_strerror(err));
		rtl_session_destroy(s);
		if (!output)
			unlink(tmp);
		return CLI_EXIT_FAIL;
	}
	if (!command) {   /* attached: Ctrl-C ends the measurement, not the process;
			   * so do QUIT and a reader of the results gone (PIPE),
			   * of which reticle would die, leaving it patched */
		cli_stop_on_signals(s, CLI_STOP_INT | CLI_STOP_PIPE);
		err = rtl_session_attach(s, (pid_t)pid, duration);
		if (err)
			rc = cli_attach_error("probe", pid, err, false);
		else if (duration > 0)
			fprintf(stderr, "reticle: probing process %ld for %g s (Ctrl-C stops sooner)\n", pid,
				duration);
		else
			fprintf(stderr, "reticle: probing process %ld until it ends (Ctrl-C stops)\n", pid);
	} else if ((err = rtl_session_launch(s, command))) {
		rc = cli_launch_error(command[0], err);
	} else {   /* as a shell's job: the terminal's signals are the program's, and
		    * those sent to reticle go on to it (its end prints the results) */
		cli_forward_signals(rtl_session_pid(s));
	}
	if (!err && (err = rtl_session_run(s, &status))) {
		cli_error("probe: %s", rtl_strerror(err));
		rc = CLI_EXIT_FAIL;
	} else if (!err && command) {
		rc = status;
	}
	struct rtl_session_stats st;
	rtl_session_stats(s, &st);
	if (!err && output && st.profiles_failed && rc == 0)   /* -o not written (said): as run */
		rc = CLI_EXIT_FAIL;
	if (!command)
		cli_stop_on_signals(NULL, CLI_STOP_INT | CLI_STOP_PIPE);
	if (ticker.ctl >= 0) {
		close(ticker.ctl);
		unlink(ticker.path);
	}
	rtl_session_destroy(s);
	if (!output)
		unlink(tmp);
	return err ? rc : rc | 0x100;   /* 0x100: measured, results to print */
}

int cmd_probe(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "file", required_argument, NULL, 'f' },
		{ "pid", required_argument, NULL, 'p' },
		{ "duration", required_argument, NULL, 'd' },
		{ "results", required_argument, NULL, 'r' },
		{ "interval", required_argument, NULL, 'i' },
		{ "output", required_argument, NULL, 'o' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	const char *file = NULL, *results = NULL, *output = NULL;
	long pid = 0;
	double duration = 0, interval = 0;
	const char *text = NULL;
	char *end;
	int opt;
	optind = 1;
	opterr = 0;
	/* options before and after the program text, which getopt stops at */
	for (;;) {
	while ((opt = getopt_long(argc, argv, "+f:p:d:r:i:o:h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'f': file = optarg; break;
		case 'p':
			pid = strtol(optarg, &end, 10);
			if (!*optarg || *end || pid <= 0) {
				cli_error("probe: '%s' is not a process id", optarg);
				return CLI_EXIT_USAGE;
			}
			break;
		case 'd':
			duration = strtod(optarg, &end);
			if (!*optarg || *end || !(duration > 0)) {
				cli_error("probe: --duration takes seconds, a number above 0, not '%s'", optarg);
				return CLI_EXIT_USAGE;
			}
			break;
		case 'r': results = optarg; break;
		case 'i':
			interval = strtod(optarg, &end);
			if (!*optarg || *end || !(interval >= 0.05)) {
				cli_error("probe: --interval takes seconds, 0.05 or more, not '%s'", optarg);
				return CLI_EXIT_USAGE;
			}
			break;
		case 'o': output = optarg; break;
		case 'h': usage(stdout); return 0;
		default:
			cli_error("probe: unknown option or missing argument '%s' (try 'reticle probe --help')",
				  argv[optind - 1]);
			return CLI_EXIT_USAGE;
		}
	}
	if (text || optind >= argc || !strcmp(argv[optind - 1], "--"))
		break;
	text = argv[optind++];
	}
	if (text && file) {
		cli_error("probe: give the program as an argument or with -f FILE, not both");
		return CLI_EXIT_USAGE;
	}
	bool launch = optind < argc && !strcmp(argv[optind - 1], "--");
	if (!file && !text) {
		cli_error("probe: give the program as an argument or with -f FILE (try 'reticle probe --help')");
		return CLI_EXIT_USAGE;
	}
	if (launch == (pid != 0) || (!launch && optind != argc)) {
		cli_error("probe: give either -- COMMAND [ARGS] or -p PID (try 'reticle probe --help')");
		return CLI_EXIT_USAGE;
	}
	if (duration > 0 && launch) {
		cli_error("probe: --duration goes with -p PID (a launched command runs to its end)");
		return CLI_EXIT_USAGE;
	}
	char *owned = NULL;
	if (file && !(text = owned = read_file(file))) {
		cli_error("probe: %s: %s", file, strerror(errno));
		return CLI_EXIT_FAIL;
	}
	char why[512];
	if (probe_collector_load(text, why, sizeof(why))) {
		cli_error("probe: %s%s%s", file ? file : "", file ? ": " : "", why);
		free(owned);
		return CLI_EXIT_USAGE;
	}
	free(owned);
	/* a point that names no function: refused before the program runs */
	struct cli_paths mods = { 0 };
	if (launch)
		start_modules(argv[optind], &mods);
	else
		cli_process_modules(pid, &mods);
	char what[300];
	if (launch)
		snprintf(what, sizeof(what), "%s or the libraries it loads at its start", argv[optind]);
	else
		snprintf(what, sizeof(what), "process %ld", pid);
	int bad = mods.n ? probe_collector_check(mods.v, mods.n, what, why, sizeof(why)) : 0;
	cli_paths_free(&mods);
	if (bad) {
		cli_error("probe: %s", why);
		probe_collector_unload();
		return CLI_EXIT_USAGE;
	}
	if (output && !cli_output_writable("probe", output)) {
		probe_collector_unload();
		return CLI_EXIT_FAIL;
	}
	FILE *out = stdout;
	if (results && !(out = fopen(results, "we"))) {
		cli_error("probe: %s: %s", results, strerror(errno));
		probe_collector_unload();
		return CLI_EXIT_FAIL;
	}
	probe_collector_set_output(out);
	int rc = measure(launch ? argv + optind : NULL, pid, duration, output, interval, out);
	if (rc & 0x100) {
		rc &= 0xff;
		fflush(stdout);
		if (interval > 0)
			fputs("--- end\n", out);
		probe_collector_print(out);
	}
	if (out != stdout && fclose(out)) {
		cli_error("probe: %s: %s", results, strerror(errno));
		rc = rc ? rc : CLI_EXIT_FAIL;
	}
	probe_collector_unload();
	return rc;
}
