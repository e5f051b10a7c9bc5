/* Collectors: each measurement is a module written against this interface.
 *
 * A collector plans the snippets it needs at the points of each function
 * the engine relocates (reticle/probe.h); the engine compiles them inline
 * into the copy. When a process image ends (exit, crash, exec) the engine
 * calls finish() once per measured function, with what the snippets
 * counted, and the collector writes what it measures into the profile. */
#ifndef RETICLE_COLLECTOR_H
#define RETICLE_COLLECTOR_H

#include <reticle/api.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <reticle/probe.h>
#include <reticle/profile.h>

struct rtl_block_view {
	uint64_t addr;        /* link-time address */
	uint32_t ninstrs;
	uint64_t count;       /* executions (0 where no collector counts the block) */
	/* Iterations of its rep-prefixed string instructions beyond the one
	 * execution COUNT already holds (valgrind counts each iteration). */
	uint64_t rep_iterations;
};

struct rtl_call_view {
	uint64_t site;        /* link-time address of the call instruction */
	/* profile id of the callee (through a PLT stub: of the function the
	 * stub's slot was bound to), or -1 if unknown */
	int64_t callee;
	uint32_t block;       /* index in blocks[] of the block the call ends */
};

/* The calls of an indirect call site to one target (RTL_POINT_INDIRECT_TARGET). */
struct rtl_target_view {
	uint64_t site;        /* link-time address of the call instruction */
	int64_t callee;       /* profile id of the function the target is in, or -1 */
	uint64_t target;      /* link-time address in the callee's module (run-time with no callee) */
	uint64_t count;
};

/* The function's timer in one thread (RTL_PRIM_TIMER_START/STOP), or a
 * numbered one (struct rtl_snippet's id) in rtl_image_view. */
struct rtl_timer_view {
	int tid;              /* the thread (a process's first one: its pid) */
	uint64_t calls;
	double inclusive;     /* seconds from entries to exits, outermost frames only */
	double exclusive;     /* seconds less the time of the timed functions it called */
	uint32_t id;          /* a numbered timer's number; 0: the function's own */
};

/* A process image as finish_image() sees it, once its functions are
 * finished. Valid during the call only. */
struct rtl_image_view {
	int pid;
	double tsc_hz;        /* the rate of the TSC that timed it (hist of latencies in ticks) */
	/* the numbered timers that counted calls, per thread, by id then tid */
	const struct rtl_timer_view *timers;
	size_t ntimers;
};

/* One node of a thread's calling-context tree whose function is the one
 * finish() sees (RTL_PRIM_TIMER_START places every timed call in its
 * thread's tree): the path of timed calls from the thread's start to it. */
struct rtl_context_view {
	int tid;
	uint64_t id;          /* unique in the profile */
	uint64_t parent;      /* the caller's context, 0 at a root of the tree */
	uint64_t calls;
	double inclusive;     /* seconds from entries to exits */
	double exclusive;     /* less the time of the timed calls it made */
};

/* One measured function, as finish() sees it. Valid during the call only. */
struct rtl_function_view {
	int64_t id;           /* row id in the profile's functions table */
	const char *module;
	const char *name;
	uint64_t addr, size;  /* link-time */
	uint64_t entries;     /* entry counter (0 where no collector counts entries) */
	const struct rtl_block_view *blocks;
	size_t nblocks;
	const struct rtl_call_view *calls;
	size_t ncalls;
	/* every snippet's result (all collectors'), sorted by address then kind */
	const struct rtl_counter_view *counters;
	size_t ncounters;
	/* indirect calls' targets, by site, then callee and target */
	const struct rtl_target_view *targets;
	size_t ntargets;
	/* RTL_PRIM_COUNT_BY's values, by address, kind, id, then key */
	const struct rtl_key_view *keys;
	size_t nkeys;
	/* its timer, per thread that called it, by thread */
	const struct rtl_timer_view *timers;
	size_t ntimers;
	/* its contexts, by thread then id */
	const struct rtl_context_view *contexts;
	size_t ncontexts;
};

