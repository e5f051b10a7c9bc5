/* The debugger's side of a session (reticle debug, run --debug-on-fault).
 *
 * A debugger cannot share its target with reticle (one tracer per task),
 * so reticle is the debugger: the program runs instrumented, in its
 * copies, and a breakpoint is an int3 written into the copy of the
 * instruction it names (into every copy made of it, now and later). A
 * stop calls the session's debug callback on the event loop's thread with
 * the thread stopped; the other threads run on. Addresses given to and
 * returned by these functions are the program's own (original) ones;
 * where a thread is in a copy, both are told. */
#ifndef RETICLE_ENGINE_DEBUG_H
#define RETICLE_ENGINE_DEBUG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct rtl_session;
struct proc;
struct module;

enum debug_why {
	DEBUG_START,   /* the program's first instruction, before it runs */
	DEBUG_BREAK,   /* a breakpoint (.bp) */
	DEBUG_FAULT,   /* a fault signal (.sig) about to be delivered */
};

struct debug_stop {
	enum debug_why why;
	pid_t pid, tid;
	int bp;        /* DEBUG_BREAK: its number */
	int sig;       /* DEBUG_FAULT */
};

typedef void (*debug_fn)(void *ctx, struct rtl_session *s, const struct debug_stop *st);

/* Calls FN at the session's stops (FAULTS_ONLY: at fault signals only). */
int debug_attach_to_session(struct rtl_session *s, debug_fn fn, void *ctx, bool faults_only);

/* A breakpoint at function FUNC's entry (a shell pattern, names as
 * `reticle probe` takes them: demangled too) or, FUNC NULL, at original
 * address ADDR of the main process. Its number in *ID. */
int debug_break_add(struct rtl_session *s, const char *func, uint64_t addr, int *id);
int debug_break_delete(struct rtl_session *s, int id);
/* Breakpoint I (0..): its number, what it names, hits, places written. */
bool debug_break_info(struct rtl_session *s, size_t i, int *id, const char **func, uint64_t *addr,
		      unsigned *hits, size_t *sites);

/* Memory of PID (original addresses read what the program reads: int3s
 * of pending first calls hidden). */
int debug_read(struct rtl_session *s, pid_t pid, uint64_t addr, void *buf, size_t len);
/* The original address of PC (itself when not in a copy; 0 in a copy's
 * own code between two instructions) and "FUNC+OFF (module)" in DESC. */
uint64_t debug_where(struct rtl_session *s, pid_t pid, uint64_t pc, char *desc, size_t len);
/* Runs stopped thread TID for one instruction (of the copy it is in);
 * a first call's trap on the way is served. *SIG: a signal it met. */
int debug_stepi(struct rtl_session *s, pid_t tid, int *sig);
/* One original instruction of TID, a call run to its return: 0 when
 * stepped (as debug_stepi), 1 when the thread must run on to a stop at
 * the return point (a DEBUG_BREAK of breakpoint 0). */
int debug_nexti(struct rtl_session *s, pid_t tid, int *sig);
/* The thread's call stack, original addresses (frame 0 its pc). */
size_t debug_backtrace(struct rtl_session *s, pid_t tid, uint64_t *frames, size_t max);
/* Function FUNC (a pattern, NULL: the one at original address PC) of PID:
 * its original range and, when it has one, its copy's. */
int debug_function(struct rtl_session *s, pid_t pid, const char *func, uint64_t pc, const char **name,
		   uint64_t *orig, size_t *size, uint64_t *copy, size_t *copy_len);
/* The copy address of original instruction ORIG of the function at
 * original FN_ORIG, or 0. */
uint64_t debug_copy_of(struct rtl_session *s, pid_t pid, uint64_t fn_orig, uint64_t orig);

/* The engine's calls. */
bool debug_on(const struct rtl_session *s);
void debug_start(struct rtl_session *s, struct proc *p, pid_t tid);
/* A stop at an int3 (PC past it): whether it was a breakpoint's. */
bool debug_trap(struct rtl_session *s, struct proc *p, pid_t tid, uint64_t pc);
void debug_fault(struct rtl_session *s, struct proc *p, pid_t tid, int sig);
/* Function K of M got a copy: breakpoints naming it are written into it. */
void debug_relocated(struct proc *p, struct module *m, size_t k);
void debug_free(struct rtl_session *s);

#endif
