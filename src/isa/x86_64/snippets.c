/* The snippet generator: the probes a copy carries, inline, as its plan
 * (probe/plan.h) asks at each point: counters (plain, flag-keeping,
 * atomic), rep iterations, counts by key, the snippets' own primitives
 * (timers, slots, countdowns, guards), calls' and returns' probes, and
 * memory records. Each is written through the writer, which reports what
 * it does to the stack (writer.h's rows, for the copy's unwind
 * information); emit.c places them between the copied instructions. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <reticle/error.h>
#include "isa/x86_64/arcs.h"
#include "isa/x86_64/emit.h"
#include "isa/x86_64/memtrace.h"
#include "isa/x86_64/predicate.h"
#include "isa/x86_64/timers.h"
#include "util/array.h"

/* Before a rep instruction: its block's rep counter += rcx. */
int x86_snip_rep_count(struct emitter *e, size_t i, struct x86_reloc *out)
{
	const struct x86_reloc_env *env = e->a->env;
	struct x86_block *blk = &out->blocks[e->a->block_of[i]];
	if (!blk->rep_counter && !(blk->rep_counter = env->new_counter(env->ctx)))
		return -RTL_ERR_NO_SPACE;
	size_t at = x86_add_rcx_to_counter(e->w, blk->rep_counter, env->atomic);
	return env->atomic ? 0 : x86_snip_site(out, at, false);
}

int x86_snip_point_id(struct x86_reloc *out, uint64_t addr, uint64_t ctr, enum rtl_point_kind kind,
			enum rtl_primitive op, uint32_t id)
{
	if (rtl_grow(&out->points, &out->cappoints, out->npoints + 1, sizeof(*out->points)))
		return -ENOMEM;
	out->points[out->npoints++] = (struct x86_point_counter){ addr, ctr, (uint8_t)kind, (uint8_t)op, id };
	return 0;
}

int x86_snip_point(struct x86_reloc *out, uint64_t addr, uint64_t ctr, enum rtl_point_kind kind)
{
	return x86_snip_point_id(out, addr, ctr, kind, RTL_PRIM_COUNT, 0);
}

/* RTL_PRIM_COUNT_BY: the key's count in the arc table, with two words of
 * its own as an indirect call's target count has. */
static int count_by(struct emitter *e, const struct plan_point *pt, struct x86_reloc *out)
{
	const struct x86_reloc_env *env = e->a->env;
	uint64_t words = env->new_counter(env->ctx);
	if (!words || env->new_counter(env->ctx) != words + 8)
		return -RTL_ERR_NO_SPACE;
	size_t sw[2];
	int err = x86_snip_point_id(out, pt->addr, words, pt->kind, RTL_PRIM_COUNT_BY, pt->id);
	if (!err)
		err = x86_count_value(e->w, &e->plan.preds[pt->pred + pt->npred], words, env->atomic, sw);
	if (!err && !env->atomic && !(err = x86_snip_site(out, sw[0], false)))
		err = x86_snip_site(out, sw[1], false);
	return err;
}

/* Whether a predicate or key of PLAN reads the latency of timer ID
 * (hist(latency): a frame started late would measure a part of a call). */
static bool reads_latency(const struct probe_plan *plan, uint32_t id)
{
	for (size_t i = 0; i < plan->npreds; i++)
		if (plan->preds[i].operand == RTL_OPND_LATENCY && plan->preds[i].where == id)
			return true;
	return false;
}

/* The snippets with ids of their own at KIND/ADDR, each behind the guard
 * of its predicates: counters, and at the entry the function's timer
 * when the plan numbered it. Flags are dead there and the red zone free. */
