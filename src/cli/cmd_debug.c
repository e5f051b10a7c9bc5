/* reticle debug: a debugger on reticle's own process control. A debugger
 * cannot share a target with reticle, so the program runs instrumented
 * (its functions in their copies, counted as by `reticle run`) and the
 * breakpoints are int3s in the copies (src/engine/debug.h). Addresses are
 * the program's own; where a thread is in a copy, the copy's are told
 * too, and `disas` shows a function and its copy side by side. */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <reticle/collector.h>
#include <reticle/error.h>
#include <reticle/session.h>
#include "cli.h"
#include "engine/debug.h"
#include "isa/x86_64/insn.h"
#include "os/linux/os.h"
#ifdef HAVE_LIBEDIT
#include <readline.h>   /* libedit's, found through its pkg-config include path */
#endif

static void usage(FILE *f)
{
	fputs("usage: reticle debug [-c COLLECTORS] [-o PROFILE] [-b FUNC|*ADDR]... [-x FILE]\n"
	      "                     (-- PROGRAM [ARGS...] | -p PID)\n"
	      "\n"
	      "Runs PROGRAM under reticle (or attaches to process PID), instrumented as\n"
	      "'reticle run' does, with a debugger: it stops before the program's first\n"
	      "instruction (attached: with every thread held), at\n"
	      "breakpoints and at faults (SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT),\n"
	      "and reads commands. The stopped thread is held; the others run on.\n"
	      "Addresses are the program's own; a thread in a function's copy is shown\n"
	      "in both.\n"
	      "\n"
	      "  break FUNC | *ADDR  (b)   stop at a function (a shell pattern; C++ and Rust\n"
	      "                            names demangled too) or an instruction\n"
	      "  delete N            (d)   remove breakpoint N\n"
	      "  info breakpoints    (i b) the breakpoints, their hits and copies\n"
	      "  run | continue      (c)   go on\n"
	      "  stepi [N]           (si)  N instructions (of the copy the thread runs)\n"
	      "  nexti               (ni)  one instruction of the program, a call run to its return\n"
	      "  registers           (i r) the registers\n"
	      "  x ADDR [N]                N 8-byte words of memory (the file's bytes for text)\n"
	      "  backtrace           (bt)  the call stack, through the copies\n"
	      "  disas [FUNC]              a function and its copy, side by side\n"
	      "  kill                      end the program (SIGKILL)\n"
	      "  quit                (q)   kill the program and leave; attached (-p): detach,\n"
	      "                            the process left as it was, running on\n"
	      "\n"
	      "  -c, --collect LIST  collectors, as 'reticle run -c' (default fcount)\n"
	      "  -o, --output FILE   keep the profile (default: none kept)\n"
	      "  -b, --break WHERE   a breakpoint before the program starts (repeatable)\n"
	      "  -p, --pid PID       attach to a running process (its threads held at the\n"
	      "                      first prompt) instead of launching\n"
	      "  -x, --commands FILE read commands from FILE first, then from the terminal;\n"
	      "                      at the end of commands with no terminal, the program\n"
	      "                      runs to its end\n"
	      "  -h, --help          this help\n"
	      "Exit status: the program's (attached: 0 once detached or ended).\n", f);
}

struct dbg {
	rtl_session *s;
	FILE *script;             /* -x, until its end */
	bool tty, eof, quit;
	pid_t killed;
	bool attached;            /* -p: quit detaches, the process runs on */
};

/* ---- reading commands ---- */

static char *next_line(struct dbg *d)
{
	static char buf[1024];
	if (d->script) {
		if (fgets(buf, sizeof(buf), d->script)) {
			buf[strcspn(buf, "\n")] = 0;
			printf("(reticle) %s\n", buf);
			return strdup(buf);
		}
		fclose(d->script);
		d->script = NULL;
	}
	if (d->eof)
		return NULL;
#ifdef HAVE_LIBEDIT
	if (d->tty) {
		char *l = readline("(reticle) ");
		if (l && *l)
			add_history(l);
		if (!l)
			d->eof = true;
		return l;
	}
#endif
	fputs("(reticle) ", stdout);
	fflush(stdout);
	if (!fgets(buf, sizeof(buf), stdin)) {
		d->eof = true;
		return NULL;
	}
	buf[strcspn(buf, "\n")] = 0;
	return strdup(buf);
}

