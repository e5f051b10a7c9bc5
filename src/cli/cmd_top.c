/* reticle top: the hottest functions of a program while it runs, from the
 * counters of its relocated copies, refreshed every interval (attached to
 * a running process, which is left as it was at the end, or launched). */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <reticle/collector.h>
#include <reticle/error.h>
#include <reticle/session.h>
#include "cli.h"
#include "util/array.h"

static void usage(FILE *f)
{
	fputs("usage: reticle top [--by calls|instrs|time|hits] [-n N] [--interval S]\n"
	      "                   [--iterations K] [-o PROFILE] (PID | -- PROGRAM [ARGS...])\n"
	      "\n"
	      "Shows the functions of a running program that ran most in the last\n"
	      "interval (calls and instructions per second, from fcount and bbcount\n"
	      "counters; with --by time also the time in them, from calltime's timers),\n"
	      "refreshed every interval, without stopping it. With PID it attaches to\n"
	      "that process (as 'reticle attach -c fcount,bbcount[,calltime]') and\n"
	      "leaves it as it was when top ends (Ctrl-C, SIGTERM, SIGHUP, SIGQUIT, the\n"
	      "reader of its output gone, --iterations, or the process ending); with\n"
	      "-- PROGRAM it launches it and ends with it, passing it the signals sent to\n"
	      "reticle (TERM, HUP, INT, QUIT, USR1, USR2), as 'reticle run' does, and\n"
	      "exiting with its status. A PID that a 'reticle probe' session measures is\n"
	      "watched through that session (its control socket, as 'reticle ctl'), with\n"
	      "its probes' hits per function. On a terminal the screen is\n"
	      "redrawn; otherwise each refresh is printed after a line '--- T s'.\n"
	      "\n"
	      "      --by calls|instrs|time|hits  order by calls (default), instructions,\n"
	      "                        time in the function itself (self: the share of one\n"
	      "                        CPU, summed over threads; total: with its callees,\n"
	      "                        frames still open counted up to the refresh), or the\n"
	      "                        probes' hits of a 'reticle probe' session\n"
	      "  -n, --top N           functions shown (default 20)\n"
	      "      --interval S      seconds between refreshes (default 1, at least 0.05)\n"
	      "      --iterations K    end after K refreshes\n"
	      "  -o, --output FILE     also keep the profile (default: none kept)\n"
	      "  -h, --help            this help\n", f);
}

struct row {
	pid_t pid;
	uint64_t addr;
	char *module;
	char *name;
	uint64_t calls, instrs, hits;   /* hits: a probe session's counters in it */
	uint64_t dcalls, dinstrs, dhits;
	double self, total, dself, dtotal;   /* seconds (--by time) */
};

struct top {
	struct row *prev;
	size_t nprev;
	double interval, elapsed;
	unsigned iterations, shown;
	int n;
	bool by_instrs, by_hits, by_time, tty;
	double last;              /* the previous refresh (CLOCK_MONOTONIC s) */
	rtl_session *s;
	long session;             /* the pid a 'reticle probe' session measures, or 0 */
};

static int by_key(const void *a, const void *b)
{
	const struct row *x = a, *y = b;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	return strcmp(x->module, y->module);
}

static int by_calls(const void *a, const void *b)
{
	const struct row *x = a, *y = b;
	return x->dcalls != y->dcalls ? (x->dcalls < y->dcalls ? 1 : -1) : (x->dinstrs < y->dinstrs) - (x->dinstrs > y->dinstrs);
}

static int by_instrs(const void *a, const void *b)
{
	const struct row *x = a, *y = b;
	return x->dinstrs != y->dinstrs ? (x->dinstrs < y->dinstrs ? 1 : -1) : (x->dcalls < y->dcalls) - (x->dcalls > y->dcalls);
}

static int by_time(const void *a, const void *b)
{
	const struct row *x = a, *y = b;
	return x->dself != y->dself ? (x->dself < y->dself ? 1 : -1) : by_calls(a, b);
}

static double mono_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void free_rows(struct row *r, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(r[i].module);
		free(r[i].name);
	}
	free(r);
}

static int by_hits(const void *a, const void *b)
{
	const struct row *x = a, *y = b;
	return x->dhits != y->dhits ? (x->dhits < y->dhits ? 1 : -1) : by_calls(a, b);
}

static struct row make_row(pid_t pid, uint64_t addr, const char *module, const char *name)
{
	const char *base = strrchr(module, '/');
	struct row r = { .pid = pid, .addr = addr, .module = strdup(base ? base + 1 : module),
			 .name = name && *name ? strdup(name) : NULL };
	if (!r.module)
		r.module = strdup("?");
	return r;
}

