/* Whole-function relocation: the analysis (cfg.c) then the emission of the
 * copy, instruction by instruction, with the plan's snippets (snippets.c)
 * inlined between them. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <reticle/error.h>
#include "isa/x86_64/emit.h"
#include "isa/x86_64/memtrace.h"
#include "isa/x86_64/timers.h"
#include "runtime/thread_area.h"
#include "util/array.h"

static int add_fixup(struct emitter *e, size_t off, uint32_t insn)
{
	if (rtl_grow(&e->fix, &e->capfix, e->nfix + 1, sizeof(*e->fix)))
		return -ENOMEM;
	e->fix[e->nfix++] = (struct fixup){ off, insn };
	return 0;
}

static int add_ext(struct x86_reloc *out, size_t off, uint64_t orig, uint64_t dest)
{
	if (rtl_grow(&out->ext, &out->capext, out->next + 1, sizeof(*out->ext)))
		return -ENOMEM;
	out->ext[out->next++] = (struct x86_ext_branch){ (uint32_t)off, orig, dest };
	return 0;
}

/* A branch to TARGET: internal targets are fixed up once every label is known. */
static int branch_to(struct emitter *e, uint64_t target, size_t (*emit)(struct x86_writer *, uint64_t),
		     unsigned cc, bool is_jcc)
{
	const struct x86_reloc_env *env = e->a->env;
	long idx = cfg_index_at(e->a, target);
	/* a recursive call enters through the entry stub, so it counts as a call */
	if (emit == x86_call && target == env->addr) {
		emit(e->w, e->w->base);
		return 0;
	}
	uint64_t dest = idx >= 0 ? x86_writer_pc(e->w) : env->redirect(env->ctx, target);
	size_t off = is_jcc ? x86_jcc(e->w, cc, dest) : emit(e->w, dest);
	return idx >= 0 ? add_fixup(e, off, (uint32_t)idx) : add_ext(e->out, off, target, dest);
}

/* 'lea rsp,[rsp-8]; mov [rsp],lo; mov [rsp+4],hi': pushes call I's
 * original return address (no flags touched, as with a call). The return
 * point is filled in once labels are known (see emit). */
/* lea rsp,[rsp-8]; mov dword [rsp],lo; mov dword [rsp+4],hi */
static const uint8_t push_lea[] = { 0x48, 0x8d, 0x64, 0x24, 0xf8 };
static const uint8_t push_mov0[] = { 0xc7, 0x04, 0x24 }, push_mov4[] = { 0xc7, 0x44, 0x24, 0x04 };

static int push_original_return(struct emitter *e, size_t i, struct x86_reloc *out)
{
	const struct x86_insn *in = &e->a->insns[i];
	uint64_t ret = in->addr + in->len;
	/* a call that ends the function (to a function that does not return)
	 * has nothing to resume in the copy: its return address is only read,
	 * by an unwinder naming the frame */
	if (i + 1 < e->a->n && !e->pass) {   /* the traced copy's: its twin check leads to the twin */
		if (rtl_grow(&out->rets, &out->caprets, out->nrets + 1, sizeof(*out->rets)))
			return -ENOMEM;
		out->rets[out->nrets++] = (struct x86_ret_patch){ ret, i + 1 };   /* index until emit ends */
	}
	x86_put(e->w, push_lea, sizeof(push_lea));
	x86_sp_moved(e->w, 8);   /* back to 0 once the jump that follows is written */
	x86_put(e->w, push_mov0, sizeof(push_mov0));
	x86_put_half(e->w, ret, X86_FIX_LO32);
	x86_put(e->w, push_mov4, sizeof(push_mov4));
	x86_put_half(e->w, ret, X86_FIX_HI32);
	return 0;
}

bool x86_original_call_to_plain(uint8_t b[X86_ORIGINAL_CALL_LEN], uint64_t addr)
{
	if (memcmp(b, push_lea, sizeof(push_lea)) || memcmp(b + 5, push_mov0, sizeof(push_mov0)) ||
	    memcmp(b + 12, push_mov4, sizeof(push_mov4)) || b[20] != 0xe9)
		return false;
	int32_t rel;
	memcpy(&rel, b + 21, 4);
	uint64_t end = addr + X86_ORIGINAL_CALL_LEN, target = end + (uint64_t)(int64_t)rel;
	int64_t call_rel = (int64_t)(target - (addr + 5));
	if (call_rel != (int32_t)call_rel)
		return false;
	uint8_t seq[7] = { 0xe8, 0, 0, 0, 0, 0xeb, X86_ORIGINAL_CALL_LEN - 7 };   /* call T; jmp END */
	int32_t r32 = (int32_t)call_rel;
	memcpy(seq + 1, &r32, 4);
	memcpy(b, seq, sizeof(seq));
	return true;
}