int x86_snip_own(struct emitter *e, enum rtl_point_kind kind, uint64_t addr, struct x86_reloc *out)
{
	const struct x86_reloc_env *env = e->a->env;
	size_t n;
	const struct plan_point *pt = probe_plan_own(&e->plan, kind, addr, &n);
	/* the frames left are closed once, before a numbered timer's push or
	 * a predicate that reads a timer's open frames (at an entry, the
	 * function's own timer's start did it already) */
	bool close = false;
	for (size_t k = 0; k < n; k++) {
		close |= pt[k].op == RTL_PRIM_TIMER_START;
		for (size_t q = 0; q < pt[k].npred; q++)
			close |= e->plan.preds[pt[k].pred + q].operand == RTL_OPND_ONSTACK;
	}
	if (kind == RTL_POINT_ENTRY && out->timer_desc)
		close = false;   /* the function's own timer's start closed them */
	/* an unguarded timer's push goes first and closes them itself (one
	 * reading of the clock for both) */
	size_t first = 0;
	while (close && first < n && (pt[first].op != RTL_PRIM_TIMER_START || pt[first].npred))
		first++;
	bool push_closes = close && first < n;
	if (close && !push_closes) {
		int err = x86_timer_close_left(e->w, kind == RTL_POINT_EXIT);
		if (err)
			return err;
	}
	for (size_t j = 0; j < n; j++) {
		size_t k = !push_closes ? j : j == 0 ? first : j <= first ? j - 1 : j;
		struct x86_guard g;
		int err = x86_guard_begin(e->w, e->plan.preds + pt[k].pred, pt[k].npred, &g);
		if (err)
			return err;
		if (pt[k].op == RTL_PRIM_TIMER_START) {
			e->numbered_timers = true;
			if (kind == RTL_POINT_ENTRY && !pt[k].npred && !reads_latency(&e->plan, pt[k].id) &&
			    out->nentry_timers < X86_MAX_ENTRY_TIMERS)
				out->entry_timers[out->nentry_timers++] = pt[k].id;
			err = x86_timer_push_numbered(e->w, pt[k].id, j == 0 && push_closes);
		} else if (pt[k].op == RTL_PRIM_COUNT_BY) {
			err = count_by(e, &pt[k], out);
		} else if (pt[k].op == RTL_PRIM_CALL) {   /* the slow path: reticle calls the collector */
			if (rtl_grow(&out->traps, &out->captraps, out->ntraps + 1, sizeof(*out->traps)))
				return -ENOMEM;
			out->traps[out->ntraps++] = (struct x86_call_trap){ (uint32_t)e->w->len, (uint8_t)kind, pt[k].id,
									    addr };
			x86_put_u8(e->w, 0xcc);
		} else {
			uint64_t word = env->new_counter(env->ctx);
			if (!word)
				return -RTL_ERR_NO_SPACE;
			if (!(err = x86_snip_point_id(out, addr, word, kind, RTL_PRIM_COUNT, pt[k].id)))
				err = x86_snip_counter(e->w, word, false, env, out);
		}
		if (err || (err = x86_guard_end(e->w, &g)))
			return err;
		out->own_snippets = true;
	}
	return 0;
}

/* A counter of its own at point KIND/ADDR (the plan has one there): its
 * record and its increment, keeping the flags when KEEP_FLAGS. */
int x86_snip_point_counter(struct emitter *e, uint64_t addr, enum rtl_point_kind kind, bool keep_flags,
			 struct x86_reloc *out)
{
	const struct x86_reloc_env *env = e->a->env;
	uint64_t ctr = env->new_counter(env->ctx);
	if (!ctr)
		return -RTL_ERR_NO_SPACE;
	int err = x86_snip_point(out, addr, ctr, kind);
	return err ? err : x86_snip_counter(e->w, ctr, keep_flags, env, out);
}

/* A counter for point KIND of branch I, if the plan has one there; a
 * back-edge's counts the times it jumps, as a taken edge's does. */
int x86_snip_edge_counter(struct emitter *e, size_t i, enum rtl_point_kind kind, struct x86_reloc *out)
{
	const struct x86_analysis *a = e->a;
	const struct x86_insn *in = &a->insns[i];
	if (!probe_plan_has(&e->plan, kind, in->addr))
		return 0;
	/* the fall-through: past the function's end it is assumed live too */
	bool live = x86_cfg_flags_live_at(a, kind == RTL_POINT_BRANCH_NOT_TAKEN ? in->addr + in->len : in->target);
	return x86_snip_point_counter(e, in->addr, kind, live, out);
}

/* Before call I (flags are dead there): the plan's call counter, and for
 * an indirect call the count of its target (two counter words of its
 * own: the arc table's key prefix and address, set by the engine). */
