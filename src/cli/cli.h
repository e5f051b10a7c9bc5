/* Shared helpers of the command-line driver. Only the CLI prints and exits. */
#ifndef RETICLE_CLI_H
#define RETICLE_CLI_H

#include <stddef.h>
#include <stdio.h>

#define X(name, fn, summary) int fn(int argc, char **argv);
#include "commands.def"
#undef X

/* Prints "reticle: MESSAGE" to stderr. */
void cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* --debug-dir DIR: DIR searched first for separate debug files (before
 * $RETICLE_DEBUG_DIR and /usr/lib/debug). 0, or -1 after a message. */
int cli_add_debug_dir(const char *dir);

/* --collector SPEC (PATH[:ARGS]): loads the plug-in, checks its plan and
 * that its name is none of TAKEN's (NTAKEN of them). 0 and *OUT, or an
 * exit status after a message. */
struct rtl_collector;
int cli_load_collector(const char *spec, const struct rtl_collector *const *taken, size_t ntaken,
		       const struct rtl_collector **out);

/* Whether the profile can be written at PATH (NULL: reticle.PID.db here),
 * before anything runs; prints why not, as command CMD. */
#include <stdbool.h>
bool cli_output_writable(const char *cmd, const char *path);
/* Why a file could not be created at PATH (errno ERR): strerror's words,
 * or that its directory is on one of the kernel's file systems (/proc,
 * /sys), where ENOENT and EACCES tell nothing true. A static buffer. */
const char *cli_create_error(const char *path, int err);

/* --freq ARG (samples per second, 1 to 1,000,000) into *FREQ: 0, or -1
 * after a message as command CMD. */
int cli_parse_freq(const char *cmd, const char *arg, unsigned *freq);

/* The warm-start cache: $RETICLE_CACHE_DIR, $XDG_CACHE_HOME/reticle or
 * $HOME/.cache/reticle (malloc'd; NULL when none is set), and the bytes
 * it may hold ($RETICLE_CACHE_MAX_MB; 0: the library's default). */
#include <stdint.h>
char *cli_warm_cache_dir(void);
uint64_t cli_cache_max_bytes(void);
/* The pid of PID's tracer (/proc/PID/status): 0 for none, -1 when there
 * is no such process. */
#include <sys/types.h>
long cli_tracer_pid(pid_t pid);
/* After a failed rtl_session_attach of PID (ERR) by command CMD: says why
 * (the tracer, Yama's scope) and returns the exit status. */
int cli_attach_error(const char *cmd, long pid, int err, bool sampling);
/* Like a shell waiting for its job, from now on: the signals (TERM, HUP,
 * INT, QUIT, USR1, USR2) some process sends to reticle alone (kill,
 * sigqueue) go on to process PID, the launched program, which decides what
 * they do; those the kernel sent (a terminal's ^C, ^\\ or hang-up) went to
 * the whole foreground job, the program included, and are not sent twice.
 * reticle itself goes on until the program ends. */
void cli_forward_signals(pid_t pid);
/* An attached session S ends cleanly, the process left as it was, at the
 * signals that would kill reticle with its patches in place: TERM, HUP
 * (its terminal closed), QUIT; INT with CLI_STOP_INT (not where Ctrl-C is
 * the program's); PIPE with CLI_STOP_PIPE (the reader of the results gone:
 * top PID | head), else PIPE is ignored (a closed stderr loses messages,
 * not the run). Set before the attach, which they also stop. NULL: the
 * session is gone (the signals then only set cli_stop_asked). */
enum { CLI_STOP_INT = 1, CLI_STOP_PIPE = 2 };
struct rtl_session;
void cli_stop_on_signals(struct rtl_session *s, unsigned also);
/* Whether one of those signals came. */
bool cli_stop_asked(void);
/* After a failed rtl_session_launch of PROGRAM: says why and returns the
 * exit status (127 not found, 126 not runnable, as shells do). */
int cli_launch_error(const char *program, int err);
/* The collectors of LIST ("fcount,shim:1000,..."), at most MAX_COLLECTORS,
 * each once, into OUT; their options (shim:PERIOD, calltime:all) into *O.
 * 0, or an error said (CMD names the command). */
enum { MAX_COLLECTORS = 16 };
struct cli_collector_opts {
	unsigned shim_period;     /* 0: the default */
	bool time_all_calls;      /* calltime:all */
};
int cli_parse_collectors(const char *cmd, const char *list, const struct rtl_collector **out, size_t *n,
			 struct cli_collector_opts *o);
/* reticle run --debug-on-fault: the debugger's prompt at a fault signal
 * (cmd_debug.c). 0, or -1 said (no terminal). */
struct rtl_session;
int cli_debug_on_fault(struct rtl_session *s);

/* A list of paths (binaries), without duplicates; the executable
 * mappings of process PID into it. */
struct cli_paths {
	char **v;
	size_t n;
};
void cli_paths_add(struct cli_paths *p, const char *path);
void cli_paths_free(struct cli_paths *p);
void cli_process_modules(long pid, struct cli_paths *out);

/* reticle probe's control socket (cmd_ctl.c), named by the measured
 * process's PID: its path (MAKE_DIR: its directory made, 0700); a
 * listening socket on it (the fd, or -err); requests served, without
 * waiting, from the session's tick (clauses added checked against PID's
 * binaries). */
struct rtl_session;
int ctl_socket_path(long pid, char *buf, size_t len, bool make_dir);
int ctl_listen(long pid, char *path, size_t len);
void ctl_serve(int fd, struct rtl_session *s, long pid);
/* Sends request REQ to the session of PID and reads its whole answer
 * (malloc'd, in *ANSWER), waiting up to WAIT_MS for each part of it (-1:
 * as long as it takes): 0, or -err (-ENOENT, -ECONNREFUSED: no session). */
int ctl_ask(long pid, const char *req, int wait_ms, char **answer);

/* Exit status for usage errors and for failures of reticle itself. */
enum { CLI_EXIT_USAGE = 2, CLI_EXIT_FAIL = 1 };

#endif