/* 'call T' with the original return address: pushed, then 'jmp T'. */
static int call_with_original_return(struct emitter *e, size_t i, struct x86_reloc *out)
{
	int err = push_original_return(e, i, out);
	if (err)
		return err;
	if (e->a->insns[i].target == e->a->env->addr)
		x86_jmp(e->w, e->w->base);   /* recursion: through the entry stub, as a call */
	else if ((err = branch_to(e, e->a->insns[i].target, x86_jmp, 0, false)))
		return err;
	x86_sp_moved(e->w, 0);
	return e->w->failed ? -ENOMEM : 0;
}

/* Whether call I can return through the original code: its return address
 * gets a patch there (a jump back into the copy), which must not touch the
 * entry's own patch. With original returns for the whole process, one
 * inside the entry's 5 bytes (Rust's `push rax; call *rdi` marker frame
 * __rust_begin_short_backtrace) makes the entry an int3 instead of a jump
 * (lazy.c: entry_shadowed). A call that ends the function pushes its
 * original return address too (push_original_return): Rust ends functions
 * with calls that never return, and its panics name those frames. */
static bool returns_through_original(const struct emitter *e, size_t i)
{
	const struct x86_insn *in = &e->a->insns[i];
	return in->addr + in->len >= e->a->env->addr + 5 || e->a->env->original_returns;
}

/* Whether call I's return point can take a 5-byte jump back into the copy
 * (lazy.c, patch_returns_as): inside the function, before the next call's
 * return point, with no other way into the code under it. */
static bool return_point_fits(const struct emitter *e, size_t i)
{
	const struct x86_analysis *a = e->a;
	const struct x86_reloc_env *env = a->env;
	uint64_t at = a->insns[i].addr + a->insns[i].len;
	/* where other functions jump in is not known (a part of it too large
	 * to read): any place may be one */
	if (at + 5 > env->addr + env->size || !env->foreign_known)
		return false;
	/* nor a block start under it where other functions jump in: a thread
	 * come in there runs the original code on (a .cold or .warm part, or
	 * its parent, still running as it is) */
	for (size_t j = i + 1; j < a->n && a->insns[j].addr < at + 5; j++)
		if (((a->insns[j].kind == X86_CALL || a->insns[j].kind == X86_ICALL) &&
		     a->insns[j].addr + a->insns[j].len < at + 5) ||
		    (env->nforeign && a->leader[j] && a->insns[j].addr > at))
			return false;
	for (size_t k = 0; k < env->ninterior; k++)
		if (env->interior[k] > at && env->interior[k] < at + 5)
			return false;
	for (size_t k = 0; k < env->nforeign; k++)
		if (env->foreign[k] > at && env->foreign[k] < at + 5)
			return false;
	return true;
}

/* Whether call I pushes its original return address for the whole
 * process's sake (x86_reloc_env's original_returns and _soft). */
static bool wants_original_return(const struct emitter *e, size_t i)
{
	const struct x86_reloc_env *env = e->a->env;
	return env->original_returns && (!env->original_returns_soft || return_point_fits(e, i));
}

/* The ModRM byte of 'call r/m64' (ff /2) in BYTES, or -1 for another form. */
static int icall_modrm(const struct x86_insn *in, const uint8_t *bytes)
{
	size_t p = in->prefix_len;
	if (p < in->len && (bytes[p] & 0xf0) == 0x40)
		p++;   /* REX */
	if (p + 1 >= in->len || bytes[p] != 0xff || ((bytes[p + 1] >> 3) & 7) != 2)
		return -1;
	return (int)(p + 1);
}

/* After a repe/repne cmps/scas (emit_rep_count ran before it): takes back
 * what it did not run (writer.h). */
static int emit_rep_cond_after(struct emitter *e, size_t i, struct x86_reloc *out)
{
	const struct x86_reloc_env *env = e->a->env;
	const struct x86_block *blk = &out->blocks[e->a->block_of[i]];
	size_t at = x86_sub_rcx_after_rep_cond(e->w, blk->rep_counter, env->atomic,
					       e->a->insns[i].repne);
	return env->atomic ? 0 : x86_snip_site(out, at, false);
}

/* The rel8 at AT jumps here. */
static int land_rel8(struct x86_writer *w, size_t at)
{
	if (w->failed)   /* the rel8 may not have been written */
		return -ENOMEM;
	size_t d = w->len - (at + 1);
	if (d > 127)
		return -RTL_ERR_UNSUPPORTED;
	w->buf[at] = (uint8_t)d;
	return 0;
}

