/* reticle top: the hottest functions of a program while it runs, from the
 * counters of its relocated copies, refreshed every interval (attached to
 * a running process, which is left as it was at the end, or launched). */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <reticle/collector.h>
#include <reticle/error.h>
#include <reticle/session.h>
#include "cli.h"

static void usage(FILE *f)
{
	fputs("usage: reticle top [--by calls|instrs] [-n N] [--interval S] [--iterations K]\n"
	      "                   [-o PROFILE] (PID | -- PROGRAM [ARGS...])\n"
	      "\n"
	      "Shows the functions of a running program that ran most in the last\n"
	      "interval (calls and instructions per second, from fcount and bbcount\n"
	      "counters), refreshed every interval, without stopping it. With PID it\n"
	      "attaches to that process (as 'reticle attach -c fcount,bbcount') and\n"
	      "leaves it as it was when top ends (Ctrl-C, --iterations, or the process\n"
	      "ending); with -- PROGRAM it launches it. On a terminal the screen is\n"
	      "redrawn; otherwise each refresh is printed after a line '--- T s'.\n"
	      "\n"
	      "      --by calls|instrs  order by calls (default) or instructions\n"
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
	uint64_t calls, instrs;
	uint64_t dcalls, dinstrs;
};

struct top {
	struct row *prev;
	size_t nprev;
	double interval, elapsed;
	unsigned iterations, shown;
	int n;
	bool by_instrs, tty;
	rtl_session *s;
};

static rtl_session *current;

static void on_stop(int sig)
{
	(void)sig;
	if (current)
		rtl_session_stop(current);
}

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

static void free_rows(struct row *r, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(r[i].module);
		free(r[i].name);
	}
	free(r);
}

static void refresh(rtl_session *s, void *ctx)
{
	struct top *t = ctx;
	if (t->iterations && t->shown >= t->iterations)
		return;
	struct rtl_live_count *live;
	size_t n = rtl_session_live(s, &live);
	struct row *cur = calloc(n ? n : 1, sizeof(*cur));
	if (!cur) {
		free(live);
		return;
	}
	for (size_t i = 0; i < n; i++) {
		const char *base = strrchr(live[i].module, '/');
		cur[i] = (struct row){ live[i].pid, live[i].addr, strdup(base ? base + 1 : live[i].module),
				       live[i].name ? strdup(live[i].name) : NULL, live[i].calls, live[i].instrs, 0, 0 };
		if (!cur[i].module)
			cur[i].module = strdup("?");
	}
	free(live);
	qsort(cur, n, sizeof(*cur), by_key);
	/* deltas against the previous refresh (both sorted by key) */
	for (size_t i = 0, j = 0; i < n; i++) {
		while (j < t->nprev && by_key(&t->prev[j], &cur[i]) < 0)
			j++;
		bool seen = j < t->nprev && !by_key(&t->prev[j], &cur[i]);
		cur[i].dcalls = cur[i].calls - (seen ? t->prev[j].calls : 0);
		cur[i].dinstrs = cur[i].instrs - (seen ? t->prev[j].instrs : 0);
	}
	free_rows(t->prev, t->nprev);
	t->elapsed += t->interval;
	struct row *show = malloc((n ? n : 1) * sizeof(*show));
	size_t nran = 0;
	for (size_t i = 0; show && i < n; i++)
		if (cur[i].dcalls || cur[i].dinstrs)
			show[nran++] = cur[i];
	if (show)
		qsort(show, nran, sizeof(*show), t->by_instrs ? by_instrs : by_calls);
	if (t->tty)
		fputs("\033[H\033[2J", stdout);
	else
		printf("--- %.2f s\n", t->elapsed);
	printf("reticle top: pid %d, %zu functions ran in the last %.2f s\n", (int)rtl_session_pid(s), nran,
	       t->interval);
	printf("%8s %14s %14s  %-40s %s\n", "pid", "calls", "instrs", "function", "module");
	for (size_t i = 0; show && i < nran && (int)i < t->n; i++) {
		char addr[32];
		snprintf(addr, sizeof(addr), "sub_%llx", (unsigned long long)show[i].addr);
		printf("%8d %14llu %14llu  %-40s %s\n", (int)show[i].pid, (unsigned long long)show[i].dcalls,
		       (unsigned long long)show[i].dinstrs, show[i].name ? show[i].name : addr, show[i].module);
	}
	fflush(stdout);
	free(show);
	t->prev = cur;
	t->nprev = n;
	/* attached: the session ends; launched: the program runs on, unwatched */
	if (t->iterations && ++t->shown >= t->iterations) {
		rtl_session_stop(s);
		t->interval = 1e9;
	}
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
			if (strcmp(optarg, "calls") && strcmp(optarg, "instrs")) {
				cli_error("top: --by takes calls or instrs, not '%s'", optarg);
				return CLI_EXIT_USAGE;
			}
			t.by_instrs = !strcmp(optarg, "instrs");
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
	const struct rtl_collector *colls[2] = { rtl_collector_find("fcount"), rtl_collector_find("bbcount") };
	char *warm = cli_warm_cache_dir();
	struct rtl_session_opts opts = { .sz = sizeof(opts), .output = output ? output : tmp, .collectors = colls,
					 .ncollectors = 2, .warm_cache = warm, .warm_cache_max = cli_cache_max_bytes() };
	int status = 0, err = rtl_session_create(&opts, &t.s), rc = 0;
	free(warm);
	if (!err)
		err = rtl_session_on_tick(t.s, t.interval, refresh, &t);
	current = t.s;
	struct sigaction sa = { .sa_handler = on_stop };
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	if (!err)
		err = launch ? rtl_session_launch(t.s, argv + optind) : rtl_session_attach(t.s, (pid_t)pid, 0);
	if (err) {
		if (err == -ESRCH)
			cli_error("top: no process %ld", pid);
		else if (err == -EBUSY)
			cli_error("top: process %ld is already traced: detach that first", pid);
		else
			cli_error("top: %s: %s", launch ? argv[optind] : argv[optind], rtl_strerror(err));
		rc = CLI_EXIT_FAIL;
	} else if ((err = rtl_session_run(t.s, &status))) {
		cli_error("top: %s", rtl_strerror(err));
		rc = CLI_EXIT_FAIL;
	} else if (launch) {
		rc = status;
	}
	current = NULL;
	rtl_session_destroy(t.s);
	free_rows(t.prev, t.nprev);
	if (!output)
		unlink(tmp);
	return rc;
}