/* Our own session's functions now, in *OUT: how many. */
static size_t own_rows(rtl_session *s, struct row **out)
{
	struct rtl_live_count *live;
	size_t n = rtl_session_live(s, &live);
	struct row *cur = *out = calloc(n ? n : 1, sizeof(*cur));
	for (size_t i = 0; cur && i < n; i++) {
		cur[i] = make_row(live[i].pid, live[i].addr, live[i].module, live[i].name);
		cur[i].calls = live[i].calls;
		cur[i].instrs = live[i].instrs;
		cur[i].self = live[i].self;
		cur[i].total = live[i].total;
	}
	free(live);
	return cur ? n : 0;
}

/* A probe session's answer to "live" (cmd_ctl.c: F and P lines), in
 * *OUT: how many functions. A probe counter adds to its function's hits. */
static size_t session_rows(char *text, struct row **out)
{
	size_t n = 0, cap = 0;
	struct row *v = NULL;
	for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
		char *f[7];
		int nf = 0;
		for (char *p = line; nf < 7; p++) {
			f[nf++] = p;
			if (!(p = strchr(p, '\t')))
				break;
			*p = 0;
		}
		bool fn = nf == 7 && !strcmp(f[0], "F"), probe = nf == 6 && !strcmp(f[0], "P");
		if (!fn && !probe)
			continue;
		if (rtl_grow(&v, &cap, n + 1, sizeof(*v)))
			break;
		pid_t pid = (pid_t)strtol(f[1], NULL, 10);
		if (fn) {
			v[n] = make_row(pid, strtoull(f[2], NULL, 16), f[5], f[6]);
			v[n].calls = strtoull(f[3], NULL, 10);
			v[n++].instrs = strtoull(f[4], NULL, 10);
		} else {   /* after its function's line, when it has one */
			uint64_t value = strtoull(f[3], NULL, 10);
			const char *base = strrchr(f[4], '/');
			size_t k = n;
			while (k-- > 0 && !(v[k].pid == pid && !strcmp(v[k].module, base ? base + 1 : f[4]) &&
					    v[k].name && !strcmp(v[k].name, f[5])))
				;
			if (k < n) {
				v[k].hits += value;
			} else {
				v[n] = make_row(pid, 0, f[4], f[5]);
				v[n++].hits = value;
			}
		}
	}
	*out = v;
	return n;
}

/* Shows CUR (N rows, taken over by T): what ran since the last refresh. */
static void show(struct top *t, struct row *cur, size_t n, long pid)
{
	qsort(cur, n, sizeof(*cur), by_key);
	/* deltas against the previous refresh (both sorted by key) */
	for (size_t i = 0, j = 0; i < n; i++) {
		while (j < t->nprev && by_key(&t->prev[j], &cur[i]) < 0)
			j++;
		bool seen = j < t->nprev && !by_key(&t->prev[j], &cur[i]);
		cur[i].dcalls = cur[i].calls - (seen ? t->prev[j].calls : 0);
		cur[i].dinstrs = cur[i].instrs - (seen ? t->prev[j].instrs : 0);
		cur[i].dhits = cur[i].hits - (seen ? t->prev[j].hits : 0);
		cur[i].dself = cur[i].self - (seen ? t->prev[j].self : 0);
		cur[i].dtotal = cur[i].total - (seen ? t->prev[j].total : 0);
	}
	free_rows(t->prev, t->nprev);
	t->elapsed += t->interval;
	double now = mono_now(), span = t->last && now > t->last ? now - t->last : t->interval;
	t->last = now;
	struct row *show = malloc((n ? n : 1) * sizeof(*show));
	size_t nran = 0;
	for (size_t i = 0; show && i < n; i++)
		if (cur[i].dcalls || cur[i].dinstrs || cur[i].dhits || cur[i].dself > 0 || cur[i].dtotal > 0)
			show[nran++] = cur[i];
	bool hits = t->session && (t->by_hits || !t->by_instrs);   /* a session's probes */
	for (size_t i = 0; hits && !t->by_hits && i < nran; i++)
		hits = !show[i].dcalls;   /* by calls when the session counts them */
	if (show)
		qsort(show, nran, sizeof(*show),
		      hits ? by_hits : t->by_instrs ? by_instrs : t->by_time ? by_time : by_calls);
	if (t->tty)
		fputs("\033[H\033[2J", stdout);
	else
		printf("--- %.2f s\n", t->elapsed);
	printf("reticle top: pid %ld%s, %zu functions ran in the last %.2f s\n", pid,
	       t->session ? " (its 'reticle probe' session)" : "", nran, t->interval);
	if (t->session)
		printf("%8s %14s %14s %14s  %-40s %s\n", "pid", "calls", "instrs", "probe hits", "function", "module");
	else if (t->by_time)
		printf("%8s %14s %14s %8s %8s  %-40s %s\n", "pid", "calls", "instrs", "self %", "total %", "function",
		       "module");
	else
		printf("%8s %14s %14s  %-40s %s\n", "pid", "calls", "instrs", "function", "module");
	for (size_t i = 0; show && i < nran && (int)i < t->n; i++) {
		char addr[32], more[48] = "";
		snprintf(addr, sizeof(addr), "sub_%llx", (unsigned long long)show[i].addr);
		if (t->session)
			snprintf(more, sizeof(more), " %14llu", (unsigned long long)show[i].dhits);
		else if (t->by_time)   /* the share of one CPU over the interval */
			snprintf(more, sizeof(more), " %8.1f %8.1f", 100 * show[i].dself / span,
				 100 * show[i].dtotal / span);
		printf("%8d %14llu %14llu%s  %-40s %s\n", (int)show[i].pid, (unsigned long long)show[i].dcalls,
		       (unsigned long long)show[i].dinstrs, more, show[i].name ? show[i].name : addr, show[i].module);
	}
	fflush(stdout);
	free(show);
	t->prev = cur;
	t->nprev = n;
	t->shown++;
}