/* The two ways out of branch I, after a rel8 at SKIP that jumps when it
 * is not taken: 'count taken; jmp target; skip: count not taken'. */
static int taken_path(struct emitter *e, size_t i, size_t skip, struct x86_reloc *out)
{
	int err = x86_snip_edge_counter(e, i, RTL_POINT_BRANCH_TAKEN, out);
	if (!err)
		err = x86_snip_edge_counter(e, i, RTL_POINT_BACK_EDGE, out);
	if (!err)
		err = branch_to(e, e->a->insns[i].target, x86_jmp, 0, false);
	if (!err)
		err = land_rel8(e->w, skip);
	return err ? err : x86_snip_edge_counter(e, i, RTL_POINT_BRANCH_NOT_TAKEN, out);
}

/* A conditional branch with the plan's edge counters: the taken one on a
 * path of its own ('jncc skip; ...', taken_path), the not-taken one after
 * the branch. */
static int counted_branch(struct emitter *e, size_t i, struct x86_reloc *out)
{
	const struct x86_insn *in = &e->a->insns[i];
	if (!probe_plan_has(&e->plan, RTL_POINT_BRANCH_TAKEN, in->addr) &&
	    !probe_plan_has(&e->plan, RTL_POINT_BACK_EDGE, in->addr)) {
		int err = branch_to(e, in->target, NULL, in->cc, true);
		return err ? err : x86_snip_edge_counter(e, i, RTL_POINT_BRANCH_NOT_TAKEN, out);
	}
	x86_put_u8(e->w, (uint8_t)(0x70 | (in->cc ^ 1)));
	x86_put_u8(e->w, 0);
	return taken_path(e, i, e->w->len - 1, out);
}

static int emit_insn(struct emitter *e, size_t i, struct x86_reloc *out)
{
	const struct x86_insn *in = &e->a->insns[i];
	const uint8_t *bytes = e->a->env->code + (in->addr - e->a->env->addr);
	struct x86_writer *w = e->w;
	if (in->has_mem || in->kind == X86_CALL || in->kind == X86_ICALL || in->kind == X86_RET ||
	    in->kind == X86_OTHER) {
		int err = x86_snip_memory_records(e, i, bytes, out);
		if (err)
			return err;
	}

	switch (in->kind) {
	case X86_JMP: {
		int err = x86_snip_edge_counter(e, i, RTL_POINT_BACK_EDGE, out);
		return err ? err : branch_to(e, in->target, x86_jmp, 0, false);
	}
	case X86_JCC:
		return counted_branch(e, i, out);
	case X86_CALL: {
		int err = x86_snip_call_probes(e, i, bytes, out);
		if (err)
			return err;
		struct x86_call_site cs = { in->addr, in->target, e->a->block_of[i] };
		if (!e->pass && rtl_grow(&out->calls, &out->capcalls, out->ncalls + 1, sizeof(*out->calls)))
			return -ENOMEM;
		if (!e->pass)
			out->calls[out->ncalls++] = cs;
		const struct x86_reloc_env *env = e->a->env;
		if (returns_through_original(e, i) &&
		    (wants_original_return(e, i) || (env->keeps_caller && env->keeps_caller(env->ctx, in->target))))
			return call_with_original_return(e, i, out);
		return branch_to(e, in->target, x86_call, 0, false);
	}
	case X86_LOOP: {
		/* loop/jrcxz have only rel8: jrcxz taken; jmp skip; taken: jmp target */
		x86_put(w, bytes, in->len - 1u);
		x86_put_u8(w, 2);
		x86_put_u8(w, 0xeb);
		x86_put_u8(w, 0);
		return taken_path(e, i, w->len - 1, out);
	}
	default:
		break;
	}
	/* an indirect call with the original return address: pushed, then the
	 * same operand as 'jmp r/m64' (ff /4); an operand based on rsp, which
	 * the push moves, keeps the plain call. One that reads a table of code
	 * pointers ('call [T+rI*8]' of a non-PIE executable: python3.11 calls
	 * binary_ops[oparg] so) pushes it too, the displacement sent to the
	 * table's copy below as a plain call's: its code-cache return address,
	 * left on a stack, kept an attached http.server's windows mapped at
	 * one detach in four. */
	if (in->kind == X86_ICALL) {
		int err = x86_snip_call_probes(e, i, bytes, out);
		if (err)
			return err;
	}
	uint8_t as_jmp[16];
	int modrm = -1;
	bool pushed = false;   /* the original return address: BYTES jump */
	if (in->kind == X86_ICALL && wants_original_return(e, i) && returns_through_original(e, i) &&
	    !(in->has_mem && in->mem.base == 4) &&
	    (modrm = icall_modrm(in, bytes)) >= 0 && in->len <= sizeof(as_jmp)) {
		memcpy(as_jmp, bytes, in->len);
		as_jmp[modrm] = (uint8_t)((as_jmp[modrm] & ~0x38) | (4 << 3));
		bytes = as_jmp;
		int err = push_original_return(e, i, out);
		if (err)
			return err;
		pushed = true;
	}
	if (in->kind == X86_RET) {
		int err = x86_snip_exit_probes(e, i, out);
		if (err)
			return err;
	}
	const struct goto_src *g = e->a->ngotos ? x86_cfg_goto_at(e->a, i) : NULL;
	if (g && e->pass && !e->switch_at[g->target]) {   /* no check there: the traced copy's label */
		size_t off = x86_lea_rip(w, g->reg);
		x86_patch_u32(w, off, (uint32_t)x86_rel32(w, x86_writer_pc(w), out->map_to[g->target]));
		return w->failed ? -ENOMEM : 0;
	}
	if (g)   /* the label's copy, in the register the jump reads */
		return add_fixup(e, x86_lea_rip(w, g->reg), g->target);
	bool rep_count = (in->rep_plain || in->rep_cond) &&
			 probe_plan_has(&e->plan, RTL_POINT_REP_ITERATIONS,
					e->a->insns[e->a->block_first[e->a->block_of[i]]].addr);
	size_t skip = rep_count && in->rep_cond ? x86_rep_cond_skip(w) : 0;
	if (rep_count) {
		int err = x86_snip_rep_count(e, i, out);
		if (err)
			return err;
	}
	size_t start = w->len;
	x86_put(w, bytes, in->len);
	if (pushed)
		x86_sp_moved(w, 0);
	if (w->failed)
		return -ENOMEM;
	if (skip) {
		/* cmps/scas have no explicit memory operand: nothing below applies */
		int err = emit_rep_cond_after(e, i, out);
		x86_rep_cond_land(w, skip);
		return err ? err : w->failed ? -ENOMEM : 0;
	}
	int32_t t = e->a->table_of[i];
	if (t >= 0 || in->rip_rel) {
		/* The displacement is rewritten: rip-relative to the same target,
		 * or (jump tables) to the copy, once its address is known. */
		size_t doff = start + in->disp_off;
		uint64_t end = x86_writer_pc(w);
		if (t >= 0) {
			size_t k = e->ntd++;
			e->table_disp[k] = doff;
			e->table_disp_of[k] = t;
			e->table_disp_end[k] = in->rip_rel ? end : 0;
		} else {
			x86_patch_rel32(w, doff, end, in->target);
		}
	}
	return 0;
}