/* ---- commands ---- */

/* One instruction at ADDR as text in BUF; its length (0: not decoded). */
static int insn_at(struct dbg *d, pid_t pid, uint64_t addr, char *buf, size_t len)
{
	uint8_t code[16];
	if (debug_read(d->s, pid, addr, code, sizeof(code))) {
		snprintf(buf, len, "(cannot read)");
		return 0;
	}
	return x86_format(code, sizeof(code), addr, buf, len);
}

static void say_where(struct dbg *d, pid_t pid, uint64_t pc)
{
	char desc[512], text[160];
	uint64_t orig = debug_where(d->s, pid, pc, desc, sizeof(desc));
	insn_at(d, pid, pc, text, sizeof(text));
	if (orig && orig != pc)
		printf("  %#" PRIx64 " %s  (copy at %#" PRIx64 ": %s)\n", orig, desc, pc, text);
	else
		printf("  %#" PRIx64 " %s: %s\n", pc, desc, text);
}

static bool parse_addr(const char *s, uint64_t *v)
{
	char *end;
	errno = 0;
	*v = strtoull(s, &end, 0);
	return !errno && end != s && !*end;
}

static void do_break(struct dbg *d, const char *arg)
{
	uint64_t addr = 0;
	int id;
	if (!arg || !*arg) {
		puts("break FUNC or break *ADDR");
		return;
	}
	if (*arg == '*' && !parse_addr(arg + 1, &addr)) {
		printf("'%s' is not an address\n", arg + 1);
		return;
	}
	int err = debug_break_add(d->s, *arg == '*' ? NULL : arg, addr, &id);
	if (err)
		printf("no breakpoint: %s\n", rtl_strerror(err));
	else
		printf("Breakpoint %d at %s\n", id, arg);
}

static void do_info_breaks(struct dbg *d)
{
	int id;
	const char *func;
	uint64_t addr;
	unsigned hits;
	size_t sites, i = 0;
	for (; debug_break_info(d->s, i, &id, &func, &addr, &hits, &sites); i++) {
		if (func)
			printf("%d  %s", id, func);
		else
			printf("%d  *%#" PRIx64, id, addr);
		printf("  hits %u, written in %zu place%s\n", hits, sites, sites == 1 ? "" : "s");
	}
	if (!i)
		puts("no breakpoints");
}

static void do_regs(pid_t tid)
{
	const char *names[OS_NREGS];
	uint64_t v[OS_NREGS];
	if (os_get_named_regs(tid, names, v)) {
		puts("registers: the thread is gone");
		return;
	}
	for (size_t i = 0; i < OS_NREGS; i++)
		printf("%-8s %#18" PRIx64 "%s", names[i], v[i], i % 2 ? "\n" : "    ");
}

static void do_x(struct dbg *d, pid_t pid, const char *arg)
{
	char a[64] = "";
	unsigned long n = 1;
	uint64_t addr;
	if (!arg || sscanf(arg, "%63s %lu", a, &n) < 1 || !parse_addr(a, &addr) || !n || n > 4096) {
		puts("x ADDR [N]: N (1..4096) 8-byte words at ADDR");
		return;
	}
	for (unsigned long i = 0; i < n; i++) {
		uint64_t w;
		if (debug_read(d->s, pid, addr + 8 * i, &w, 8)) {
			printf("%#" PRIx64 ": cannot read\n", addr + 8 * i);
			return;
		}
		printf(i % 4 ? " %#018" PRIx64 : "%#" PRIx64 ": %#018" PRIx64, i % 4 ? w : addr + 8 * i, w);
		if (i % 4 == 3 || i + 1 == n)
			putchar('\n');
	}
}

static void do_bt(struct dbg *d, pid_t pid, pid_t tid)
{
	uint64_t frames[64];
	size_t n = debug_backtrace(d->s, tid, frames, 64);
	for (size_t i = 0; i < n; i++) {
		char desc[512];
		debug_where(d->s, pid, frames[i], desc, sizeof(desc));
		printf("#%-2zu %#" PRIx64 " %s\n", i, frames[i], desc);
	}
	if (!n)
		puts("no frames");
}

