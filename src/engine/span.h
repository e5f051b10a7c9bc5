/* The run's context: which functions are measured (scope) and between
 * which two edges their counts are taken (span). rtl_session_opts's
 * modules, functions, from and to; docs/contexts.md.
 *
 * A span is made of counter snapshots: at its start edge every counter of
 * the process (and its arc table) is copied, at its stop edge again; the
 * profile holds the differences. Edges are seen per process: a time, the
 * first call of a function (at its entry trap, exact for the calling
 * thread), or the first fork, exec, dlopen or signal of the process. */
#ifndef RETICLE_ENGINE_SPAN_H
#define RETICLE_ENGINE_SPAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <reticle/binary.h>

struct proc;
struct module;
struct arcs;
struct rtl_session;

enum span_kind { SPAN_NONE, SPAN_TIME, SPAN_CALL, SPAN_FORK, SPAN_EXEC, SPAN_DLOPEN, SPAN_SIGNAL };

struct span_edge {
	uint8_t kind;          /* enum span_kind; SPAN_NONE: the process's start (or end) */
	bool relative;         /* SPAN_TIME of a stop edge: after the start edge */
	int signo;             /* SPAN_SIGNAL: 0 for any but SIGTRAP */
	uint64_t ns;           /* SPAN_TIME */
	char *function;        /* SPAN_CALL */
};

/* What the session measures: its scope and its span (owned). */
struct span_def {
	char **modules, **functions;   /* NULL-ended globs, NULL for all */
	struct span_edge from, to;
	size_t started;        /* process images that reached the start edge */
	size_t matched;        /* functions of loaded modules in the scope */
};

/* Parses rtl_session_opts's strings into D. 0, or -RTL_ERR_BAD_OPTION
 * with *WHY saying what is wrong. */
int span_def_init(struct span_def *d, const char *const *modules, const char *const *functions,
		  const char *from, const char *to, const char **why);
void span_def_free(struct span_def *d);
/* Whether D restricts anything (a scope or an edge). */
bool span_def_any(const struct span_def *d);
bool span_def_has_time(const struct span_def *d);

/* Scope: whether module PATH is measured, and function F of it. */
bool span_module_in_scope(const struct span_def *d, const char *path);
bool span_function_in_scope(const struct span_def *d, const char *path, const rtl_function *f);
/* Marks M's functions out of scope (kept from being armed) and those
 * whose first call is an edge (kept armed until it, not relocated ahead),
 * before M is armed. */
void span_mark_module(struct proc *p, struct module *m);

/* Per process. */
enum span_state { SPAN_BEFORE, SPAN_INSIDE, SPAN_AFTER };   /* struct proc_span's (space.h) */

/* P's span as it begins: after the edge of its parent image (PARENT
 * state, or -1 for a launch), an exec image (EXEC). */
void span_proc_start(struct proc *p, int parent_state, bool exec);
void span_proc_free(struct proc *p);
/* Event KIND (fork, exec, dlopen, signal SIGNO) in P. */
void span_event(struct proc *p, enum span_kind kind, int signo);
/* An armed entry at run-time ADDR of M trapped: a call edge's? */
void span_first_call(struct proc *p, struct module *m, uint64_t addr);
/* Time edges of every process of S, NOW_NS on the session clock. */
void span_tick(struct proc *const *procs, size_t n, uint64_t now_ns);
/* The count of the counter at run-time ADDR within P's span. */
uint64_t span_count(struct proc *p, uint64_t addr);
/* arcs_collect within P's span. */
int span_arcs(struct proc *p, struct arcs *out);
/* At the session's end: says so when no process reached the start edge. */
void span_check_started(const struct span_def *d);
/* Edge E as the options write it, in BUF. */
const char *span_edge_text(const struct span_edge *e, char *buf, size_t len);

#endif