static int emit_tables(struct emitter *e)
{
	struct x86_analysis *a = e->a;
	struct x86_writer *w = e->w;

	for (size_t t = 0; t < a->ntables; t++) {
		struct jump_table *jt = &a->tables[t];
		x86_align(w, 8, 0xcc);
		jt->new_base = x86_writer_pc(w);
		/* offsets from a label: from what the label's lea loads in this
		 * copy (emit_insn, as a computed goto's), or from the original
		 * label where the dispatch adds it as an immediate it keeps */
		long rel = jt->rel_label;
		uint64_t from = rel < 0 ? jt->new_base
			      : jt->label_kept ? a->insns[rel].addr
			      : e->pass && !e->switch_at[rel] ? e->out->map_to[rel] : e->label[rel];
		for (size_t k = 0; k < jt->n; k++) {
			long idx = cfg_index_at(a, jt->targets[k]);
			/* the twin's entry for a target without a check: the traced
			 * copy's label (a table base kept in a register across the
			 * switch to the traced copy must not lead back untraced) */
			uint64_t target = idx < 0 ? a->env->redirect(a->env->ctx, jt->targets[k])
					  : e->pass && !e->switch_at[idx] ? e->out->map_to[idx] : e->label[idx];
			uint64_t orig = idx >= 0 ? 0 : jt->targets[k];
			if (jt->abs64)
				x86_put_abs64(w, target, orig);
			else
				x86_put_rel32(w, from, target, orig);
		}
		if (e->traces_memory && a->env->mem_table)
			a->env->mem_table(a->env->ctx, jt->new_base, jt->base, jt->n * (jt->abs64 ? 8 : 4));
	}
	for (size_t k = 0; k < e->ntd; k++) {
		const struct jump_table *jt = &a->tables[e->table_disp_of[k]];
		int64_t v = e->table_disp_end[k] ? (int64_t)(jt->new_base - e->table_disp_end[k])
						 : (int64_t)jt->new_base;
		if (v != (int32_t)v)
			return -RTL_ERR_UNSUPPORTED;
		if (e->table_disp_end[k])   /* within the copy */
			x86_patch_u32(w, e->table_disp[k], (uint32_t)v);
		else
			x86_patch_abs32(w, e->table_disp[k], jt->new_base);
	}
	return w->failed ? -RTL_ERR_NO_SPACE : 0;
}

