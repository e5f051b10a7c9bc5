/* Probes: points, primitives and a plan per function.
 *
 * The model of Paradyn's dynamic instrumentation ("Dynamic Program
 * Instrumentation for Scalable Performance Tools", sections 2-4) and of
 * Caliper's in-line probes: a point is a place in a function's code (its
 * entry, a basic block, one direction of a conditional branch); a primitive
 * is what runs there; a snippet is a primitive, compiled inline into the
 * relocated copy of the function. A collector plans, for each function the
 * engine relocates, which snippets go at which points (struct rtl_collector's
 * plan()); at the end it reads back what they counted (rtl_function_view's
 * counters).
 *
 * Implemented today: the primitive "add 1 to a counter of its own" at the
 * points RTL_POINT_ENTRY, RTL_POINT_BLOCK, RTL_POINT_REP_ITERATIONS (adds
 * the iterations of the block's rep string instructions instead of 1),
 * RTL_POINT_BRANCH_TAKEN, RTL_POINT_BRANCH_NOT_TAKEN, RTL_POINT_BACK_EDGE
 * (a branch or jump back to a block of the same function, counted when it
 * jumps: a loop's iterations), RTL_POINT_CALL_BEFORE
 * (a direct or indirect call), RTL_POINT_EXIT (a return), and
 * RTL_POINT_INDIRECT_TARGET at an indirect call, where it counts each
 * target apart (finish() sees them in rtl_function_view's targets).
 *
 * And the function's timer, per thread: RTL_PRIM_TIMER_START at its entry,
 * RTL_PRIM_TIMER_STOP at its returns (rtl_plan_time_function plans both).
 * It counts calls and TSC time, inclusive and exclusive, as Paradyn's
 * timers do (a recursive function's inclusive time counts its outermost
 * frames once). Entries and exits pair by the stack pointer: a frame left
 * without a return (a tail call, longjmp, a C++ exception) is closed at the
 * next entry or return of its thread that shows it was left; one still
 * open when its thread ends is closed then. finish() sees the timers in
 * rtl_function_view's timers.
 *
 * And memory tracing: RTL_PRIM_BUFFER_APPEND at RTL_POINT_MEMORY (a block's
 * address: every data access of its instructions) appends a record of the
 * access to the thread's buffer, which the engine drains
 * (rtl_plan_trace_memory; the memtrace collector).
 *
 * And snippets with an identity and predicates (struct rtl_snippet): a
 * counter of its own, or a timer that starts only where they hold, at a
 * function's entry or exits (the probe language: docs/probe.md).
 *
 * Other points and primitives are declared so that a plan can name them;
 * asking for one returns -RTL_ERR_UNSUPPORTED. Two collectors asking for
 * the same snippet at the same point share one counter (or timer). */
#ifndef RETICLE_PROBE_H
#define RETICLE_PROBE_H

#include <reticle/api.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum rtl_point_kind {
	RTL_POINT_ENTRY = 0,        /* function entry; addr = the function's */
	RTL_POINT_BLOCK,            /* start of a basic block; addr = the block's */
	RTL_POINT_REP_ITERATIONS,   /* rep string instructions of a block; addr = the block's */
	RTL_POINT_BRANCH_TAKEN,     /* a conditional branch jumps; addr = the branch's */
	RTL_POINT_BRANCH_NOT_TAKEN, /* ... falls through */
	RTL_POINT_CALL_BEFORE = 6,  /* before a call instruction; addr = the call's */
	RTL_POINT_INDIRECT_TARGET = 8, /* each target of an indirect call; addr = the call's */
	RTL_POINT_EXIT = 5,         /* a return; addr = the ret instruction's */
	RTL_POINT_BACK_EDGE = 10,   /* a branch or jump to a block at or before it in the
				     * same function (rtl_cfg_back_edge): counts when it
				     * jumps; addr = the branch's */
	RTL_POINT_CALL_AFTER = 7,   /* where a call returns to; addr = the call's
				     * (RTL_PRIM_SLOT_SET only) */
	/* the data accesses of a block's instructions (RTL_PRIM_BUFFER_APPEND
	 * only); addr = the block's */
	RTL_POINT_MEMORY = 9,
	RTL_POINT_KIND_COUNT = 11
};

/* How a basic block ends. */
enum rtl_block_end {
	RTL_END_FALL = 0,     /* falls into the next block (the next is a branch target) */
	RTL_END_BRANCH,       /* conditional branch (jcc, loop, jrcxz) */
	RTL_END_JUMP,         /* direct jump */
	RTL_END_INDIRECT_JUMP,
	RTL_END_CALL,         /* direct call */
	RTL_END_INDIRECT_CALL,
	RTL_END_RETURN,
	RTL_END_STOP,         /* ud2, hlt, int3 */
};

