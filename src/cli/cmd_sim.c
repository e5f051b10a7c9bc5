/* reticle sim: run a static Linux program on a simulator generated from a
 * Sim-nML description, with built-in or user tools; or disassemble it. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <elf.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <reticle/error.h>
#include <reticle/cachesim.h>
#include <reticle/sim.h>
#include "cli.h"
#include "sim/memtrace.h"

extern char **environ;

static void usage(FILE *f)
{
	fputs("usage: reticle sim [--isa NAME|FILE] [-c TOOL[,TOOL...]] [--cache SPEC]... [--tool ./x.so[:ARGS]]\n"
	      "                  [-o PROFILE] [--strace]\n"
	      "                  -- PROGRAM [ARGS...]\n"
	      "       reticle sim --disasm PROGRAM\n\n"
	      "Runs a statically linked Linux program for a described ISA (chosen from the ELF\n"
	      "header unless --isa is given); stdin, stdout, stderr and the exit status pass through.\n\n"
	      "  --isa NAME|FILE a built-in description (rv64, mips32) or a description file,\n"
	      "                  turned into a simulator at run time (needs a C compiler)\n"
	      "  -c TOOLS        built-in tools (reports on stderr): icount, mix (per instruction\n"
	      "                  name), bbcount (per block and procedure), branch (taken / not\n"
	      "                  taken), cache[:SIZE:WAYS:LINE] (LRU data cache, default 32768:8:64),\n"
	      "                  memtrace (every data access through a bank of simulated caches,\n"
	      "                  as 'reticle run -c memtrace': loads, stores and misses per\n"
	      "                  configuration and level; with -o, per instruction in the profile,\n"
	      "                  for 'reticle report' and its --format cachegrind)\n"
	      "  --cache SPEC    memtrace: a configuration, as 'reticle cachesim --cache' takes\n"
	      "                  it (docs/cachesim.md); repeatable (default: cachegrind's\n"
	      "                  l1d=32k:8:64 and ll=8m:16:64)\n"
	      "  --tool SO[:A]   load a tool: a shared object defining rtl_sim_tool_init(sim, args)\n"
	      "                  against include/reticle/sim.h (may be repeated)\n"
	      "  --disasm        disassemble the executable sections with the description's syntax\n"
	      "  --argv0 NAME    the program's argv[0] (default: PROGRAM; used for a guest execve)\n"
	      "  --strace        trace the program's system calls on stderr: address, name,\n"
	      "                  arguments and result as the program sees it (also\n"
	      "                  RETICLE_SIM_STRACE=1 in the environment, which it sets)\n"
	      "  -o PROFILE      write a profile for 'reticle report' at the end (also when the\n"
	      "                  program fails or is killed): per procedure, instructions executed\n"
	      "                  and executed blocks (no call counts); a fork or execve of the\n"
	      "                  guest is not profiled\n\n"
	      "SIGINT, SIGTERM or SIGHUP stops the simulation at the next instruction boundary:\n"
	      "the tools report and -o writes the profile of the run so far (a second signal\n"
	      "kills at once).\n\n"
	      "Exit status: the program's (128 + N when a fault or signal N kills it, as Linux\n"
	      "would), 128 + N when signal N stops the simulation, 1 when the simulation stops\n"
	      "(undecodable instruction, unsupported system call), 2 for usage errors.\n", f);
}

/* memtrace's cache configurations (--cache), as `reticle run -c memtrace` takes them */
struct caches { rtl_cache_config v[32]; size_t n; };

static int add_tools(struct rtl_sim *sim, char *list, const struct caches *caches)
{
	for (char *tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
		if (!strcmp(tok, "memtrace")) {
			struct caches fallback = { .n = 1 };
			char why[256];
			if (!caches->n && rtl_cache_config_parse("cachegrind,l1i=32k:8:64,l1d=32k:8:64,ll=8m:16:64",
								 &fallback.v[0], why, sizeof(why)))
				return CLI_EXIT_FAIL;
			const struct caches *c = caches->n ? caches : &fallback;
			int err = sim_memtrace_start(sim, c->v, c->n, stderr);
			if (err < 0) {
				cli_error("sim: memtrace: %s", rtl_strerror(err));
				return CLI_EXIT_FAIL;
			}
			continue;
		}
		int err = rtl_sim_tool_builtin(sim, tok, stderr);
		if (err < 0) {
			cli_error("unknown tool or bad parameters '%s' (built in: icount, mix, bbcount, branch,"
				  " cache[:SIZE:WAYS:LINE], memtrace)", tok);
			return CLI_EXIT_USAGE;
		}
	}
	return 0;
}