static uint8_t block_end(const struct x86_insn *in)
{
	switch (in->kind) {
	case X86_JCC: case X86_LOOP: return RTL_END_BRANCH;
	case X86_JMP: return RTL_END_JUMP;
	case X86_IJMP: return RTL_END_INDIRECT_JUMP;
	case X86_CALL: return RTL_END_CALL;
	case X86_ICALL: return RTL_END_INDIRECT_CALL;
	case X86_RET: return RTL_END_RETURN;
	case X86_STOP: return RTL_END_STOP;
	default: return RTL_END_FALL;
	}
}

/* The function's plan: the env's, over a cfg of the analysis, or the
 * counters its flags ask for. */
static int make_plan(const struct x86_analysis *a, struct probe_plan *plan)
{
	const struct x86_reloc_env *env = a->env;
	int err = 0;
	if (!env->plan) {
		if (env->entry_counter)
			err = probe_plan_push(plan, RTL_POINT_ENTRY, env->addr);
		for (size_t b = 0; b < a->nblocks && env->block_counters && !err; b++) {
			uint64_t at = a->insns[a->block_first[b]].addr;
			if (!(err = probe_plan_push(plan, RTL_POINT_BLOCK, at)))
				err = probe_plan_push(plan, RTL_POINT_REP_ITERATIONS, at);
		}
		probe_plan_finish(plan);
		return err;
	}
	struct rtl_cfg_block *blocks = malloc((a->nblocks + 1) * sizeof(*blocks));
	if (!blocks)
		return -ENOMEM;
	for (size_t b = 0; b < a->nblocks; b++) {
		size_t first = a->block_first[b], end = b + 1 < a->nblocks ? a->block_first[b + 1] : a->n;
		const struct x86_insn *last = &a->insns[end - 1];
		uint8_t how = block_end(last);
		bool direct = last->kind == X86_JCC || last->kind == X86_LOOP || last->kind == X86_JMP ||
			      last->kind == X86_CALL;
		blocks[b] = (struct rtl_cfg_block){ a->insns[first].addr, last->addr, (uint32_t)(end - first),
						     how, direct ? last->target : 0 };
	}
	struct rtl_function_cfg cfg = { NULL, NULL, env->addr, env->size, blocks, a->nblocks };
	err = env->plan(env->ctx, &cfg, plan);
	free(blocks);
	return err;
}

enum { X86_TWIN_CHECK_ENTRY = UINT32_MAX };

/* Whether PLAN only records memory accesses and counts down: a copy
 * without the records does the rest the same (memtrace.h's twins). */
static bool twin_plan(const struct probe_plan *plan)
{
	for (size_t k = 0; k < plan->n; k++) {
		const struct plan_point *pt = &plan->pts[k];
		bool record = pt->kind == RTL_POINT_MEMORY && pt->op == RTL_PRIM_BUFFER_APPEND;
		bool countdown = pt->kind == RTL_POINT_BLOCK && pt->op == RTL_PRIM_COUNTDOWN;
		if ((!record && !countdown) || pt->id || pt->npred)
			return false;
	}
	return true;
}

/* Where a thread may go from one copy to the other (E->switch_at): where
 * a call returns (a caller switches there), and where an indirect jump
 * lands (a jump-table base or label kept in a register across a switch
 * leads to the other copy's labels: a check there sends the thread back;
 * the program's own tables of labels lead to the traced copy's), each
 * where the flags are dead. */
static int switch_points(struct emitter *e)
{
	const struct x86_analysis *a = e->a;
	if (!(e->switch_at = calloc(a->n, sizeof(*e->switch_at))))
		return -ENOMEM;
	for (size_t i = 1; i < a->n; i++)
		e->switch_at[i] = a->insns[i - 1].kind == X86_CALL || a->insns[i - 1].kind == X86_ICALL;
	/* (labels the program's data holds, computed gotos through a table
	 * of label addresses as lua's and CPython's dispatch, are among them:
	 * those words point at the traced copy, whose check there sends an
	 * untraced thread on in the twin) */
	uint32_t *ind;
	size_t nind;
	if (x86_cfg_indirect_targets(a, &ind, &nind))
		return -ENOMEM;
	for (size_t k = 0; k < nind; k++)
		e->switch_at[ind[k]] = true;
	free(ind);
	for (size_t i = 0; i < a->n; i++)
		e->switch_at[i] = e->switch_at[i] && !x86_cfg_flags_live_at(a, a->insns[i].addr);
	return 0;
}