struct rtl_cfg_block {
	uint64_t addr;        /* link-time address of its first instruction */
	uint64_t last;        /* link-time address of its last instruction */
	uint32_t ninstrs;
	uint8_t end;          /* enum rtl_block_end */
	uint64_t target;      /* direct branch, jump or call target (link-time), 0 if none */
};

/* A function as a collector plans it: its blocks in address order. Valid
 * during plan() only. */
struct rtl_function_cfg {
	const char *module;   /* path of its binary */
	const char *name;
	uint64_t addr, size;  /* link-time */
	const struct rtl_cfg_block *blocks;
	size_t nblocks;
};

enum rtl_primitive {
	RTL_PRIM_COUNT = 0,   /* add 1 (the iterations at RTL_POINT_REP_ITERATIONS) */
	/* the function's timer: at RTL_POINT_ENTRY only. In a leaf (no call,
	 * no jump out), past its first 256 calls in a thread, about one call
	 * in 16 is timed and the others' time estimated when the thread's
	 * times are kept (rtl_session_opts.time_all_calls: every one) */
	RTL_PRIM_TIMER_START,
	RTL_PRIM_TIMER_STOP,  /* ... at RTL_POINT_EXIT only */
	/* the thread's signal slot := the function (its copy's entry), at
	 * RTL_POINT_ENTRY and RTL_POINT_CALL_AFTER only: one store, read by
	 * the shim collector's observer thread; needs the collector's timers
	 * flag (the per-thread areas) */
	RTL_PRIM_SLOT_SET,
	/* a record {address accessed, access} appended to the thread's trace
	 * buffer for each data access (load, store or both), before the
	 * instruction runs: at RTL_POINT_MEMORY only; needs the collector's
	 * timers flag (the per-thread areas). The engine drains the buffers
	 * (the memtrace collector: docs/engine.md) */
	RTL_PRIM_BUFFER_APPEND,
	/* the block's instructions subtracted from the thread's interval
	 * countdown; when that passes zero the engine ends an interval (the
	 * bbv collector): at RTL_POINT_BLOCK only, with timers set */
	RTL_PRIM_COUNTDOWN,
	/* the collector's on_call (reticle/collector.h) called with the
	 * thread's arguments (and return value), at RTL_POINT_ENTRY or
	 * RTL_POINT_EXIT, with an id: the slow path, a trap into reticle per
	 * call (behind predicates, only when they hold) */
	RTL_PRIM_CALL,
	/* add 1 to the count of the value of an operand (struct rtl_snippet's
	 * KEY: its operand, size and sign; its cmp and value unused), at
	 * RTL_POINT_ENTRY or RTL_POINT_EXIT, with an id: finish() sees the
	 * values in rtl_function_view's keys. Values are kept to 47 bits,
	 * signed (-2^46 to 2^46-1); beyond, they wrap. */
	RTL_PRIM_COUNT_BY,
};

/* What a predicate reads (Paradyn's predicates, seed 001 section 3). */
enum rtl_operand {
	RTL_OPND_ARG = 1,     /* integer argument INDEX (0-5: rdi, rsi, rdx, rcx, r8, r9) */
	RTL_OPND_RETVAL,      /* the return value (rax): at RTL_POINT_EXIT only */
	RTL_OPND_GLOBAL,      /* SIZE bytes at link-time address WHERE of the function's module */
	RTL_OPND_ONSTACK,     /* frames of timer WHERE (a snippet's id) open on the thread's stack */
	/* at RTL_POINT_EXIT: TSC ticks since the entry of this frame of the
	 * function, as numbered timer WHERE started it; -1 where that timer
	 * has no frame here (its start's predicates failed) */
	RTL_OPND_LATENCY,
	/* general register INDEX (0 rax, 1 rcx, 2 rdx, 3 rbx, 5 rbp, 6 rsi,
	 * 7 rdi, 8-15 r8-r15; not 4, rsp) at the point: the arguments of
	 * other calling conventions (Go's: rax, rbx, rcx, rdi, rsi, r8 ...) */
	RTL_OPND_REG,
};

enum rtl_cmp { RTL_CMP_EQ = 0, RTL_CMP_NE, RTL_CMP_LT, RTL_CMP_LE, RTL_CMP_GT, RTL_CMP_GE };

/* "OPERAND CMP VALUE": the operand read as SIZE bytes (1, 2, 4 or 8),
 * sign-extended (zero-extended with UNSIGNED, which also makes the
 * comparison unsigned). */
struct rtl_predicate {
	uint8_t operand;      /* enum rtl_operand */
	uint8_t index;        /* RTL_OPND_ARG */
	uint8_t size;
	uint8_t cmp;          /* enum rtl_cmp */
	bool is_unsigned;
	/* as RTL_PRIM_COUNT_BY's key: counted by power of two, the key being
	 * 0 for 0, K+1 for [2^K, 2^(K+1)), -1 below 0 */
	bool log2;
	uint64_t where;       /* RTL_OPND_GLOBAL, RTL_OPND_ONSTACK */
	int64_t value;
	/* The tests of a snippet's predicates form alternatives: the tests up
	 * to one with OR_AFTER set must all hold, or those of the next
	 * alternative (a || b && c is a, then b and c). Not for a key. */
	bool or_after;
};