int x86_snip_call_probes(struct emitter *e, size_t i, const uint8_t *bytes, struct x86_reloc *out)
{
	const struct x86_reloc_env *env = e->a->env;
	const struct x86_insn *in = &e->a->insns[i];
	int err;
	if (probe_plan_has(&e->plan, RTL_POINT_CALL_BEFORE, in->addr) &&
	    (err = x86_snip_point_counter(e, in->addr, RTL_POINT_CALL_BEFORE, false, out)))
		return err;
	/* a call through a table the copy has its own copy of: the snippet
	 * keeps the original displacement, so it reads the original targets */
	if (in->kind != X86_ICALL || !probe_plan_has(&e->plan, RTL_POINT_INDIRECT_TARGET, in->addr))
		return 0;
	uint64_t words = env->new_counter(env->ctx);
	if (!words || env->new_counter(env->ctx) != words + 8)
		return -RTL_ERR_NO_SPACE;
	size_t sw[2];
	if ((err = x86_snip_point(out, in->addr, words, RTL_POINT_INDIRECT_TARGET)) ||
	    (err = x86_count_target(e->w, in, bytes, words, env->atomic, sw)))
		return err;
	if (!env->atomic && ((err = x86_snip_site(out, sw[0], false)) || (err = x86_snip_site(out, sw[1], false))))
		return err;
	return 0;
}

/* Before return I (the red zone is dead there, and the flags but in a
 * function that reads its caller's: stashed around them): the plan's exit
 * counter, and the stop of the function's timer. */
int x86_snip_exit_probes(struct emitter *e, size_t i, struct x86_reloc *out)
{
	const struct x86_insn *in = &e->a->insns[i];
	size_t own;
	probe_plan_own(&e->plan, RTL_POINT_EXIT, in->addr, &own);
	bool counter = probe_plan_has(&e->plan, RTL_POINT_EXIT, in->addr);
	bool stop = (out->timer_desc || e->numbered_timers) &&
		    probe_plan_has_op(&e->plan, RTL_POINT_EXIT, in->addr, RTL_PRIM_TIMER_STOP);
	bool stash = e->flags_in && (counter || own || stop);
	int err;
	if (stash)
		x86_flags_stash(e->w);
	if (counter && (err = x86_snip_point_counter(e, in->addr, RTL_POINT_EXIT, false, out)))
		return err;
	if ((err = x86_snip_own(e, RTL_POINT_EXIT, in->addr, out)))
		return err;
	if (stop && (err = x86_timer_stop(e->w)))
		return err;
	if (stash)
		x86_flags_unstash(e->w);
	return e->w->failed ? -ENOMEM : 0;
}

/* The registers an address of M is computed from (bits). */
static uint16_t address_regs(const struct x86_mem *m)
{
	return (uint16_t)((m->base >= 0 && m->base < 16 ? 1u << m->base : 0) | (m->index >= 0 ? 1u << m->index : 0));
}

/* Whether an access can head a chain or join one: not a rep string's
 * or through %fs; through a register, or at an address fixed in the code
 * (rip-relative or absolute: x86_access_static), which joins any chain. */
static bool chainable(const struct x86_access *a)
{
	return !a->fs && !a->rep && ((a->mem.base >= 0 && a->mem.base < 16) || x86_access_static(a));
}

/* Whether the instruction at BYTES leaves the block's straight line
 * otherwise than by its end: a call, a system call, a trap. */
static bool leaves_line(const struct x86_insn *in, const uint8_t *bytes)
{
	const uint8_t *op = bytes + in->prefix_len;
	if (in->kind != X86_OTHER)
		return true;
	return (op[0] == 0x0f && (op[1] == 0x05 || op[1] == 0x34 || op[1] == 0x0b)) || op[0] == 0xcd ||
	       op[0] == 0xcc || op[0] == 0xf4;
}

/* Whether chain C holds after instruction IN (at BYTES): it stays on the
 * straight line and leaves the chain's registers alone, or moves its base
 * register by a constant (a pointer stepped, rsp by a push or a pop),
 * which C->SHIFT follows (symbolically, as MetaSim's analysis does). */