/* The blocks where memtrace's window clock is checked: where branches go
 * back and where indirect jumps land (every cycle within the function
 * passes one), and the entry unless the function is a leaf (a cycle
 * through calls passes the entry of a function that calls). */
static int clock_checks(struct emitter *e)
{
	const struct x86_analysis *a = e->a;
	if (!(e->clock_check = calloc(a->nblocks, sizeof(*e->clock_check))))
		return -ENOMEM;
	for (size_t i = 0; i < a->n; i++) {
		const struct x86_insn *in = &a->insns[i];
		/* the entry of a function that calls or leaves by a jump (a
		 * cycle through calls passes one); a leaf's is not needed */
		if (in->kind == X86_CALL || in->kind == X86_ICALL || (in->kind == X86_IJMP && a->table_of[i] < 0) ||
		    ((in->kind == X86_JMP || in->kind == X86_JCC) && cfg_index_at(a, in->target) < 0))
			e->clock_check[0] = true;
		long t = (in->kind == X86_JCC || in->kind == X86_JMP || in->kind == X86_LOOP) && in->target <= in->addr
			 ? cfg_index_at(a, in->target) : -1;
		if (t >= 0)
			e->clock_check[a->block_of[t]] = true;
	}
	uint32_t *ind;
	size_t nind;
	if (x86_cfg_indirect_targets(a, &ind, &nind))
		return -ENOMEM;
	for (size_t k = 0; k < nind; k++)
		e->clock_check[a->block_of[ind[k]]] = true;
	free(ind);
	return x86_cfg_live_regs(a, &e->live_regs);   /* a dead register sums the clock there */
}

/* A twin check before instruction I (or the entry's): the traced copy's
 * leaves when tracing is off, the twin's when it is on. */
static int twin_check(struct emitter *e, uint32_t i)
{
	if (rtl_grow(&e->checks, &e->capchecks, e->nchecks + 1, sizeof(*e->checks)))
		return -ENOMEM;
	size_t off = x86_twin_check(e->w, e->pass ? TA_MT_ON : TA_MT_OFF);
	e->checks[e->nchecks++] = (struct twin_fix){ off, i, e->pass };
	return e->w->failed ? -ENOMEM : 0;
}

static int emit_body(struct emitter *e, struct x86_reloc *out);

/* After the traced copy (its map made): the untraced twin, its map, and
 * every check pointed at the same place of the other copy (past its own
 * check; the entry's at the twin's first instruction). */
static int emit_twin(struct emitter *e, struct x86_reloc *out)
{
	e->pass = 1;
	out->twin_start = x86_writer_pc(e->w);
	int err = emit_body(e, out);
	if (err)
		return err;
	if (!(out->twin_to = malloc(out->nmap * sizeof(uint64_t))))
		return -ENOMEM;
	memcpy(out->twin_to, e->label, out->nmap * sizeof(uint64_t));
	for (size_t k = 0; k < e->nchecks; k++) {
		const struct twin_fix *c = &e->checks[k];
		uint64_t to = c->insn == X86_TWIN_CHECK_ENTRY ? out->twin_to[0]
			      : (c->pass ? out->map_to : out->twin_to)[c->insn] + X86_TWIN_CHECK;
		x86_patch_u32(e->w, c->off, (uint32_t)x86_rel32(e->w, e->w->base + c->off + 4, to));
	}
	return e->w->failed ? -RTL_ERR_NO_SPACE : 0;
}

/* The function's instructions with their snippets, the jump out after
 * the last, branches within resolved, and jump tables: the traced copy,
 * or its twin (E->pass 1) with its own labels and tables. */