/* Snippet ids go to 65535; a numbered timer's number to 255 (the timers
 * below it in every thread area are kept for them). */
enum { RTL_MAX_PREDICATES = 8, RTL_MAX_SNIPPET_ID = 65535, RTL_MAX_TIMER_ID = 255 };

/* A snippet. With ID 0 it is shared: two collectors asking for OP at one
 * point get one counter (or timer). A snippet with an ID of its own
 * (1..RTL_MAX_SNIPPET_ID) gets its own counter, reported with its ID
 * (rtl_counter_view), and may carry predicates, which must all hold for it
 * to run (or all of one alternative: rtl_predicate's or_after); such snippets are RTL_PRIM_COUNT at RTL_POINT_ENTRY or
 * RTL_POINT_EXIT, or RTL_PRIM_TIMER_START at RTL_POINT_ENTRY, where the ID
 * is a numbered timer's number: functions that start one timer share it
 * (its inclusive time is the time any of them is on the stack; a
 * collector's finish_image() reads it), and RTL_OPND_ONSTACK reads its
 * open frames. A function may start several numbered timers besides its
 * own; RTL_PRIM_TIMER_STOP at its exits stops them all. Copies with such
 * snippets are made for the run only (not saved for the warm start). */
struct rtl_snippet {
	enum rtl_primitive op;
	uint32_t id;
	const struct rtl_predicate *pred;
	size_t npred;
	const struct rtl_predicate *key;   /* RTL_PRIM_COUNT_BY */
};

typedef struct rtl_plan rtl_plan;

/* Puts snippet S at point KIND/ADDR of the function being planned. Returns
 * 0, -EINVAL where ADDR is no such point of the function (a block's address
 * that is not one, a branch address of a block that does not end in a
 * conditional branch), or -RTL_ERR_UNSUPPORTED for a point kind or a
 * primitive not implemented. Plans must depend on the cfg only: the engine
 * may plan in another thread and keeps copies across runs. */
RTL_API int rtl_plan_add(rtl_plan *plan, enum rtl_point_kind kind, uint64_t addr, const struct rtl_snippet *s);

/* rtl_plan_add with RTL_PRIM_COUNT at every block, at every conditional
 * branch (both ways), or at the entry: the common plans in one call. */
RTL_API int rtl_plan_count_blocks(const struct rtl_function_cfg *cfg, rtl_plan *plan);
RTL_API int rtl_plan_count_branches(const struct rtl_function_cfg *cfg, rtl_plan *plan);
RTL_API int rtl_plan_count_entry(const struct rtl_function_cfg *cfg, rtl_plan *plan);
/* Whether block B of CFG ends in a back-edge: a conditional branch or a
 * jump to a block at or before it in the same function (a loop's). */
RTL_API bool rtl_cfg_back_edge(const struct rtl_function_cfg *cfg, const struct rtl_cfg_block *b);
/* A counter on every back-edge: each loop's iterations. */
RTL_API int rtl_plan_count_back_edges(const struct rtl_function_cfg *cfg, rtl_plan *plan);
/* A counter before every call, and the targets of every indirect call. */
RTL_API int rtl_plan_count_calls(const struct rtl_function_cfg *cfg, rtl_plan *plan);

/* The function's timer: started at its entry, stopped at every return. */
RTL_API int rtl_plan_time_function(const struct rtl_function_cfg *cfg, rtl_plan *plan);

/* A counter and the interval countdown at every block (basic-block
 * vectors). */
RTL_API int rtl_plan_count_intervals(const struct rtl_function_cfg *cfg, rtl_plan *plan);
/* A record of every data access of every block (RTL_POINT_MEMORY). */
RTL_API int rtl_plan_trace_memory(const struct rtl_function_cfg *cfg, rtl_plan *plan);

/* The thread's signal: the function at its entry and again after each of
 * its calls returns (SHIM's software signal: what runs now). */
RTL_API int rtl_plan_signal_function(const struct rtl_function_cfg *cfg, rtl_plan *plan);

/* What RTL_PRIM_COUNT_BY counted: one value of its key, as finish() sees it. */
struct rtl_key_view {
	uint8_t kind;         /* enum rtl_point_kind */
	uint32_t id;          /* the snippet's */
	uint64_t addr;        /* link-time address of the point */
	int64_t key;
	uint64_t count;
};

/* What a snippet counted, as finish() sees it. */
struct rtl_counter_view {
	uint8_t kind;         /* enum rtl_point_kind */
	uint8_t op;           /* enum rtl_primitive */
	uint64_t addr;        /* link-time address of the point */
	uint64_t value;
	uint32_t id;          /* the snippet's (struct rtl_snippet), 0 when shared */
};

#endif