static bool chain_after(struct mem_chain *c, const struct x86_insn *in, const uint8_t *bytes)
{
	uint16_t regs = address_regs(&c->head), written = x86_regs_written(bytes, in->len) & regs;
	int64_t d;
	if (leaves_line(in, bytes))
		return false;
	if (!written)
		return true;
	if (written != 1u << c->head.base || !x86_reg_step(bytes, in->len, c->head.base, &d))
		return false;
	c->shift += d;
	return true;
}

/* Whether chain C still holds at instruction I: same block, and the
 * instructions since its last access kept it (chain_after). */
static bool chain_holds(const struct emitter *e, struct mem_chain *c, size_t i)
{
	const struct x86_analysis *a = e->a;
	if (!c->on || a->block_of[i] != c->block || i <= c->last)
		return false;
	for (size_t j = c->last + 1; j < i; j++) {
		const struct x86_insn *in = &a->insns[j];
		if (!chain_after(c, in, a->env->code + (in->addr - a->env->addr)))
			return false;
	}
	return true;
}

/* A record of each data access of instruction I, where its block is
 * traced. MetaSim's chaining: an access through the same base and index
 * registers as the recorded access before it in the block, with nothing
 * in between that changes them, leaves the straight line or accesses
 * memory otherwise, has no record of its own: the consumer makes it from
 * that record's address and the difference of their displacements, in
 * the same place of the stream (engine/memtrace.c). A signal handler that
 * runs in between sees its accesses after them. */
int x86_snip_memory_records(struct emitter *e, size_t i, const uint8_t *bytes, struct x86_reloc *out)
{
	const struct x86_reloc_env *env = e->a->env;
	const struct x86_insn *in = &e->a->insns[i];
	if (!e->traces_memory || e->pass || !env->mem_point ||
	    !probe_plan_has_op(&e->plan, RTL_POINT_MEMORY, e->a->insns[e->a->block_first[e->a->block_of[i]]].addr,
			       RTL_PRIM_BUFFER_APPEND))
		return 0;
	struct mem_chain *c = &e->chain;
	c->on = env->mem_chain && chain_holds(e, c, i);
	struct x86_access acc[4];
	int n = x86_data_accesses(bytes, in->len, in->addr, acc, 4);
	if (n < 0) {
		if (env->mem_untraced)
			env->mem_untraced(env->ctx, in->addr);
		c->on = false;
	}
	for (int k = 0; k < n; k++) {
		bool join = c->on && chainable(&acc[k]) &&
			    (x86_access_static(&acc[k]) ||
			     (acc[k].mem.base == c->head.base && acc[k].mem.index == c->head.index &&
			      (acc[k].mem.index < 0 || acc[k].mem.scale == c->head.scale)));
		uint32_t id = env->mem_point(env->ctx, in->addr, (unsigned)k, &acc[k], join ? c->prev : 0,
					     join ? c->shift + acc[k].mem.disp - c->head.disp : 0);
		if (id && join) {
			c->prev = id;
			out->traces_memory = true;
			continue;
		}
		int err = id ? x86_memtrace_record(e->w, &acc[k], id, env->fsgsbase) : 0;
		if (err == -RTL_ERR_UNSUPPORTED && env->mem_untraced)
			env->mem_untraced(env->ctx, in->addr);
		else if (err)
			return err;
		out->traces_memory = true;
		/* a new head, or none */
		c->on = env->mem_chain && id && !err && chainable(&acc[k]);
		c->head = acc[k].mem;
		c->shift = 0;
		c->prev = id;
		c->block = e->a->block_of[i];
	}
	c->last = i;
	/* its own accesses read the registers before it writes them */
	if (c->on && !chain_after(c, in, bytes))
		c->on = false;
	return 0;
}

/* An increment of COUNTER. Where the sweep will remove it (env->whole_lines),
 * the 9-byte form starts where the 4 bytes that make it a nop lie in one
 * 16-byte fetch block (x86_increment_off): elsewhere it would get a jump
 * over it, a taken branch per run of its block (1,382 of sqlite3's 14,500
 * increments when it had to lie in one cache line); the longer form where
 * its jump's 2 bytes do. */