static int emit_body(struct emitter *e, struct x86_reloc *out)
{
	struct x86_analysis *a = e->a;
	const struct x86_reloc_env *env = a->env;
	uint64_t dest = e->w->base;
	int err;
	e->nfix = 0;
	e->ntd = 0;
	for (size_t i = 0; i < a->n; i++) {
		/* from the block before, which counted this one: over its checks
		 * and countdown */
		size_t over = e->merge_counts && env->windows && a->leader[i] && i > 0 &&
			      x86_falls_into_next(a, a->block_of[i] - 1)
			      ? x86_jump32(e->w, 0xeb) : 0;   /* checks and clock: up to 200 bytes */
		/* a block the compiler aligned after padding (a loop head) stays
		 * aligned in the copy: misaligned hot loops cost more than the nops */
		if (a->leader[i] && i > 0 && a->insns[i].addr % 16 == 0 &&
		    a->insns[i - 1].is_nop)
			x86_align_nops(e->w, 16);
		e->label[i] = x86_writer_pc(e->w);
		/* where the call before returns (the return address, or the
		 * return point of an original return): the signal again */
		const struct x86_insn *prev = i ? &a->insns[i - 1] : NULL;
		if (prev && (prev->kind == X86_CALL || prev->kind == X86_ICALL) &&
		    probe_plan_has_op(&e->plan, RTL_POINT_CALL_AFTER, prev->addr, RTL_PRIM_SLOT_SET) &&
		    (err = x86_signal_set(e->w, out->w.base, env->signal_id)))
			return err;
		if (e->twin && e->switch_at[i] && (err = twin_check(e, (uint32_t)i)))
			return err;
		if (a->leader[i] && (err = x86_snip_block_counter(e, a->block_of[i], out)))
			return err;
		if (over)
			x86_land32(e->w, over);
		if ((err = emit_insn(e, i, out)))
			return err;
	}
	const struct x86_insn *last = &a->insns[a->n - 1];
	if (last->kind == X86_OTHER || last->kind == X86_JCC || last->kind == X86_LOOP ||
	    last->kind == X86_CALL || last->kind == X86_ICALL) {
		uint64_t next = env->addr + env->size, to = env->redirect(env->ctx, next);
		if ((err = add_ext(out, x86_jmp(e->w, to), next, to)))
			return err;
	}
	for (size_t k = 0; k < e->nfix; k++) {
		uint64_t field_end = dest + e->fix[k].off + 4;
		x86_patch_u32(e->w, e->fix[k].off,
			      (uint32_t)x86_rel32(e->w, field_end, e->label[e->fix[k].insn]));
	}
	return emit_tables(e);
}

/* Whether A's function calls nothing and leaves only by returning: no
 * call, no indirect jump, no branch out of it (a tail call, a .cold part).
 * Its timer's frame is then never a caller's: an untimed call of it
 * leaves the calling-context tree as a timed one would. Nor a system
 * call: one that may block (a futex wait, a read) varies too much from
 * call to call for a sample of them to stand for the rest. */
static bool is_sampled_leaf(const struct x86_analysis *a)
{
	const struct x86_reloc_env *env = a->env;
	for (size_t i = 0; i < a->n; i++) {
		const struct x86_insn *in = &a->insns[i];
		if (x86_system_call(a, in))
			return false;
		switch (in->kind) {
		case X86_CALL: case X86_ICALL: case X86_IJMP: case X86_UNSUPPORTED:
			return false;
		case X86_JMP: case X86_JCC: case X86_LOOP:
			if (in->target < env->addr || in->target >= env->addr + env->size)
				return false;
			break;
		default:
			break;
		}
	}
	return true;
}