struct rtl_call_event;

struct rtl_collector {
	const char *name;
	const char *summary;
	/* Plans snippets at the points of CFG (rtl_plan_add). Called once per
	 * relocated function, possibly from another thread: it must depend on
	 * CFG only. Returns 0 or -err. NULL: no probes. */
	int (*plan)(const struct rtl_function_cfg *cfg, rtl_plan *plan);
	/* Writes this collector's measurements of F into P. Returns 0 or -err. */
	int (*finish)(const struct rtl_function_view *f, rtl_profile *p);
	/* Its plans use timers (RTL_PRIM_TIMER_START/STOP): the engine gives
	 * every thread an area for them. */
	bool timers;
	/* A plug-in whose plans depend on more than its name and its file
	 * (its arguments): a string that differs when they do. Copies saved
	 * for the warm start are kept per set of collectors, names and keys.
	 * NULL for none. */
	const char *plan_key;
	/* Writes what this collector measures of a whole process image (its
	 * numbered timers), after finish() of its functions. NULL: nothing. */
	int (*finish_image)(const struct rtl_image_view *v, rtl_profile *p);
	/* An RTL_PRIM_CALL snippet ran (the thread is stopped meanwhile, in the
	 * session's thread): every collector's on_call sees every one, and
	 * takes those whose ids it planned. NULL: none. (API 3) */
	void (*on_call)(const struct rtl_call_event *ev);
};

/* What an RTL_PRIM_CALL snippet passes to on_call. */
struct rtl_call_event {
	pid_t pid, tid;
	const char *module;       /* the function's; valid during the call */
	const char *name;
	uint64_t addr;            /* link-time address of the point (the entry, or the ret) */
	uint8_t kind;             /* enum rtl_point_kind: RTL_POINT_ENTRY or RTL_POINT_EXIT */
	uint32_t id;              /* the snippet's */
	int64_t args[6];          /* the integer argument registers (rdi, rsi, rdx, rcx, r8, r9) */
	int64_t retval;           /* rax: at an exit, the return value */
};

/* Plug-ins: a shared object built against these headers (examples/
 * collectors/ has one), loaded by `reticle run --collector ./x.so[:ARGS]`,
 * defines
 *     const struct rtl_collector *rtl_collector_entry(int api, const char *args);
 * which returns its collector, or NULL after printing why to stderr (bad
 * ARGS; an API it was not built for: API is RTL_COLLECTOR_API of the
 * reticle that loads it). Its name must differ from every other
 * collector's. The plug-in calls the public rtl_ API (rtl_plan_add, the
 * rtl_profile_add_* functions, rtl_profile_add_metric for measures of its
 * own), which the reticle executable exports. */
#define RTL_COLLECTOR_API 3   /* 2: snippets with ids and predicates; 3: on_call */
#define RTL_COLLECTOR_ENTRY "rtl_collector_entry"
typedef const struct rtl_collector *(*rtl_collector_entry_fn)(int api, const char *args);

/* Checks C before a run: its plan() on a made-up function with a block of
 * every kind must succeed, and plan timers only if C sets timers. Returns
 * 0, or the error and *WHY, a sentence saying what is wrong. */
RTL_API int rtl_collector_check(const struct rtl_collector *c, const char **why);

/* The shared counter (id 0) of point KIND at link-time ADDR among V (N of
 * them, sorted as rtl_function_view's counters are: by address, kind,
 * id), or NULL. */
RTL_API const struct rtl_counter_view *rtl_counter_find(const struct rtl_counter_view *v, size_t n,
						enum rtl_point_kind kind, uint64_t addr);

/* The collectors built into libreticle, and lookup by name. */
RTL_API const struct rtl_collector *rtl_collector_find(const char *name);
RTL_API size_t rtl_collector_count(void);
RTL_API const struct rtl_collector *rtl_collector_at(size_t i);

#endif