/* The profile's "command": the program and its arguments, space-separated. */
static int add_profile(struct rtl_sim *sim, const char *path, int argc, char **argv, int *result)
{
	size_t len = 1;
	for (int i = 0; i < argc; i++)
		len += strlen(argv[i]) + 1;
	char *cmd = calloc(1, len);
	if (!cmd)
		return CLI_EXIT_FAIL;
	for (int i = 0; i < argc; i++) {
		if (i)
			strcat(cmd, " ");
		strcat(cmd, argv[i]);
	}
	int err = rtl_sim_add_profile(sim, path, cmd, "reticle sim", result);
	free(cmd);
	if (err < 0) {
		cli_error("sim: -o %s: %s", path, rtl_strerror(err));
		return CLI_EXIT_FAIL;
	}
	return 0;
}

static int load_tool(struct rtl_sim *sim, char *spec)
{
	char *args = strchr(spec, ':');
	if (args)
		*args++ = 0;
	void *h = dlopen(spec, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		cli_error("cannot load tool %s: %s", spec, dlerror());
		return CLI_EXIT_FAIL;
	}
	rtl_sim_tool_init_fn init = (rtl_sim_tool_init_fn)dlsym(h, RTL_SIM_TOOL_INIT);
	if (!init) {
		cli_error("tool %s defines no %s()", spec, RTL_SIM_TOOL_INIT);
		return CLI_EXIT_FAIL;
	}
	if (init(sim, args ? args : "") < 0) {
		cli_error("tool %s failed to initialise", spec);
		return CLI_EXIT_FAIL;
	}
	return 0;
}

/* SIGINT, SIGTERM and SIGHUP stop the simulation at the next block
 * boundary: the tools report, the profile of the run so far is written,
 * and reticle exits 128 + the signal. A second one kills (SA_RESETHAND).
 * A signal ignored when reticle started stays ignored. */
static const int stop_signals[] = { SIGINT, SIGTERM, SIGHUP };
static struct rtl_sim *volatile running_sim;
static volatile sig_atomic_t stop_signal;

static void on_stop_signal(int sig)
{
	stop_signal = sig;
	if (running_sim)
		rtl_sim_interrupt(running_sim, sig);
}

static void catch_stop_signals(struct rtl_sim *sim, struct sigaction *old)
{
	struct sigaction sa = { 0 };
	sa.sa_handler = on_stop_signal;
	sa.sa_flags = SA_RESETHAND;   /* no SA_RESTART: a blocking host call returns at once */
	sigemptyset(&sa.sa_mask);
	running_sim = sim;
	for (size_t i = 0; i < sizeof stop_signals / sizeof *stop_signals; i++) {
		sigaction(stop_signals[i], NULL, &old[i]);
		if (old[i].sa_handler != SIG_IGN)
			sigaction(stop_signals[i], &sa, NULL);
	}
}

static void restore_stop_signals(const struct sigaction *old)
{
	for (size_t i = 0; i < sizeof stop_signals / sizeof *stop_signals; i++)
		sigaction(stop_signals[i], &old[i], NULL);
	running_sim = NULL;
}

static int disasm(const char *isa, const char *path)
{
	char *argv[] = { (char *)path, NULL };
	struct rtl_sim *sim;
	int err = rtl_sim_open(isa, 1, argv, NULL, &sim);

	if (err < 0) {
		cli_error("%s", *rtl_sim_message(sim) ? rtl_sim_message(sim) : rtl_strerror(err));
		rtl_sim_close(sim);
		return CLI_EXIT_FAIL;
	}
	for (const struct rtl_sim_proc *p = rtl_sim_first_proc(sim); p; p = rtl_sim_next_proc(sim, p)) {
		printf("\n%016llx <%s>:\n", (unsigned long long)rtl_sim_proc_addr(p), rtl_sim_proc_name(p));
		for (const struct rtl_sim_block *b = rtl_sim_first_block(sim, p); b; b = rtl_sim_next_block(sim, b)) {
			uint64_t a = rtl_sim_block_addr(b);
			while (a <= rtl_sim_last_insn(b)) {
				char buf[128];
				int n = rtl_sim_disasm(sim, a, buf, sizeof buf);
				printf("%8llx:\t%s\n", (unsigned long long)a, buf);
				a += n > 0 ? n : 2;
			}
		}
	}
	rtl_sim_close(sim);
	return 0;
}