static void do_disas(struct dbg *d, pid_t pid, pid_t tid, const char *arg)
{
	const char *name;
	uint64_t orig, copy, pc = 0;
	size_t size, copy_len;
	if (!arg || !*arg) {
		os_get_pc(tid, &pc);
		pc = debug_where(d->s, pid, pc, (char[8]){ 0 }, 8);
	}
	if (debug_function(d->s, pid, arg && *arg ? arg : NULL, pc, &name, &orig, &size, &copy, &copy_len)) {
		puts("no such function");
		return;
	}
	printf("%s: %#" PRIx64 "..%#" PRIx64, name, orig, orig + size);
	if (copy)
		printf(", its copy %#" PRIx64 "..%#" PRIx64 "\n", copy, copy + copy_len);
	else
		puts(", no copy (it has not run)");
	/* the copy's own code before its first instruction: the entry's probes */
	uint64_t first_copy = copy ? debug_copy_of(d->s, pid, orig, orig) : 0;
	for (uint64_t x = copy; first_copy && x < first_copy;) {
		char text[160];
		int k = insn_at(d, pid, x, text, sizeof(text));
		printf("%-44.44s | %#" PRIx64 ": %s\n", x == copy ? "(entry)" : "", x, text);
		x += k ? (uint64_t)k : 1;
	}
	/* each original instruction beside the copy's code for it: from its
	 * copy to the next original instruction's (counters before it) */
	for (uint64_t a = orig; a < orig + size;) {
		char left[200], right[160] = "";
		int l = insn_at(d, pid, a, right, sizeof(right));
		snprintf(left, sizeof(left), "%#" PRIx64 ": %s", a, right);
		uint64_t c = copy ? debug_copy_of(d->s, pid, orig, a) : 0, next = 0;
		for (uint64_t b = a + (l ? (uint64_t)l : 1); c && b < orig + size && !next; b++)
			next = debug_copy_of(d->s, pid, orig, b);
		if (!next && c)
			next = copy + copy_len;
		bool first = true;
		for (uint64_t x = c; x && x < next; first = false) {
			int k = insn_at(d, pid, x, right, sizeof(right));
			printf("%-44.44s | %#" PRIx64 ": %s\n", first ? left : "", x, right);
			x += k ? (uint64_t)k : 1;
		}
		if (first)
			printf("%-44.44s |\n", left);
		a += l ? (uint64_t)l : 1;
	}
}

static void show_stop(struct dbg *d, const struct debug_stop *st)
{
	uint64_t pc = 0;
	os_get_pc(st->tid, &pc);
	switch (st->why) {
	case DEBUG_START:
		if (d->attached)
			printf("reticle debug: process %d attached, its threads held; 'break FUNC', then 'continue'\n",
			       (int)st->pid);
		else
			printf("reticle debug: process %d stopped before its first instruction; 'break FUNC', then 'run'\n",
			       (int)st->pid);
		break;
	case DEBUG_BREAK:
		if (st->bp)
			printf("Breakpoint %d, thread %d:\n", st->bp, (int)st->tid);
		else
			printf("Thread %d, back from the call:\n", (int)st->tid);
		break;
	case DEBUG_FAULT:
		printf("Thread %d got %s:\n", (int)st->tid, strsignal(st->sig));
		break;
	}
	say_where(d, st->pid, pc);
}

