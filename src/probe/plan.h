/* A function's probe plan as the relocator reads it: which snippet at
 * which point, in run-time addresses, sorted and without duplicates. Built
 * from the collectors' plan() calls (include/reticle/probe.h). */
#ifndef RETICLE_PROBE_PLAN_H
#define RETICLE_PROBE_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <reticle/binary.h>
#include <reticle/collector.h>
#include <reticle/probe.h>

struct plan_point {
	uint64_t addr;            /* run-time */
	uint8_t kind, op;         /* enum rtl_point_kind, enum rtl_primitive */
	uint8_t npred;            /* its predicates: preds[pred, pred + npred); RTL_PRIM_COUNT_BY's
				   * key after them */
	uint32_t id;              /* 0: shared; else the snippet's own (struct rtl_snippet) */
	uint32_t pred;
};

/* A predicate as the relocator reads it: RTL_OPND_GLOBAL's address is
 * run-time. */
struct probe_plan {
	struct plan_point *pts;
	size_t n, cap;
	struct rtl_predicate *preds;
	size_t npreds, cappreds;
};

/* The collectors of a session: what plans every function. KEY names the
 * set (saved copies are kept per set). */
struct probe_set {
	const struct rtl_collector *const *cs;
	size_t n;
	char key[17];
	bool timers;              /* a collector plans timers */
	bool memory;              /* a collector traces memory (RTL_POINT_MEMORY) */
	bool whole_lines;         /* increments are swept (x86_reloc_env.whole_lines) */
	/* a collector reads the copies' blocks and call sites at the end (all
	 * but fcount alone): each copy's are recorded (record_result) */
	bool structure;
	/* leaves' timers time a sample of their calls (x86_timer_start's
	 * SAMPLED; off with calltime:all) */
	bool sample_leaf_timers;
};

void probe_set_init(struct probe_set *s, const struct rtl_collector *const *cs, size_t n);
/* The set's increments are swept once fired (cover alone): they are laid
 * out for it, and its saved copies are kept apart. */
void probe_set_sweeps(struct probe_set *s);
/* Leaves' timers time every call (calltime:all): their copies are kept
 * apart. */
void probe_set_time_all(struct probe_set *s);

/* Plans the function RCFG (run-time addresses, as the relocator sees it;
 * link-time ones are BIAS lower) of MODULE named NAME for every collector
 * of SET into OUT (emptied first). */
int probe_plan_build(const struct probe_set *set, const struct rtl_function_cfg *rcfg,
		     const char *module, const char *name, uint64_t bias, struct probe_plan *out);
/* A snippet of primitive RTL_PRIM_COUNT at KIND/ADDR (run-time) in P. */
bool probe_plan_has(const struct probe_plan *p, enum rtl_point_kind kind, uint64_t addr);
/* A snippet of primitive OP at KIND/ADDR (run-time) in P. */
bool probe_plan_has_op(const struct probe_plan *p, enum rtl_point_kind kind, uint64_t addr,
		       enum rtl_primitive op);
/* Adds a counter directly (run-time ADDR), for plans made without
 * collectors; _op: a snippet of primitive OP. */
int probe_plan_push(struct probe_plan *p, enum rtl_point_kind kind, uint64_t addr);
int probe_plan_push_op(struct probe_plan *p, enum rtl_point_kind kind, uint64_t addr, enum rtl_primitive op);
/* The snippets with ids of their own at KIND/ADDR (run-time): *N of
 * them from the returned one on (sorted by op, then id). */
const struct plan_point *probe_plan_own(const struct probe_plan *p, enum rtl_point_kind kind, uint64_t addr,
					size_t *n);
/* Sorts P and drops duplicates. */
void probe_plan_finish(struct probe_plan *p);
void probe_plan_free(struct probe_plan *p);

/* Whether NAME is a part split from a function (gcc's NAME.cold, BOLT's
 * NAME.cold.N and NAME.warm): entered by a jump from its function, whose
 * frame (and red zone) goes on. */
bool probe_cold_part(const char *name);

/* The signal slot's value for function K of BIN (signal.c), 0 when it has
 * none (the copy then stores its own address); and back: whether VALUE
 * (as the slot holds it, sign-extended) names a function of BIN, *K. */
uint32_t probe_signal_id(const rtl_binary *bin, size_t k);
bool probe_signal_of(const rtl_binary *bin, uint64_t value, size_t *k);

#endif