int cmd_sim(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "isa", required_argument, 0, 'i' }, { "tool", required_argument, 0, 't' },
		{ "disasm", no_argument, 0, 'd' }, { "help", no_argument, 0, 'h' },
		{ "argv0", required_argument, 0, 'a' }, { "cache", required_argument, 0, 'K' },
		{ "strace", no_argument, 0, 'S' }, { 0, 0, 0, 0 },
	};
	const char *isa = NULL, *argv0 = NULL;
	char *tools = NULL, *sos[8];
	const char *profile = NULL;
	int nsos = 0, dis = 0, c, prof_result = 1;
	static struct caches caches;

	optind = 1;
	opterr = 0;   /* one message of our own below */
	while ((c = getopt_long(argc, argv, "+c:o:h", opts, NULL)) != -1) {
		switch (c) {
		case 'i': isa = optarg; break;
		case 'a': argv0 = optarg; break;
		case 'c':
			tools = optarg;
			if (!*tools || *tools == ',' || tools[strlen(tools) - 1] == ',' || strstr(tools, ",,")) {
				cli_error("sim: -c '%s': an empty tool name (-c TOOL[,TOOL...])", tools);
				return CLI_EXIT_USAGE;
			}
			break;
		case 'd': dis = 1; break;
		case 'S': setenv("RETICLE_SIM_STRACE", "1", 1); break;   /* read by the simulator's Linux layer */
		case 't':
			if (nsos == 8) {
				cli_error("at most 8 --tool options");
				return CLI_EXIT_USAGE;
			}
			if (!*optarg || *optarg == ':') {   /* dlopen("") is reticle itself */
				cli_error("sim: --tool '%s': no shared object named (--tool ./x.so[:ARGS])", optarg);
				return CLI_EXIT_USAGE;
			}
			sos[nsos++] = optarg;
			break;
		case 'o': profile = optarg; break;
		case 'K': {
			char why[256];
			if (caches.n == sizeof(caches.v) / sizeof(*caches.v)) {
				cli_error("sim: at most %zu --cache options", caches.n);
				return CLI_EXIT_USAGE;
			}
			if (rtl_cache_config_parse(optarg, &caches.v[caches.n], why, sizeof(why)) ||
			    rtl_cache_config_check(&caches.v[caches.n], why, sizeof(why))) {
				cli_error("sim: --cache %s: %s", optarg, why);
				return CLI_EXIT_USAGE;
			}
			caches.n++;
			break;
		}
		case 'h': usage(stdout); return 0;
		default:
			cli_error("sim: unknown option or missing argument '%s' (try 'reticle sim --help')",
				  argv[optind - 1]);
			return CLI_EXIT_USAGE;
		}
	}
	if (optind >= argc || !*argv[optind]) {
		cli_error("sim: no program given (try 'reticle sim --help')");
		return CLI_EXIT_USAGE;
	}
	if (dis)
		return disasm(isa, argv[optind]);
	if (profile && !cli_output_writable("sim", profile))   /* before the program runs, not after */
		return CLI_EXIT_FAIL;

	/* the guest may close or replace its fds 0-2 ('uniq FILE' closes 0 to
	 * open FILE there): reticle's own messages keep to the stderr it got */
	int own_fd = fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 10);
	FILE *own = own_fd >= 0 ? fdopen(own_fd, "w") : NULL;
	if (own) {
		setvbuf(own, NULL, _IONBF, 0);
		stderr = own;
	}
	struct rtl_sim *sim;
	const char *path = argv[optind];
	if (argv0)
		argv[optind] = (char *)argv0;
	int err = rtl_sim_open_program(isa, path, argc - optind, argv + optind, environ, &sim), status = 0;
	if (err < 0) {
		cli_error("%s", *rtl_sim_message(sim) ? rtl_sim_message(sim) : rtl_strerror(err));
		rtl_sim_close(sim);
		return CLI_EXIT_FAIL;
	}
	if (profile && (err = add_profile(sim, profile, argc - optind, argv + optind, &prof_result)))
		goto out;
	if (caches.n && !(tools && strstr(tools, "memtrace"))) {
		cli_error("sim: --cache sets the memtrace tool: add it (-c memtrace)");
		err = CLI_EXIT_USAGE;
		goto out;
	}
	if (tools && (err = add_tools(sim, tools, &caches)))
		goto out;
	for (int i = 0; i < nsos; i++)
		if ((err = load_tool(sim, sos[i])))
			goto out;
	fflush(stdout);
	struct sigaction old_sig[sizeof stop_signals / sizeof *stop_signals];
	catch_stop_signals(sim, old_sig);
	int run = rtl_sim_run(sim, &status);
	restore_stop_signals(old_sig);
	if (run == -EINTR) {   /* stopped by a signal: the profile holds the run so far */
		cli_error("sim: %s", rtl_sim_message(sim));
		err = 128 + stop_signal;
		if (profile && !prof_result)
			cli_error("sim: the profile of the run so far is in %s", profile);
	} else if (run < 0) {
		cli_error("sim: %s", rtl_sim_message(sim));
		err = CLI_EXIT_FAIL;
	} else {
		if (status > 128 && *rtl_sim_message(sim))
			cli_error("sim: %s", rtl_sim_message(sim));   /* the guest died of a signal */
		err = status;
	}
	if (profile && prof_result < 0) {   /* 1: a forked child, whose parent writes it */
		cli_error("sim: no profile written to %s: %s", profile, rtl_strerror(prof_result));
		if (!err)
			err = CLI_EXIT_FAIL;
	}
out:
	rtl_sim_close(sim);
	return err;
}