int x86_snip_counter(struct x86_writer *w, uint64_t counter, bool keep_flags, const struct x86_reloc_env *env,
			struct x86_reloc *out)
{
	bool atomic = env->atomic;
	if (env->whole_lines && x86_writer_pc(w) % 16 > (keep_flags ? 14u : 12u))
		x86_align_nops(w, 16);
	size_t at = keep_flags ? x86_inc_counter_keep_flags(w, counter, atomic)
			       : x86_inc_counter(w, counter, atomic);
	return atomic ? 0 : x86_snip_site(out, at, keep_flags);
}

int x86_snip_site(struct x86_reloc *out, size_t at, bool keep_flags)
{
	if (rtl_grow(&out->sites, &out->capsites, out->nsites + 1, sizeof(*out->sites)))
		return -ENOMEM;
	out->sites[out->nsites++] = (struct x86_counter_site){ (uint32_t)at, keep_flags };
	return 0;
}

bool x86_falls_into_next(const struct x86_analysis *a, size_t b)
{
	if (b + 1 >= a->nblocks)
		return false;
	const struct x86_insn *last = &a->insns[a->block_first[b + 1] - 1];
	return last->kind == X86_OTHER;
}

/* Whether block B's counter is left out: its run follows from its
 * successors' (e->via), whose own runs are known (counted, or left out the
 * same way). */
static bool implied(const struct emitter *e, size_t b)
{
	const struct x86_analysis *a = e->a;
	if (!e->via || !e->via[b][0] || !probe_plan_has(&e->plan, RTL_POINT_BLOCK, a->insns[a->block_first[b]].addr))
		return false;
	for (int k = 0; k < 2; k++)
		if (e->via[b][k] &&
		    !probe_plan_has(&e->plan, RTL_POINT_BLOCK, a->insns[a->block_first[e->via[b][k] - 1]].addr))
			return false;
	return true;
}

int x86_snip_block_counter(struct emitter *e, size_t b, struct x86_reloc *out)
{
	const struct x86_reloc_env *env = e->a->env;
	struct x86_block *blk = &out->blocks[b];
	size_t first = e->a->block_first[b];
	size_t end = b + 1 < e->a->nblocks ? e->a->block_first[b + 1] : e->a->n;

	blk->addr = e->a->insns[first].addr;
	blk->ninstrs = (uint32_t)(end - first);
	int err = 0;
	if (implied(e, b)) {
		memcpy(blk->via, e->via[b], sizeof(blk->via));
	} else if (probe_plan_has(&e->plan, RTL_POINT_BLOCK, blk->addr)) {
		blk->counter = env->new_counter(env->ctx);
		if (!blk->counter)
			return -RTL_ERR_NO_SPACE;
		err = x86_snip_counter(e->w, blk->counter, e->a->live_in[b] != 0, env, out);
	}
	if (err || !probe_plan_has_op(&e->plan, RTL_POINT_BLOCK, blk->addr, RTL_PRIM_COUNTDOWN))
		return err;
	if (!e->merge_counts)
		return x86_countdown(e->w, blk->ninstrs, e->a->live_in[b] != 0);
	/* memtrace's window clock, only where windows are counted: this block
	 * counts the blocks it falls into too (emit.h: merge_counts) */
	if (!e->a->env->windows)
		return 0;
	uint32_t n = blk->ninstrs;
	for (size_t k = b; x86_falls_into_next(e->a, k); k++)
		n += (uint32_t)((k + 2 < e->a->nblocks ? e->a->block_first[k + 2] : e->a->n) - e->a->block_first[k + 1]);
	/* checked where the flags are dead and a register is free: the sum in it */
	uint16_t dead = e->clock_check[b] && !e->a->live_in[b] ? (uint16_t)~e->live_regs[e->a->block_first[b]] & ~0x10 : 0;
	if (dead)
		return x86_memtrace_clock_free(e->w, n, (unsigned)b, __builtin_ctz(dead));
	return x86_memtrace_clock(e->w, n, (unsigned)b, e->clock_check[b], e->a->live_in[b] != 0);
}