static void refresh(rtl_session *s, void *ctx)
{
	struct top *t = ctx;
	if (t->iterations && t->shown >= t->iterations)
		return;
	struct row *cur;
	size_t n = own_rows(s, &cur);
	if (!cur)
		return;
	show(t, cur, n, rtl_session_pid(s));
	/* attached: the session ends; launched: the program runs on, unwatched */
	if (t->iterations && t->shown >= t->iterations) {
		rtl_session_stop(s);
		t->interval = 1e9;
	}
}

/* top of the 'reticle probe' session that measures T->session: its live
 * counts over its control socket every interval, until it ends or Ctrl-C. */
static int watch_session(struct top *t)
{
	cli_stop_on_signals(NULL, CLI_STOP_INT | CLI_STOP_PIPE);
	char *text = NULL;
	if (!ctl_ask(t->session, "live", 5000, &text) && !strncmp(text, "ok\n", 3))   /* the first interval's base */
		t->nprev = session_rows(text + 3, &t->prev);
	free(text);
	if (t->prev)
		qsort(t->prev, t->nprev, sizeof(*t->prev), by_key);
	while (!cli_stop_asked() && !(t->iterations && t->shown >= t->iterations)) {
		struct timespec ts = { (time_t)t->interval, (long)((t->interval - (time_t)t->interval) * 1e9) };
		while (nanosleep(&ts, &ts) && !cli_stop_asked())
			;
		text = NULL;
		if (cli_stop_asked() || ctl_ask(t->session, "live", 5000, &text) || strncmp(text, "ok\n", 3)) {
			if (!cli_stop_asked())
				fprintf(stderr, "reticle: top: the session of process %ld has ended\n", t->session);
			free(text);
			break;
		}
		struct row *cur;
		size_t n = session_rows(text + 3, &cur);
		free(text);
		show(t, cur, n, t->session);
	}
	free_rows(t->prev, t->nprev);
	return 0;
}

