/* A function's control flow as the relocator's analysis finds it
 * (cfg.c): internal to src/isa/x86_64/, shared by the analysis, the
 * emission of the copy (emit.c) and its snippets (snippets.c). */
#ifndef RETICLE_X86_CFG_H
#define RETICLE_X86_CFG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "isa/x86_64/insn.h"
#include "isa/x86_64/relocate.h"

struct jump_table {
	uint64_t base;       /* original run-time address */
	bool abs64;          /* 8-byte absolute entries; else int32 relative to base */
	/* int32 entries relative to this function's instruction REL_LABEL
	 * instead (-1: to base): 'goto *(&&L + table[i])' (offset_tables) */
	long rel_label;
	/* the dispatch adds REL_LABEL's original address as an immediate
	 * (non-PIE: 'add rX,imm32', 'lea rX,[rY+disp32]'), which the copy
	 * keeps: the copy's entries count from that address */
	bool label_kept;
	size_t limit;        /* entries the dispatches may read, at most */
	size_t n;
	uint64_t *targets;   /* original target of each entry */
	uint64_t new_base;   /* address of the copy */
};

struct x86_analysis {
	const struct x86_reloc_env *env;
	struct x86_insn *insns;   /* env->insns when those are the whole function */
	bool borrowed;
	size_t n;
	uint32_t *at;        /* byte offset -> instruction index + 1, 0 if not a boundary */
	bool *leader;
	uint32_t *block_of;  /* instruction index -> block index */
	size_t nblocks;
	uint32_t *block_first;
	uint8_t *live_in;    /* flags live at block entry */
	struct jump_table *tables;
	size_t ntables;
	int32_t *table_of;   /* instruction index -> table it addresses, or -1 */
	bool has_movsxd4;
	bool has_index8;     /* some load reads [base + index*8] */
	bool has_abs4;       /* some load reads [T + index*4], T an absolute address */
	/* lea r,[rip+L] or mov r,L of a label L of this function that only a
	 * 'jmp r' in the same block uses: a computed goto, sent to L's copy */
	struct goto_src { uint32_t insn, target; int reg; } *gotos;  /* ascending */
	size_t ngotos, capgotos;
	/* lea r,[rip+L] of a label L that tables of offsets are relative to
	 * (offset_tables): sent to L's copy like a computed goto's */
	struct goto_src *label_bases;
	size_t nlabel_bases, caplabel_bases;
};

static inline bool cfg_inside(const struct x86_analysis *a, uint64_t addr)
{
	return addr >= a->env->addr && addr < a->env->addr + a->env->size;
}

/* Instruction index at ADDR, or -1 when ADDR is not an instruction start.
 * glibc jumps over a lock prefix when the process has one thread ('je 1f;
 * lock; 1: cmpxchg'): ADDR just past the lock prefixes of an instruction
 * is that instruction, which does the same, atomically. */
static inline long cfg_index_at(const struct x86_analysis *a, uint64_t addr)
{
	if (!cfg_inside(a, addr))
		return -1;
	size_t off = addr - a->env->addr, k = off;
	if (a->at[off])
		return (long)a->at[off] - 1;
	while (k > 0 && off - k < 4 && !a->at[k] && a->env->code[k - 1] == 0xf0)
		k--;
	return k < off && a->at[k] && a->env->code[k] == 0xf0 ? (long)a->at[k] - 1 : -1;
}

#define X86_NO_BLOCK UINT32_MAX

/* Block B's successors inside the function (X86_NO_BLOCK for none): the
 * target of its last instruction's direct jump or branch (and of a call,
 * with CALL_EDGES), and the next block where it falls or returns there.
 * *LEAVES: it may leave the function or stop there (a return, an indirect
 * jump, a jump out, falling off the end). */
void x86_cfg_block_succs(const struct x86_analysis *a, size_t b, bool call_edges, uint32_t s[2], bool *leaves);
/* Decodes A->env's function (unless its instructions came decoded) and
 * finds its jump tables, computed gotos, blocks and flag liveness. */
int x86_cfg_analyze(struct x86_analysis *a, const char **reason);
void x86_cfg_free(struct x86_analysis *a);
/* Whether IN of A is a system call (syscall, sysenter, int N). */
bool x86_system_call(const struct x86_analysis *a, const struct x86_insn *in);
/* The computed goto whose label load is instruction I, or NULL. */
const struct goto_src *x86_cfg_goto_at(const struct x86_analysis *a, size_t i);
/* Whether the flags are live at run-time ADDR of the function. */
bool x86_cfg_flags_live_at(const struct x86_analysis *a, uint64_t addr);
/* The general-purpose registers live at the start of each instruction
 * (bit N: register N), as backward liveness over the function finds them,
 * every register taken as live at its exits and kept across calls (IPA
 * register allocation relies on callees it knows): *OUT malloc'd, one per
 * instruction. Returns 0 or -ENOMEM. */
int x86_cfg_live_regs(const struct x86_analysis *a, uint16_t **out);
/* Instruction indices where an indirect jump inside the function may land
 * (jump-table entries, computed-goto targets from data words and from label
 * loads): *OUT (malloc'd), *N of them. Returns 0 or -ENOMEM. */
int x86_cfg_indirect_targets(const struct x86_analysis *a, uint32_t **out, size_t *n);
/* Per block, the blocks (index + 1; 0: none) whose run implies its own
 * (implied.c), both 0 when none does: VIA has a row per block. Returns 0 or
 * -ENOMEM. */
int x86_cfg_implied_blocks(const struct x86_analysis *a, uint32_t (*via)[2]);

#endif