/* The debugger's prompt, on the event loop's thread, the thread stopped. */
static void on_stop(void *ctx, struct rtl_session *s, const struct debug_stop *st)
{
	struct dbg *d = ctx;
	(void)s;
	if (d->quit || d->killed == st->pid)
		return;
	show_stop(d, st);
	for (;;) {
		fflush(stdout);
		char *line = next_line(d);
		if (!line) {   /* no more commands: the program runs to its end */
			if (d->tty)
				putchar('\n');
			return;
		}
		char *cmd = line + strspn(line, " \t"), *arg = cmd + strcspn(cmd, " \t");
		if (*arg)
			*arg++ = 0;
		arg += strspn(arg, " \t");
		bool go = false;
		if (!*cmd) {
			/* an empty line: nothing */
		} else if (!strcmp(cmd, "c") || !strcmp(cmd, "continue") || !strcmp(cmd, "run") || !strcmp(cmd, "r")) {
			go = true;
		} else if (!strcmp(cmd, "b") || !strcmp(cmd, "break")) {
			do_break(d, arg);
		} else if (!strcmp(cmd, "d") || !strcmp(cmd, "delete")) {
			char *end;
			long id = strtol(arg, &end, 10);
			if (!*arg || *end || debug_break_delete(d->s, (int)id))
				printf("no breakpoint '%s'\n", arg);
		} else if ((!strcmp(cmd, "i") || !strcmp(cmd, "info")) && (*arg == 'b')) {
			do_info_breaks(d);
		} else if (!strcmp(cmd, "registers") || !strcmp(cmd, "regs") ||
			   ((!strcmp(cmd, "i") || !strcmp(cmd, "info")) && *arg == 'r')) {
			do_regs(st->tid);
		} else if (!strcmp(cmd, "x")) {
			do_x(d, st->pid, arg);
		} else if (!strcmp(cmd, "bt") || !strcmp(cmd, "backtrace") || !strcmp(cmd, "where")) {
			do_bt(d, st->pid, st->tid);
		} else if (!strcmp(cmd, "disas") || !strcmp(cmd, "disassemble")) {
			do_disas(d, st->pid, st->tid, arg);
		} else if (!strcmp(cmd, "si") || !strcmp(cmd, "stepi")) {
			long n = *arg ? strtol(arg, NULL, 10) : 1;
			for (long i = 0; i < (n > 0 ? n : 1); i++) {
				int sig = 0;
				uint64_t pc = 0;
				if (debug_stepi(d->s, st->tid, &sig) || os_get_pc(st->tid, &pc)) {
					puts("the thread is gone");
					break;
				}
				if (i + 1 == n || n <= 1 || sig)
					say_where(d, st->pid, pc);
				if (sig) {
					printf("  (it met %s: delivered when it goes on)\n", strsignal(sig));
					break;
				}
			}
		} else if (!strcmp(cmd, "ni") || !strcmp(cmd, "nexti")) {
			int sig = 0;
			uint64_t pc = 0;
			int r = debug_nexti(d->s, st->tid, &sig);
			if (r == 1) {
				go = true;   /* on until the call returns */
			} else if (r || os_get_pc(st->tid, &pc)) {
				puts("the thread is gone");
			} else {
				say_where(d, st->pid, pc);
				if (sig)
					printf("  (it met %s: delivered when it goes on)\n", strsignal(sig));
			}
		} else if (d->attached && (!strcmp(cmd, "q") || !strcmp(cmd, "quit") || !strcmp(cmd, "detach"))) {
			d->quit = true;   /* detached: left as it was, running on */
			rtl_session_stop(d->s);
			go = true;
		} else if (!strcmp(cmd, "kill") || !strcmp(cmd, "q") || !strcmp(cmd, "quit")) {
			kill(st->pid, SIGKILL);
			d->killed = st->pid;
			d->quit = cmd[0] == 'q';
			go = true;
		} else if (!strcmp(cmd, "help") || !strcmp(cmd, "h")) {
			usage(stdout);
		} else {
			printf("unknown command '%s' (try 'help')\n", cmd);
		}
		free(line);
		if (go)
			return;
	}
}

/* reticle run --debug-on-fault: the prompt at a fault, on the terminal
 * (the program's standard input may be a file or a pipe). */
static struct dbg fault_dbg;

int cli_debug_on_fault(struct rtl_session *s)
{
	fault_dbg = (struct dbg){ .s = s };
	if (!isatty(STDIN_FILENO) && !freopen("/dev/tty", "r", stdin)) {
		cli_error("run: --debug-on-fault needs a terminal");
		return -1;
	}
	fault_dbg.tty = true;
	return debug_attach_to_session(s, on_stop, &fault_dbg, true) ? -1 : 0;
}