static int emit(struct x86_analysis *a, uint64_t dest, struct x86_reloc *out)
{
	const struct x86_reloc_env *env = a->env;
	struct emitter e = { .a = a, .w = &out->w, .out = out };
	int err = -ENOMEM;

	x86_writer_init(&out->w, dest);
	/* copies are larger than the original: counters, widened branches */
	x86_writer_reserve(&out->w, 2 * env->size + 256);
	e.label = calloc(a->n, sizeof(*e.label));
	e.table_disp = malloc(a->n * sizeof(*e.table_disp));
	e.table_disp_of = malloc(a->n * sizeof(*e.table_disp_of));
	e.table_disp_end = malloc(a->n * sizeof(*e.table_disp_end));
	out->blocks = calloc(a->nblocks, sizeof(*out->blocks));
	out->nblocks = a->nblocks;
	if (!e.label || !e.table_disp || !e.table_disp_of || !e.table_disp_end || !out->blocks)
		goto out;
	if ((err = make_plan(a, &e.plan)))
		goto out;
	for (size_t k = 0; k < e.plan.n && !e.traces_memory; k++)
		e.traces_memory = e.plan.pts[k].kind == RTL_POINT_MEMORY;
	e.merge_counts = e.traces_memory && twin_plan(&e.plan);
	e.twin = env->twin && e.merge_counts;
	if (e.merge_counts && env->windows && (err = clock_checks(&e)))   /* (liveness only for a clock) */
		goto out;
	if (e.twin && (err = switch_points(&e)))
		goto out;
	/* swept probes: blocks whose successors tell whether they ran get none */
	if (env->whole_lines &&
	    (!(e.via = malloc(a->nblocks * sizeof(*e.via))) || (err = x86_cfg_implied_blocks(a, e.via))))
		goto out;
	if (env->entry_pad) {
		static const uint8_t nop5[] = { 0x0f, 0x1f, 0x44, 0x00, 0x00 };   /* nop dword [rax+rax] */
		x86_put(&out->w, nop5, sizeof(nop5));
	}
	e.flags_in = x86_cfg_flags_live_at(a, env->addr);
	if (e.flags_in)
		x86_flags_stash(&out->w);
	if (probe_plan_has_op(&e.plan, RTL_POINT_ENTRY, env->addr, RTL_PRIM_TIMER_START)) {
		out->timer_desc = env->new_counter(env->ctx);
		err = -RTL_ERR_NO_SPACE;
		if (!out->timer_desc ||
		    (err = x86_timer_start(&out->w, out->timer_desc, env->sample_leaf_timers && is_sampled_leaf(a))))
			goto out;
	}
	if (probe_plan_has_op(&e.plan, RTL_POINT_ENTRY, env->addr, RTL_PRIM_SLOT_SET) &&
	    (err = x86_signal_set(&out->w, out->w.base, env->signal_id)))
		goto out;
	if (probe_plan_has(&e.plan, RTL_POINT_ENTRY, env->addr)) {
		out->entry_counter = env->new_counter(env->ctx);
		err = -RTL_ERR_NO_SPACE;
		if (!out->entry_counter)
			goto out;
		/* flags are dead at entry, or stashed */
		if ((err = x86_snip_counter(&out->w, out->entry_counter, false, env, out)))
			goto out;
	}
	if ((err = x86_snip_own(&e, RTL_POINT_ENTRY, env->addr, out)))
		goto out;
	if (e.flags_in)
		x86_flags_unstash(&out->w);
	if (e.twin && !e.flags_in && (err = twin_check(&e, X86_TWIN_CHECK_ENTRY)))
		goto out;
	if ((err = emit_body(&e, out)))
		goto out;
	for (size_t k = 0; k < out->nrets; k++)
		out->rets[k].copy = e.label[out->rets[k].copy];
	out->njump_tables = a->ntables;
	out->map_from = malloc(a->n * sizeof(uint64_t));
	out->map_to = malloc(a->n * sizeof(uint64_t));
	err = -ENOMEM;
	if (!out->map_from || !out->map_to)
		goto out;
	for (size_t i = 0; i < a->n; i++) {
		out->map_from[i] = a->insns[i].addr;
		out->map_to[i] = e.label[i];
	}
	out->nmap = a->n;
	if (e.twin && (err = emit_twin(&e, out)))
		goto out;
	err = out->w.failed ? -RTL_ERR_NO_SPACE : 0;
out:
	free(e.label);
	free(e.fix);
	free(e.checks);
	free(e.switch_at);
	free(e.clock_check);
	free(e.live_regs);
	free(e.via);
	free(e.table_disp);
	free(e.table_disp_of);
	free(e.table_disp_end);
	probe_plan_free(&e.plan);
	return err;
}

int x86_emit(struct x86_analysis *a, const struct x86_reloc_env *env, uint64_t dest,
	     struct x86_reloc *out, const char **reason)
{
	memset(out, 0, sizeof(*out));
	*reason = NULL;
	a->env = env;
	int err = emit(a, dest, out);
	a->env = NULL;
	if (err) {
		if (!*reason)
			*reason = err == -RTL_ERR_NO_SPACE ? "code cache or counters full, or a target out of rip+-2GiB"
							   : "relocation failed";
		x86_reloc_free(out);
	}
	return err;
}

int x86_relocate(const struct x86_reloc_env *env, uint64_t dest, struct x86_reloc *out,
		 const char **reason)
{
	struct x86_analysis *a;
	memset(out, 0, sizeof(*out));
	int err = x86_analyze(env, &a, reason);
	if (!err && dest)
		err = x86_emit(a, env, dest, out, reason);
	x86_analysis_free(a);
	return err;
}

void x86_reloc_free(struct x86_reloc *r)
{
	x86_writer_free(&r->w);
	free(r->blocks);
	free(r->calls);
	free(r->points);
	free(r->ext);
	free(r->rets);
	free(r->map_from);
	free(r->map_to);
	free(r->twin_to);
	free(r->sites);
	free(r->traps);
	memset(r, 0, sizeof(*r));
}

uint64_t x86_map_lookup(const uint64_t *from, const uint64_t *to, size_t n, uint64_t addr)
{
	size_t lo = rtl_lower_bound_u64(from, n, addr);
	return lo < n && from[lo] == addr ? to[lo] : 0;
}

uint64_t x86_reloc_lookup(const struct x86_reloc *r, uint64_t addr)
{
	return x86_map_lookup(r->map_from, r->map_to, r->nmap, addr);
}