int cmd_top(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "by", required_argument, NULL, 'b' },
		{ "top", required_argument, NULL, 'n' },
		{ "interval", required_argument, NULL, 'i' },
		{ "iterations", required_argument, NULL, 'k' },
		{ "output", required_argument, NULL, 'o' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	struct top t = { .interval = 1, .n = 20, .tty = isatty(1) == 1 };
	const char *output = NULL;
	char *end;
	int opt;
	optind = 1;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, "+n:o:h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'b':
			if (strcmp(optarg, "calls") && strcmp(optarg, "instrs") && strcmp(optarg, "hits") &&
			    strcmp(optarg, "time")) {
				cli_error("top: --by takes calls, instrs, time or hits, not '%s'", optarg);
				return CLI_EXIT_USAGE;
			}
			t.by_instrs = !strcmp(optarg, "instrs");
			t.by_hits = !strcmp(optarg, "hits");
			t.by_time = !strcmp(optarg, "time");
			break;
		case 'n':
			t.n = (int)strtol(optarg, &end, 10);
			if (!*optarg || *end || t.n <= 0) {
				cli_error("top: -n takes a number above 0, not '%s'", optarg);
				return CLI_EXIT_USAGE;
			}
			break;
		case 'i':
			t.interval = strtod(optarg, &end);
			if (!*optarg || *end || !(t.interval >= 0.05)) {
				cli_error("top: --interval takes seconds, 0.05 or more, not '%s'", optarg);
				return CLI_EXIT_USAGE;
			}
			break;
		case 'k': {
			long k = strtol(optarg, &end, 10);
			if (!*optarg || *end || k <= 0) {
				cli_error("top: --iterations takes a number above 0, not '%s'", optarg);
				return CLI_EXIT_USAGE;
			}
			t.iterations = (unsigned)k;
			break;
		}
		case 'o': output = optarg; break;
		case 'h': usage(stdout); return 0;
		default:
			cli_error("top: unknown option or missing argument '%s' (try 'reticle top --help')",
				  argv[optind - 1]);
			return CLI_EXIT_USAGE;
		}
	}
	bool launch = optind < argc && !strcmp(argv[optind - 1], "--");
	long pid = 0;
	if (!launch) {
		pid = optind + 1 == argc ? strtol(argv[optind], &end, 10) : 0;
		if (optind + 1 != argc || !*argv[optind] || *end || pid <= 0) {
			cli_error("top: give a process id, or -- PROGRAM [ARGS] (usage: reticle top [OPTIONS] PID)");
			return CLI_EXIT_USAGE;
		}
	}
	char *probe_answer;
	if (!launch && !ctl_ask(pid, "live", 5000, &probe_answer)) {   /* a 'reticle probe' session measures it */
		free(probe_answer);
		if (output) {
			cli_error("top: process %ld is measured by a 'reticle probe' session: -o is its to write", pid);
			return CLI_EXIT_USAGE;
		}
		if (t.by_time) {
			cli_error("top: process %ld is measured by a 'reticle probe' session, which has no time per "
				  "function: add 'entry:F { @t = time(); }' to it with reticle ctl", pid);
			return CLI_EXIT_USAGE;
		}
		t.session = pid;
		return watch_session(&t);
	}
	if (output && !cli_output_writable("top", output))
		return CLI_EXIT_FAIL;
	char tmp[] = "/tmp/reticle-top-XXXXXX";
	if (!output) {   /* the session writes one; top keeps none */
		int fd = mkstemp(tmp);
		if (fd < 0) {
			cli_error("top: cannot create a temporary profile: %s", strerror(errno));
			return CLI_EXIT_FAIL;
		}
		close(fd);
	}
	const struct rtl_collector *colls[3] = { rtl_collector_find("fcount"), rtl_collector_find("bbcount"),
						 rtl_collector_find("calltime") };
	char *warm = cli_warm_cache_dir();
	struct rtl_session_opts opts = { .sz = sizeof(opts), .output = output ? output : tmp, .collectors = colls,
					 .ncollectors = t.by_time ? 3 : 2, .warm_cache = warm,
					 .warm_cache_max = cli_cache_max_bytes() };
	int status = 0, err = rtl_session_create(&opts, &t.s), rc = 0;
	free(warm);
	if (!err)
		err = rtl_session_on_tick(t.s, t.interval, refresh, &t);
	/* attached: Ctrl-C, SIGTERM, SIGHUP (its terminal closed), SIGQUIT
	 * or SIGPIPE (the reader of its output gone: top PID | head) ends
	 * top, which leaves the process as it was */
	if (!launch)
		cli_stop_on_signals(t.s, CLI_STOP_INT | CLI_STOP_PIPE);
	if (!err)
		err = launch ? rtl_session_launch(t.s, argv + optind) : rtl_session_attach(t.s, (pid_t)pid, 0);
	if (!err && launch)   /* as 'reticle run': the signals go on to the program, whose end ends top */
		cli_forward_signals(rtl_session_pid(t.s));
	t.last = mono_now();
	if (err && !launch) {
		rc = cli_attach_error("top", pid, err, false);
	} else if (err) {
		cli_error("top: %s: %s", argv[optind], rtl_strerror(err));
		rc = CLI_EXIT_FAIL;
	} else if ((err = rtl_session_run(t.s, &status))) {
		cli_error("top: %s", rtl_strerror(err));
		rc = CLI_EXIT_FAIL;
	} else if (launch) {
		rc = status;
	}
	struct rtl_session_stats st;
	rtl_session_stats(t.s, &st);
	if (!err && output && st.profiles_failed && rc == 0)   /* -o not written (said): as run */
		rc = CLI_EXIT_FAIL;
	if (!launch)
		cli_stop_on_signals(NULL, CLI_STOP_INT | CLI_STOP_PIPE);
	rtl_session_destroy(t.s);
	free_rows(t.prev, t.nprev);
	if (!output)
		unlink(tmp);
	return rc;
}