int cmd_debug(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "collect", required_argument, NULL, 'c' }, { "output", required_argument, NULL, 'o' },
		{ "break", required_argument, NULL, 'b' }, { "commands", required_argument, NULL, 'x' },
		{ "pid", required_argument, NULL, 'p' },
		{ "help", no_argument, NULL, 'h' }, { 0 },
	};
	char *colls_arg = NULL, *breaks[64];
	const char *output = NULL, *script = NULL;
	size_t nbreaks = 0;
	long pid = 0;
	int c;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+c:o:b:x:p:h", opts, NULL)) != -1) {
		switch (c) {
		case 'p': {
			char *end;
			pid = strtol(optarg, &end, 10);
			if (*end || pid <= 0) {
				cli_error("debug: '%s' is not a process id", optarg);
				return CLI_EXIT_USAGE;
			}
			break;
		}
		case 'c': colls_arg = optarg; break;
		case 'o': output = optarg; break;
		case 'b':
			if (nbreaks == sizeof(breaks) / sizeof(*breaks)) {
				cli_error("debug: at most %zu -b options (more with 'break' at the prompt)", nbreaks);
				return CLI_EXIT_USAGE;
			}
			breaks[nbreaks++] = optarg;
			break;
		case 'x': script = optarg; break;
		case 'h': usage(stdout); return 0;
		default:
			cli_error("debug: unknown option or missing argument '%s' (try 'reticle debug --help')",
				  argv[optind - 1]);
			return CLI_EXIT_USAGE;
		}
	}
	if ((optind >= argc) == !pid) {
		cli_error("debug: give the program (-- PROGRAM [ARGS...]) or a process (-p PID), one of them (try --help)");
		return CLI_EXIT_USAGE;
	}
	char **command = pid ? NULL : argv + optind;
	const struct rtl_collector *colls[MAX_COLLECTORS];
	size_t ncolls = 0;
	struct cli_collector_opts copts;
	if (cli_parse_collectors("debug", colls_arg ? colls_arg : "fcount", colls, &ncolls, &copts))
		return CLI_EXIT_USAGE;
	struct dbg d = { .tty = isatty(STDIN_FILENO), .attached = pid != 0 };
	if (script && !(d.script = fopen(script, "re"))) {
		cli_error("debug: %s: %s", script, strerror(errno));
		return CLI_EXIT_USAGE;
	}
	if (output && !cli_output_writable("debug", output))
		return CLI_EXIT_FAIL;
	char tmp[] = "/tmp/reticle-debug-XXXXXX";
	if (!output) {
		int fd = mkstemp(tmp);
		if (fd < 0) {
			cli_error("debug: cannot create a temporary profile: %s", strerror(errno));
			return CLI_EXIT_FAIL;
		}
		close(fd);
	}
	struct rtl_session_opts so = { .sz = sizeof(so), .output = output ? output : tmp, .collectors = colls,
				       .ncollectors = ncolls, .shim_period = copts.shim_period,
				       .time_all_calls = copts.time_all_calls };
	int status = 0, rc = 0, err = rtl_session_create(&so, &d.s);
	if (!err)
		err = debug_attach_to_session(d.s, on_stop, &d, false);
	for (size_t i = 0; !err && i < nbreaks; i++) {
		uint64_t addr = 0;
		int id;
		if (breaks[i][0] == '*' && !parse_addr(breaks[i] + 1, &addr)) {
			cli_error("debug: -b '%s': not an address", breaks[i]);
			rc = CLI_EXIT_USAGE;
			break;
		}
		err = debug_break_add(d.s, breaks[i][0] == '*' ? NULL : breaks[i], addr, &id);
	}
	if (err) {
		cli_error("debug: %s", rtl_strerror(err));
		rc = CLI_EXIT_FAIL;
	}
	/* attached: TERM, HUP and QUIT detach, the process left as it was
	 * (dying, reticle would leave its breakpoints and patches there) */
	if (!rc && pid)
		cli_stop_on_signals(d.s, 0);
	if (!rc && pid && (err = rtl_session_attach(d.s, (pid_t)pid, 0)))
		rc = cli_attach_error("debug", pid, err, false);
	else if (!rc && !pid && (err = rtl_session_launch(d.s, command)))
		rc = cli_launch_error(command[0], err);
	if (!rc) {
		/* the terminal's Ctrl-C is the program's, as for a shell's job */
		signal(SIGINT, SIG_IGN);
		if ((err = rtl_session_run(d.s, &status))) {
			cli_error("debug: %s", rtl_strerror(err));
			rc = CLI_EXIT_FAIL;
		} else if (pid) {
			printf("[reticle debug: process %ld %s]\n", pid,
			       d.quit || cli_stop_asked() ? "detached, running on" : "ended");
			rc = 0;
		} else {
			printf("[reticle debug: %s %s %d]\n", command[0],
			       status >= 128 ? "ended by signal" : "exited with status",
			       status >= 128 ? status - 128 : status);
			rc = status;
		}
	}
	if (pid)
		cli_stop_on_signals(NULL, 0);
	if (d.s)
		rtl_session_destroy(d.s);
	if (d.script)
		fclose(d.script);
	if (!output)
		unlink(tmp);
	return rc;
}
