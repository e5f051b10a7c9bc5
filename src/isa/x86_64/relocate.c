/* Whole-function relocation: analysis (decode, jump tables, blocks, flag
 * liveness) then emission of the copy with counters inlined. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <reticle/error.h>
#include "isa/x86_64/insn.h"
#include "util/array.h"
#include "isa/x86_64/arcs.h"
#include "isa/x86_64/predicate.h"
#include "isa/x86_64/timers.h"
#include "isa/x86_64/relocate.h"
#include "isa/x86_64/memtrace.h"

enum { MAX_TABLE_ENTRIES = 4096 };

struct jump_table {
	uint64_t base;       /* original run-time address */
	bool abs64;          /* 8-byte absolute entries; else int32 relative to base */
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
	/* lea r,[rip+L] or mov r,L of a label L of this function that only a
	 * 'jmp r' in the same block uses: a computed goto, sent to L's copy */
	struct goto_src { uint32_t insn, target; int reg; } *gotos;  /* ascending */
	size_t ngotos, capgotos;
};

static bool inside(const struct x86_analysis *a, uint64_t addr)
{
	return addr >= a->env->addr && addr < a->env->addr + a->env->size;
}

/* Instruction index at ADDR, or -1 when ADDR is not an instruction start.
 * glibc jumps over a lock prefix when the process has one thread ('je 1f;
 * lock; 1: cmpxchg'): ADDR just past the lock prefixes of an instruction
 * is that instruction, which does the same, atomically. */
static long index_at(const struct x86_analysis *a, uint64_t addr)
{
	if (!inside(a, addr))
		return -1;
	size_t off = addr - a->env->addr, k = off;
	if (a->at[off])
		return (long)a->at[off] - 1;
	while (k > 0 && off - k < 4 && !a->at[k] && a->env->code[k - 1] == 0xf0)
		k--;
	return k < off && a->at[k] && a->env->code[k] == 0xf0 ? (long)a->at[k] - 1 : -1;
}

static void analysis_free(struct x86_analysis *a)
{
	for (size_t i = 0; i < a->ntables; i++)
		free(a->tables[i].targets);
	free(a->tables);
	if (!a->borrowed)
		free(a->insns);
	free(a->at);
	free(a->leader);
	free(a->block_of);
	free(a->block_first);
	free(a->live_in);
	free(a->table_of);
	free(a->gotos);
}

static int decode_all(struct x86_analysis *a, const char **reason)
{
	const struct x86_reloc_env *env = a->env;
	size_t off = 0;

	/* a whole predecoded function is used as it is (not copied) */
	bool whole = env->ninsns && env->insns[env->ninsns - 1].addr + env->insns[env->ninsns - 1].len ==
					    env->addr + env->size;
	a->borrowed = whole;
	a->insns = whole ? (struct x86_insn *)env->insns : malloc(sizeof(*a->insns) * (env->size + 1));
	a->at = calloc(env->size + 1, sizeof(*a->at));
	if (!a->insns || !a->at)
		return -ENOMEM;
	while (off < env->size) {
		struct x86_insn *in = &a->insns[a->n];
		if (whole)
			;   /* decoded already by the caller */
		else if (a->n < env->ninsns)
			*in = env->insns[a->n];
		else if (x86_decode(env->code + off, env->size - off, env->addr + off, in)) {
			*reason = "undecodable instruction";
			return -RTL_ERR_DECODE;
		}
		if (in->kind == X86_UNSUPPORTED) {
			*reason = "instruction that cannot be moved (xbegin or far branch)";
			return -RTL_ERR_UNSUPPORTED;
		}
		if (in->rip_rel && in->disp_size != 4) {
			*reason = "rip-relative operand without a 32-bit displacement";
			return -RTL_ERR_UNSUPPORTED;
		}
		a->at[off] = (uint32_t)++a->n;
		off += in->len;
	}
	if (off != env->size) {
		*reason = "last instruction runs past the end of the function";
		return -RTL_ERR_DECODE;
	}
	return 0;
}

/* Reads at most LIMIT entries of a candidate jump table at BASE while they
 * land on instruction starts of this function. Entries may also leave the
 * function (gcc sends cases to a .cold part): then they must be code, or
 * the function's end: clang's label for an unreachable case (a switch on
 * an enum without a bounds check, llvm::opt::Option::acceptInternal),
 * after which the table goes on. */
static size_t scan_table(struct x86_analysis *a, uint64_t base, bool abs64, bool inside_only,
			 size_t limit, uint64_t **out)
{
	const struct x86_reloc_env *env = a->env;
	uint64_t *t = NULL;
	size_t n = 0, cap = 0;

	if (inside(a, base))
		return 0;
	while (n < limit) {
		uint64_t target;
		if (abs64) {
			if (env->read(env->ctx, base + 8 * n, &target, 8))
				break;
		} else {
			int32_t rel;
			if (env->read(env->ctx, base + 4 * n, &rel, 4))
				break;
			target = base + (int64_t)rel;
		}
		if (inside(a, target) ? index_at(a, target) < 0
				      : inside_only || (target != env->addr + env->size &&
							!(env->is_code && env->is_code(env->ctx, target))))
			break;
		if (rtl_grow(&t, &cap, n + 1, sizeof(*t)))
			break;
		t[n++] = target;
	}
	*out = t;
	return n;
}

/* The table at BASE, of which instruction INSN reads at most LIMIT
 * entries. A table two dispatches read keeps the larger limit. */
static int add_table(struct x86_analysis *a, size_t insn, uint64_t base, bool abs64, bool inside_only,
		     size_t limit)
{
	size_t at = 0;
	while (at < a->ntables && !(a->tables[at].base == base && a->tables[at].abs64 == abs64))
		at++;
	if (at < a->ntables && a->tables[at].limit >= limit) {
		a->table_of[insn] = (int32_t)at;
		return 0;
	}
	uint64_t *targets = NULL;
	size_t n = scan_table(a, base, abs64, inside_only, limit, &targets);
	if (n < 2) {
		free(targets);
		return 0;
	}
	if (at == a->ntables) {
		struct jump_table *nt = realloc(a->tables, (a->ntables + 1) * sizeof(*nt));
		if (!nt) {
			free(targets);
			return -ENOMEM;
		}
		a->tables = nt;
		a->ntables++;
	} else {
		free(a->tables[at].targets);
	}
	a->tables[at] = (struct jump_table){ .base = base, .abs64 = abs64, .limit = limit, .n = n,
					     .targets = targets };
	a->table_of[insn] = (int32_t)at;
	return 0;
}

/* Instructions a branch of this function or a code pointer enters: a
 * bounds check before them need not run on the way to them. */
static bool *entered_insns(const struct x86_analysis *a)
{
	const struct x86_reloc_env *env = a->env;
	bool *e = calloc(a->n + 1, sizeof(*e));
	if (!e)
		return NULL;
	for (size_t i = 0; i < a->n; i++) {
		const struct x86_insn *in = &a->insns[i];
		long t = in->kind == X86_JMP || in->kind == X86_JCC || in->kind == X86_LOOP ||
				 in->kind == X86_CALL ? index_at(a, in->target) : -1;
		if (t >= 0)
			e[t] = true;
	}
	for (size_t i = 0; i < env->ninterior; i++) {
		long t = index_at(a, env->interior[i]);
		if (t >= 0)
			e[t] = true;
	}
	return e;
}

/* Entries the load at instruction L reads at most, its index in register
 * IDX, when the straight-line code before it bounds the index: 'cmp IDX,
 * N; ja elsewhere' (N + 1 entries; 'jae': N), or a byte zero-extended into
 * IDX (256), with no way into that code between the bound and the load.
 * Without a bound, a scan of consecutive tables of one function, all of
 * whose entries are its code, would read on to MAX_TABLE_ENTRIES (cc1:
 * copies of 2 MB for 21 KB functions). */
static size_t index_bound(const struct x86_analysis *a, const bool *entered, size_t l, int idx)
{
	const struct x86_reloc_env *env = a->env;
	for (size_t k = l; k-- > 0 && l - k <= 16;) {
		if (entered[k + 1])
			break;
		const struct x86_insn *in = &a->insns[k];
		const uint8_t *bytes = env->code + (in->addr - env->addr);
		int reg;
		if (in->kind == X86_JCC) {
			const struct x86_insn *cmp = k ? &a->insns[k - 1] : NULL;
			uint64_t n;
			bool away = in->target <= in->addr || in->target > a->insns[l].addr;
			if ((in->cc == 7 || in->cc == 3) && away && cmp && !entered[k] &&
			    x86_cmp_imm(env->code + (cmp->addr - env->addr), cmp->len, &reg, &n) &&
			    reg == idx && n < MAX_TABLE_ENTRIES)
				return in->cc == 7 ? n + 1 : n;
			break;
		}
		if (in->kind != X86_OTHER)
			break;
		if (x86_regs_written(bytes, in->len) & (1u << idx))
			return x86_movzx_byte(bytes, in->len, &reg) && reg == idx ? 256 : MAX_TABLE_ENTRIES;
	}
	return MAX_TABLE_ENTRIES;
}

/* Whether a rip-relative lea of ADDR may load a jump table's base: not
 * when ADDR is code (a function's address taken, as HotSpot's C1 takes
 * SharedRuntime::lrem's: its bytes read as offsets may well land in code,
 * and the lea would then be sent to a copy of that "table"). */
static bool may_hold_table(const struct x86_reloc_env *env, uint64_t addr)
{
	if (env->in_function)
		return !env->in_function(env->ctx, addr);
	return !(env->is_code && env->is_code(env->ctx, addr));
}

/* Whether instruction I loads a 32-bit table entry as gcc -O0 does: 'mov
 * r32,[rB+rI*S]' (S 1 or 4), then 'cdqe' (gdb's demangler: its copies sent
 * every switch to the original code, which then ran into the patches there). */
static bool is_load32_cdqe(const struct x86_analysis *a, size_t i)
{
	const struct x86_reloc_env *env = a->env;
	const struct x86_insn *in = &a->insns[i];
	if (i + 1 >= a->n || !in->has_mem || in->is_lea || in->opcode != 0x8b || in->mem.base < 0 ||
	    in->mem.base >= 16 || in->mem.index < 0 || in->mem.index >= 16 ||
	    (in->mem.scale != 1 && in->mem.scale != 4))
		return false;
	const uint8_t *op = env->code + (in->addr - env->addr) + in->prefix_len;
	if ((op[0] & 0xf0) == 0x40 && (op[0] & 0x08))
		return false;   /* REX.W: a 64-bit load */
	const uint8_t *next = env->code + (a->insns[i + 1].addr - env->addr);
	return a->insns[i + 1].len == 2 && next[0] == 0x48 && next[1] == 0x98;
}

/* Whether the register a rip-relative lea (instruction I) loads is next
 * used, in the same straight-line run, as the base of a memory access that
 * is not a jump-table load: then the lea takes the address of data, even
 * where its bytes read as offsets land in this function's code (rustc's
 * Resolver::new: 'lea r12,[T]; lea r13,[T+8]; mov bl,[r12+rbp*2]', byte
 * pairs at T, the jump table at T+8; a copy of the "table" at T changed
 * the pairs). */
static bool lea_feeds_data(const struct x86_analysis *a, size_t i)
{
	const struct x86_reloc_env *env = a->env;
	int r = a->insns[i].dst_reg;
	if (r < 0 || r >= 16)
		return false;
	for (size_t j = i + 1; j < a->n && j <= i + 32; j++) {
		const struct x86_insn *in = &a->insns[j];
		if (in->has_mem && !in->is_lea && (in->mem.base == r || in->mem.index == r))
			return !(in->is_movsxd4 || is_load32_cdqe(a, j));
		if (in->kind != X86_OTHER ||
		    (x86_regs_written(env->code + (in->addr - env->addr), in->len) & (1u << r)))
			return false;
	}
	return false;
}

/* PIC switch code: lea rB,[rip+T]; movsxd rX,[rB+rI*4]; add rX,rB; jmp rX
 * (gcc -O0: mov eX,[rB+rI]; cdqe, and a second lea of T for the add).
 * Non-PIC: jmp [T+rI*8] or mov rX,[T+rI*8]. Computed gotos compiled as PIC
 * but linked without relocations (a static or non-PIE executable): lea
 * rB,[rip+T]; mov rX,[rB+rI*8]; jmp rX, T a read-only table of this
 * function's labels. A lea of a table is redirected to a relocated copy,
 * so the dispatch lands in relocated code. */
static int find_jump_tables(struct x86_analysis *a)
{
	const struct x86_reloc_env *env = a->env;
	a->table_of = malloc(a->n * sizeof(*a->table_of));
	if (!a->table_of)
		return -ENOMEM;
	for (size_t i = 0; i < a->n; i++) {
		const struct x86_insn *in = &a->insns[i];
		a->table_of[i] = -1;
		a->has_movsxd4 |= in->is_movsxd4 || is_load32_cdqe(a, i);
		a->has_index8 |= in->has_mem && !in->is_lea && in->mem.base >= 0 && in->mem.base < 16 &&
				 in->mem.index >= 0 && in->mem.index < 16 && in->mem.scale == 8;
	}
	/* addresses some lea of this function takes for data: no lea of them
	 * is a table's (rustc hoists them, and loads the same base again on
	 * paths that jump back into the loop) */
	uint64_t *data = NULL;
	size_t ndata = 0, capdata = 0;
	for (size_t i = 0; a->has_movsxd4 && i < a->n; i++)
		if (a->insns[i].is_lea && a->insns[i].rip_rel && lea_feeds_data(a, i) &&
		    !rtl_grow(&data, &capdata, ndata + 1, sizeof(*data)))
			data[ndata++] = a->insns[i].target;
	bool *entered = NULL;
	for (size_t i = 0; i < a->n; i++) {
		const struct x86_insn *in = &a->insns[i];
		int err = 0;
		bool is_data = false;
		for (size_t k = 0; k < ndata && !is_data; k++)
			is_data = in->is_lea && in->rip_rel && data[k] == in->target;
		if (in->is_lea && in->rip_rel && a->has_movsxd4 && may_hold_table(env, in->target) &&
		    !is_data) {
			err = add_table(a, i, in->target, false, false, MAX_TABLE_ENTRIES);
		} else if (in->has_mem && !in->is_lea && in->mem.base == -1 && in->mem.index >= 0 &&
			   in->mem.index < 16 && in->mem.scale == 8 && in->disp_size == 4) {
			if (!entered && !(entered = entered_insns(a)))
				return -ENOMEM;
			err = add_table(a, i, (uint64_t)in->mem.disp, true, false,
					index_bound(a, entered, i, in->mem.index));
		}
		if (!err && a->table_of[i] < 0 && in->is_lea && in->rip_rel && a->has_index8 &&
		    !inside(a, in->target) && env->is_readonly &&
		    env->is_readonly(env->ctx, in->target, 16))
			err = add_table(a, i, in->target, true, true, MAX_TABLE_ENTRIES);
		if (err) {
			free(entered);
			free(data);
			return err;
		}
	}
	free(entered);
	free(data);
	return 0;
}

/* Whether register R, loaded with a label of this function by instruction
 * I, feeds a 'jmp R' in the same straight-line run with no other use of R
 * on the way. */
static bool feeds_goto(const struct x86_analysis *a, size_t i, int r)
{
	const struct x86_reloc_env *env = a->env;
	for (size_t j = i + 1; j < a->n && j < i + 32; j++) {
		const struct x86_insn *in = &a->insns[j];
		const uint8_t *bytes = env->code + (in->addr - env->addr);
		if (in->kind == X86_IJMP)
			return x86_jmp_register(bytes, in->len) == r;
		uint16_t rd, kill;
		x86_regs_rw(bytes, in->len, &rd, &kill);
		if (in->kind != X86_OTHER || ((rd | kill) & (1u << r)))
			return false;   /* changed, or read for something else */
	}
	return false;
}

enum { ARG_REGS = 0x3c6,        /* rdi rsi rdx rcx r8 r9 */
       CALLEE_SAVED = 0xf028,   /* rbx rbp r12-r15 */
       EXIT_LIVE = 0xf3ff };    /* at a return or a jump out: all but r10, r11 */

/* Instruction indices where an indirect jump inside the function may land
 * (jump-table entries, computed-goto targets from data words and from label
 * loads): *OUT (malloc'd), *N of them. Returns 0 or -ENOMEM. */
static int indirect_targets(const struct x86_analysis *a, uint32_t **out, size_t *n)
{
	const struct x86_reloc_env *env = a->env;
	size_t cap = a->ngotos + env->ninterior;
	for (size_t t = 0; t < a->ntables; t++)
		cap += a->tables[t].n;
	uint32_t *v = malloc((cap ? cap : 1) * sizeof(*v));
	*out = v;
	*n = 0;
	if (!v)
		return -ENOMEM;
	for (size_t t = 0; t < a->ntables; t++)
		for (size_t e = 0; e < a->tables[t].n; e++) {
			long idx = index_at(a, a->tables[t].targets[e]);
			if (idx >= 0)
				v[(*n)++] = (uint32_t)idx;
		}
	for (size_t k = 0; k < env->ninterior; k++) {
		long idx = index_at(a, env->interior[k]);
		if (idx >= 0)
			v[(*n)++] = (uint32_t)idx;
	}
	for (size_t k = 0; k < a->ngotos; k++)
		v[(*n)++] = a->gotos[k].target;
	return 0;
}

/* Whether register R may be read, before it is overwritten, after a jump
 * to one of the function's NIND indirect targets IND: backward liveness of
 * R over instructions. */
static bool live_at_indirect(const struct x86_analysis *a, const uint16_t *rd, const uint16_t *kill,
			     const uint32_t *ind_at, size_t nind, int r, bool *live)
{
	const uint16_t bitr = (uint16_t)(1u << r);
	bool changed = true, ind = false;
	memset(live, 0, a->n * sizeof(*live));
	while (changed) {
		changed = false;
		ind = false;
		for (size_t k = 0; k < nind; k++)
			ind |= live[ind_at[k]];
		for (size_t i = a->n; i-- > 0;) {
			const struct x86_insn *in = &a->insns[i];
			bool next = i + 1 < a->n ? live[i + 1] : (EXIT_LIVE & bitr) != 0;
			long t = (in->kind == X86_JMP || in->kind == X86_JCC || in->kind == X86_LOOP) ?
				 index_at(a, in->target) : -1;
			bool target = t >= 0 ? live[t] : (EXIT_LIVE & bitr) != 0;
			bool out;
			switch (in->kind) {
			case X86_JMP: out = target; break;
			case X86_JCC: case X86_LOOP: out = next || target; break;
			case X86_CALL: case X86_ICALL:
				/* the callee reads arguments and keeps callee-saved ones */
				out = (ARG_REGS & bitr) || ((CALLEE_SAVED & bitr) && next);
				break;
			case X86_RET: out = (EXIT_LIVE & bitr) != 0; break;
			case X86_IJMP: out = ind || (EXIT_LIVE & bitr); break;
			case X86_STOP: out = false; break;
			default: out = next; break;
			}
			bool v = (rd[i] & bitr) || (out && !(kill[i] & bitr));
			if (v != live[i]) {
				live[i] = v;
				changed = true;
			}
		}
	}
	return ind;
}

/* Labels loaded into a register for a computed goto (lea rip in PIC code,
 * mov of an immediate in non-PIC code): the copy loads the label's copy
 * instead, when nothing else reads that register's value (an offset added
 * to a base label, a compare) before it is overwritten. */
static int find_gotos(struct x86_analysis *a)
{
	const struct x86_reloc_env *env = a->env;
	int err = 0;
	for (size_t i = 0; i < a->n; i++) {
		const struct x86_insn *in = &a->insns[i];
		uint64_t target = 0;
		int reg = -1;
		if (in->is_lea && in->rip_rel && a->table_of[i] < 0) {
			target = in->target;
			reg = in->dst_reg;
		} else if (in->kind == X86_OTHER && !in->has_mem &&
			   ((in->opcode & 0xf8) == 0xb8 || in->opcode == 0xc7) && in->len >= 5) {
			/* the immediate ends the instruction: a cheap look first,
			 * since most moves of immediates load small numbers */
			const uint8_t *bytes = env->code + (in->addr - env->addr);
			uint32_t lo32;
			uint64_t imm64 = 0;
			memcpy(&lo32, bytes + in->len - 4, 4);
			if (in->len >= 10)
				memcpy(&imm64, bytes + in->len - 8, 8);
			if ((!inside(a, lo32) && !inside(a, (uint64_t)(int64_t)(int32_t)lo32) &&
			     !inside(a, imm64)) ||
			    !x86_mov_imm(bytes, in->len, &reg, &target))
				continue;
		} else {
			continue;
		}
		long t = index_at(a, target);
		if (reg < 0 || reg > 15 || t < 0 || !feeds_goto(a, i, reg))
			continue;
		if (rtl_grow(&a->gotos, &a->capgotos, a->ngotos + 1, sizeof(*a->gotos)))
			return -ENOMEM;
		a->gotos[a->ngotos++] = (struct goto_src){ (uint32_t)i, (uint32_t)t, reg };
	}
	if (!a->ngotos)
		return 0;
	/* Candidates: keep those whose register is dead wherever the jump may
	 * go (every candidate's label counts as such a place) */
	size_t nind;
	uint32_t *ind_at;
	err = indirect_targets(a, &ind_at, &nind);
	uint16_t *rd = malloc(a->n * sizeof(*rd)), *kill = malloc(a->n * sizeof(*kill));
	bool *live = malloc(a->n * sizeof(*live));
	if (err || !rd || !kill || !live) {
		err = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < a->n; i++) {
		const struct x86_insn *in = &a->insns[i];
		x86_regs_rw(env->code + (in->addr - env->addr), in->len, &rd[i], &kill[i]);
	}
	size_t kept = 0;
	for (size_t k = 0; k < a->ngotos; k++)
		if (!live_at_indirect(a, rd, kill, ind_at, nind, a->gotos[k].reg, live))
			a->gotos[kept++] = a->gotos[k];
	a->ngotos = kept;
out:
	free(ind_at);
	free(rd);
	free(kill);
	free(live);
	return err;
}

static bool ends_block(const struct x86_insn *in)
{
	return in->kind != X86_OTHER;
}

static void mark_leader(struct x86_analysis *a, uint64_t addr)
{
	long idx = index_at(a, addr);
	if (idx >= 0)
		a->leader[idx] = true;
}

static int find_blocks(struct x86_analysis *a, const char **reason)
{
	const struct x86_reloc_env *env = a->env;

	a->leader = calloc(a->n, sizeof(*a->leader));
	a->block_of = malloc(a->n * sizeof(*a->block_of));
	if (!a->leader || !a->block_of)
		return -ENOMEM;
	a->leader[0] = true;
	for (size_t i = 0; i < a->n; i++) {
		const struct x86_insn *in = &a->insns[i];
		if (ends_block(in) && i + 1 < a->n)
			a->leader[i + 1] = true;
		if ((in->kind == X86_JMP || in->kind == X86_JCC || in->kind == X86_LOOP ||
		     in->kind == X86_CALL) && inside(a, in->target)) {
			if (index_at(a, in->target) < 0) {
				*reason = "branch into the middle of an instruction";
				return -RTL_ERR_UNSUPPORTED;
			}
			mark_leader(a, in->target);
		}
	}
	for (size_t t = 0; t < a->ntables; t++)
		for (size_t e = 0; e < a->tables[t].n; e++)
			mark_leader(a, a->tables[t].targets[e]);
	for (size_t k = 0; k < env->ninterior; k++)
		mark_leader(a, env->interior[k]);
	for (size_t k = 0; k < a->ngotos; k++)
		a->leader[a->gotos[k].target] = true;

	a->block_first = malloc(a->n * sizeof(*a->block_first));
	if (!a->block_first)
		return -ENOMEM;
	for (size_t i = 0; i < a->n; i++) {
		if (a->leader[i])
			a->block_first[a->nblocks++] = (uint32_t)i;
		a->block_of[i] = (uint32_t)(a->nblocks - 1);
	}
	return 0;
}

/* Backward dataflow over blocks for the six status flags. At calls, returns,
 * and jumps out of the function the flags are dead (the ABI does not pass
 * flags); an indirect jump may reach any table or computed-goto target. */
static void block_succ_live(const struct x86_analysis *a, size_t b, uint8_t indirect, uint8_t *out)
{
	size_t last = (b + 1 < a->nblocks ? a->block_first[b + 1] : a->n) - 1;
	const struct x86_insn *in = &a->insns[last];
	uint8_t live = 0;
	bool falls = in->kind == X86_OTHER || in->kind == X86_JCC || in->kind == X86_LOOP ||
		     in->kind == X86_CALL || in->kind == X86_ICALL;

	if (falls && b + 1 < a->nblocks)
		live |= a->live_in[b + 1];
	if ((in->kind == X86_JMP || in->kind == X86_JCC || in->kind == X86_LOOP) &&
	    inside(a, in->target))
		live |= a->live_in[a->block_of[index_at(a, in->target)]];
	if (in->kind == X86_IJMP)
		live |= indirect;
	*out = live;
}

static int compute_liveness(struct x86_analysis *a)
{
	bool changed = true;
	size_t nind;
	uint32_t *ind_at;

	a->live_in = calloc(a->nblocks, 1);
	if (indirect_targets(a, &ind_at, &nind) || !a->live_in) {
		free(ind_at);
		return -ENOMEM;
	}
	while (changed) {
		changed = false;
		/* flags live where an indirect jump may land, from the last
		 * pass: a change there makes another pass */
		uint8_t indirect = 0;
		for (size_t k = 0; k < nind; k++)
			indirect |= a->live_in[a->block_of[ind_at[k]]];
		for (size_t b = a->nblocks; b-- > 0;) {
			uint8_t live;
			block_succ_live(a, b, indirect, &live);
			size_t end = b + 1 < a->nblocks ? a->block_first[b + 1] : a->n;
			for (size_t i = end; i-- > a->block_first[b];) {
				const struct x86_insn *in = &a->insns[i];
				if (in->kind == X86_CALL || in->kind == X86_ICALL)
					live = 0;   /* the callee clobbers the flags */
				live = (uint8_t)((live & ~in->flags_written) | in->flags_read);
			}
			if (live != a->live_in[b]) {
				a->live_in[b] = live;
				changed = true;
			}
		}
	}
	free(ind_at);
	return 0;
}

static int analyze(struct x86_analysis *a, const char **reason)
{
	int err;

	if ((err = decode_all(a, reason)) || (err = find_jump_tables(a)) ||
	    (err = find_gotos(a)) || (err = find_blocks(a, reason)) || (err = compute_liveness(a)))
		return err;
	return 0;
}

/* ---- emission ---- */

struct fixup {
	size_t off;          /* offset of a rel32 field in the buffer */
	uint32_t insn;       /* target instruction index */
};

struct emitter {
	struct x86_analysis *a;
	struct x86_writer *w;
	struct x86_reloc *out;
	uint64_t *label;     /* instruction index -> relocated address */
	struct fixup *fix;
	size_t nfix, capfix;
	size_t *table_disp;  /* buffer offsets of disp32 fields that name tables */
	int32_t *table_disp_of;
	uint64_t *table_disp_end;
	size_t ntd;
	struct probe_plan plan;
	bool traces_memory;  /* the plan has RTL_POINT_MEMORY points */
	bool numbered_timers;   /* the entry pushes numbered timers' frames */
};

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
	long idx = index_at(e->a, target);
	/* a recursive call enters through the entry stub, so it counts as a call */
	if (emit == x86_call && target == env->addr) {
		emit(e->w, e->w->base);
		return 0;
	}
	uint64_t dest = idx >= 0 ? x86_writer_pc(e->w) : env->redirect(env->ctx, target);
	size_t off = is_jcc ? x86_jcc(e->w, cc, dest) : emit(e->w, dest);
	return idx >= 0 ? add_fixup(e, off, (uint32_t)idx) : add_ext(e->out, off, target, dest);
}

static int emit_counter(struct x86_writer *w, uint64_t counter, bool keep_flags, bool atomic,
			struct x86_reloc *out);
static int add_site(struct x86_reloc *out, size_t at, bool keep_flags);

/* Before a rep instruction: its block's rep counter += rcx. */
static int emit_rep_count(struct emitter *e, size_t i, struct x86_reloc *out)
{
	const struct x86_reloc_env *env = e->a->env;
	struct x86_block *blk = &out->blocks[e->a->block_of[i]];
	if (!blk->rep_counter && !(blk->rep_counter = env->new_counter(env->ctx)))
		return -RTL_ERR_NO_SPACE;
	size_t at = x86_add_rcx_to_counter(e->w, blk->rep_counter, env->atomic);
	return env->atomic ? 0 : add_site(out, at, false);
}

/* 'lea rsp,[rsp-8]; mov [rsp],lo; mov [rsp+4],hi': pushes call I's
 * original return address (no flags touched, as with a call). The return
 * point is filled in once labels are known (see emit). */
static int push_original_return(struct emitter *e, size_t i, struct x86_reloc *out)
{
	const struct x86_insn *in = &e->a->insns[i];
	uint64_t ret = in->addr + in->len;
	static const uint8_t lea[] = { 0x48, 0x8d, 0x64, 0x24, 0xf8 };
	static const uint8_t mov0[] = { 0xc7, 0x04, 0x24 }, mov4[] = { 0xc7, 0x44, 0x24, 0x04 };
	/* a call that ends the function (to a function that does not return)
	 * has nothing to resume in the copy: its return address is only read,
	 * by an unwinder naming the frame */
	if (i + 1 < e->a->n) {
		if (rtl_grow(&out->rets, &out->caprets, out->nrets + 1, sizeof(*out->rets)))
			return -ENOMEM;
		out->rets[out->nrets++] = (struct x86_ret_patch){ ret, i + 1 };   /* index until emit ends */
	}
	x86_put(e->w, lea, sizeof(lea));
	x86_sp_moved(e->w, 8);   /* back to 0 once the jump that follows is written */
	x86_put(e->w, mov0, sizeof(mov0));
	x86_put_half(e->w, ret, X86_FIX_LO32);
	x86_put(e->w, mov4, sizeof(mov4));
	x86_put_half(e->w, ret, X86_FIX_HI32);
	return 0;
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
	return env->atomic ? 0 : add_site(out, at, false);
}

static const struct goto_src *goto_at(const struct x86_analysis *a, size_t i)
{
	size_t lo = 0, hi = a->ngotos;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (a->gotos[mid].insn < i)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < a->ngotos && a->gotos[lo].insn == i ? &a->gotos[lo] : NULL;
}

/* Whether the flags are live where control goes at ADDR (a block of the
 * function, or anywhere else: assumed live). */
static bool flags_live_at(const struct x86_analysis *a, uint64_t addr)
{
	long idx = index_at(a, addr);
	return idx < 0 || a->live_in[a->block_of[idx]] != 0;
}

static int add_point_id(struct x86_reloc *out, uint64_t addr, uint64_t ctr, enum rtl_point_kind kind,
			enum rtl_primitive op, uint32_t id)
{
	if (rtl_grow(&out->points, &out->cappoints, out->npoints + 1, sizeof(*out->points)))
		return -ENOMEM;
	out->points[out->npoints++] = (struct x86_point_counter){ addr, ctr, (uint8_t)kind, (uint8_t)op, id };
	return 0;
}

static int add_point(struct x86_reloc *out, uint64_t addr, uint64_t ctr, enum rtl_point_kind kind)
{
	return add_point_id(out, addr, ctr, kind, RTL_PRIM_COUNT, 0);
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
	int err = add_point_id(out, pt->addr, words, pt->kind, RTL_PRIM_COUNT_BY, pt->id);
	if (!err)
		err = x86_count_value(e->w, &e->plan.preds[pt->pred + pt->npred], words, env->atomic, sw);
	if (!err && !env->atomic && !(err = add_site(out, sw[0], false)))
		err = add_site(out, sw[1], false);
	return err;
}

/* The snippets with ids of their own at KIND/ADDR, each behind the guard
 * of its predicates: counters, and at the entry the function's timer
 * when the plan numbered it. Flags are dead there and the red zone free. */
static int own_snippets(struct emitter *e, enum rtl_point_kind kind, uint64_t addr, struct x86_reloc *out)
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
			err = x86_timer_push_numbered(e->w, pt[k].id, j == 0 && push_closes);
		} else if (pt[k].op == RTL_PRIM_COUNT_BY) {
			err = count_by(e, &pt[k], out);
		} else {
			uint64_t word = env->new_counter(env->ctx);
			if (!word)
				return -RTL_ERR_NO_SPACE;
			if (!(err = add_point_id(out, addr, word, kind, RTL_PRIM_COUNT, pt[k].id)))
				err = emit_counter(e->w, word, false, env->atomic, out);
		}
		if (err || (err = x86_guard_end(e->w, &g)))
			return err;
		out->own_snippets = true;
	}
	return 0;
}

/* A counter of its own at point KIND/ADDR (the plan has one there): its
 * record and its increment, keeping the flags when KEEP_FLAGS. */
static int point_counter(struct emitter *e, uint64_t addr, enum rtl_point_kind kind, bool keep_flags,
			 struct x86_reloc *out)
{
	const struct x86_reloc_env *env = e->a->env;
	uint64_t ctr = env->new_counter(env->ctx);
	if (!ctr)
		return -RTL_ERR_NO_SPACE;
	int err = add_point(out, addr, ctr, kind);
	return err ? err : emit_counter(e->w, ctr, keep_flags, env->atomic, out);
}

/* A counter for point KIND of branch I, if the plan has one there; a
 * back-edge's counts the times it jumps, as a taken edge's does. */
static int edge_counter(struct emitter *e, size_t i, enum rtl_point_kind kind, struct x86_reloc *out)
{
	const struct x86_analysis *a = e->a;
	const struct x86_insn *in = &a->insns[i];
	if (!probe_plan_has(&e->plan, kind, in->addr))
		return 0;
	/* the fall-through: past the function's end it is assumed live too */
	bool live = flags_live_at(a, kind == RTL_POINT_BRANCH_NOT_TAKEN ? in->addr + in->len : in->target);
	return point_counter(e, in->addr, kind, live, out);
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
	int err = edge_counter(e, i, RTL_POINT_BRANCH_TAKEN, out);
	if (!err)
		err = edge_counter(e, i, RTL_POINT_BACK_EDGE, out);
	if (!err)
		err = branch_to(e, e->a->insns[i].target, x86_jmp, 0, false);
	if (!err)
		err = land_rel8(e->w, skip);
	return err ? err : edge_counter(e, i, RTL_POINT_BRANCH_NOT_TAKEN, out);
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
		return err ? err : edge_counter(e, i, RTL_POINT_BRANCH_NOT_TAKEN, out);
	}
	x86_put_u8(e->w, (uint8_t)(0x70 | (in->cc ^ 1)));
	x86_put_u8(e->w, 0);
	return taken_path(e, i, e->w->len - 1, out);
}

/* Before call I (flags are dead there): the plan's call counter, and for
 * an indirect call the count of its target (two counter words of its
 * own: the arc table's key prefix and address, set by the engine). */
static int call_probes(struct emitter *e, size_t i, const uint8_t *bytes, struct x86_reloc *out)
{
	const struct x86_reloc_env *env = e->a->env;
	const struct x86_insn *in = &e->a->insns[i];
	int err;
	if (probe_plan_has(&e->plan, RTL_POINT_CALL_BEFORE, in->addr) &&
	    (err = point_counter(e, in->addr, RTL_POINT_CALL_BEFORE, false, out)))
		return err;
	/* a call through a table the copy has its own copy of: the snippet
	 * keeps the original displacement, so it reads the original targets */
	if (in->kind != X86_ICALL || !probe_plan_has(&e->plan, RTL_POINT_INDIRECT_TARGET, in->addr))
		return 0;
	uint64_t words = env->new_counter(env->ctx);
	if (!words || env->new_counter(env->ctx) != words + 8)
		return -RTL_ERR_NO_SPACE;
	size_t sw[2];
	if ((err = add_point(out, in->addr, words, RTL_POINT_INDIRECT_TARGET)) ||
	    (err = x86_count_target(e->w, in, bytes, words, env->atomic, sw)))
		return err;
	if (!env->atomic && ((err = add_site(out, sw[0], false)) || (err = add_site(out, sw[1], false))))
		return err;
	return 0;
}

/* Before return I (flags are dead there, and the red zone): the plan's
 * exit counter, and the stop of the function's timer. */
static int exit_probes(struct emitter *e, size_t i, struct x86_reloc *out)
{
	const struct x86_insn *in = &e->a->insns[i];
	int err;
	if (probe_plan_has(&e->plan, RTL_POINT_EXIT, in->addr) &&
	    (err = point_counter(e, in->addr, RTL_POINT_EXIT, false, out)))
		return err;
	if ((err = own_snippets(e, RTL_POINT_EXIT, in->addr, out)))
		return err;
	if ((out->timer_desc || e->numbered_timers) &&
	    probe_plan_has_op(&e->plan, RTL_POINT_EXIT, in->addr, RTL_PRIM_TIMER_STOP))
		return x86_timer_stop(e->w);
	return 0;
}

/* A record of each data access of instruction I, where its block is traced. */
static int memory_records(struct emitter *e, size_t i, const uint8_t *bytes, struct x86_reloc *out)
{
	const struct x86_reloc_env *env = e->a->env;
	const struct x86_insn *in = &e->a->insns[i];
	if (!e->traces_memory || !env->mem_point ||
	    !probe_plan_has_op(&e->plan, RTL_POINT_MEMORY, e->a->insns[e->a->block_first[e->a->block_of[i]]].addr,
			       RTL_PRIM_BUFFER_APPEND))
		return 0;
	struct x86_access acc[4];
	int n = x86_data_accesses(bytes, in->len, in->addr, acc, 4);
	if (n < 0 && env->mem_untraced)
		env->mem_untraced(env->ctx, in->addr);
	for (int k = 0; k < n; k++) {
		uint32_t id = env->mem_point(env->ctx, in->addr, (unsigned)k, &acc[k]);
		int err = id ? x86_memtrace_record(e->w, &acc[k], id, env->fsgsbase) : 0;
		if (err == -RTL_ERR_UNSUPPORTED && env->mem_untraced)
			env->mem_untraced(env->ctx, in->addr);
		else if (err)
			return err;
		out->traces_memory = true;
	}
	return 0;
}

static int emit_insn(struct emitter *e, size_t i, struct x86_reloc *out)
{
	const struct x86_insn *in = &e->a->insns[i];
	const uint8_t *bytes = e->a->env->code + (in->addr - e->a->env->addr);
	struct x86_writer *w = e->w;
	if (in->has_mem || in->kind == X86_CALL || in->kind == X86_ICALL || in->kind == X86_RET ||
	    in->kind == X86_OTHER) {
		int err = memory_records(e, i, bytes, out);
		if (err)
			return err;
	}

	switch (in->kind) {
	case X86_JMP: {
		int err = edge_counter(e, i, RTL_POINT_BACK_EDGE, out);
		return err ? err : branch_to(e, in->target, x86_jmp, 0, false);
	}
	case X86_JCC:
		return counted_branch(e, i, out);
	case X86_CALL: {
		int err = call_probes(e, i, bytes, out);
		if (err)
			return err;
		struct x86_call_site cs = { in->addr, in->target, e->a->block_of[i] };
		if (rtl_grow(&out->calls, &out->capcalls, out->ncalls + 1, sizeof(*out->calls)))
			return -ENOMEM;
		out->calls[out->ncalls++] = cs;
		const struct x86_reloc_env *env = e->a->env;
		if (returns_through_original(e, i) &&
		    (env->original_returns || (env->keeps_caller && env->keeps_caller(env->ctx, in->target))))
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
	 * the push moves, keeps the plain call */
	if (in->kind == X86_ICALL) {
		int err = call_probes(e, i, bytes, out);
		if (err)
			return err;
	}
	uint8_t as_jmp[16];
	int modrm = -1;
	bool pushed = false;   /* the original return address: BYTES jump */
	if (in->kind == X86_ICALL && e->a->env->original_returns && returns_through_original(e, i) &&
	    !(in->has_mem && in->mem.base == 4) && e->a->table_of[i] < 0 &&
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
		int err = exit_probes(e, i, out);
		if (err)
			return err;
	}
	const struct goto_src *g = e->a->ngotos ? goto_at(e->a, i) : NULL;
	if (g)   /* the label's copy, in the register the jump reads */
		return add_fixup(e, x86_lea_rip(w, g->reg), g->target);
	bool rep_count = (in->rep_plain || in->rep_cond) &&
			 probe_plan_has(&e->plan, RTL_POINT_REP_ITERATIONS,
					e->a->insns[e->a->block_first[e->a->block_of[i]]].addr);
	size_t skip = rep_count && in->rep_cond ? x86_rep_cond_skip(w) : 0;
	if (rep_count) {
		int err = emit_rep_count(e, i, out);
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

static int emit_counter(struct x86_writer *w, uint64_t counter, bool keep_flags, bool atomic,
			struct x86_reloc *out)
{
	size_t at = keep_flags ? x86_inc_counter_keep_flags(w, counter, atomic)
			       : x86_inc_counter(w, counter, atomic);
	return atomic ? 0 : add_site(out, at, keep_flags);
}

static int add_site(struct x86_reloc *out, size_t at, bool keep_flags)
{
	if (rtl_grow(&out->sites, &out->capsites, out->nsites + 1, sizeof(*out->sites)))
		return -ENOMEM;
	out->sites[out->nsites++] = (struct x86_counter_site){ (uint32_t)at, keep_flags };
	return 0;
}

static int emit_block_counter(struct emitter *e, size_t b, struct x86_reloc *out)
{
	const struct x86_reloc_env *env = e->a->env;
	struct x86_block *blk = &out->blocks[b];
	size_t first = e->a->block_first[b];
	size_t end = b + 1 < e->a->nblocks ? e->a->block_first[b + 1] : e->a->n;

	blk->addr = e->a->insns[first].addr;
	blk->ninstrs = (uint32_t)(end - first);
	int err = 0;
	if (probe_plan_has(&e->plan, RTL_POINT_BLOCK, blk->addr)) {
		blk->counter = env->new_counter(env->ctx);
		if (!blk->counter)
			return -RTL_ERR_NO_SPACE;
		err = emit_counter(e->w, blk->counter, e->a->live_in[b] != 0, env->atomic, out);
	}
	if (!err && probe_plan_has_op(&e->plan, RTL_POINT_BLOCK, blk->addr, RTL_PRIM_COUNTDOWN))
		err = x86_countdown(e->w, blk->ninstrs, e->a->live_in[b] != 0);
	return err;
}

static int emit_tables(struct emitter *e)
{
	struct x86_analysis *a = e->a;
	struct x86_writer *w = e->w;

	for (size_t t = 0; t < a->ntables; t++) {
		struct jump_table *jt = &a->tables[t];
		x86_align(w, 8, 0xcc);
		jt->new_base = x86_writer_pc(w);
		for (size_t k = 0; k < jt->n; k++) {
			long idx = index_at(a, jt->targets[k]);
			uint64_t target = idx >= 0 ? e->label[idx]
					 : a->env->redirect(a->env->ctx, jt->targets[k]);
			uint64_t orig = idx >= 0 ? 0 : jt->targets[k];
			if (jt->abs64)
				x86_put_abs64(w, target, orig);
			else
				x86_put_rel32(w, jt->new_base, target, orig);
		}
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
	if (env->entry_pad) {
		static const uint8_t nop5[] = { 0x0f, 0x1f, 0x44, 0x00, 0x00 };   /* nop dword [rax+rax] */
		x86_put(&out->w, nop5, sizeof(nop5));
	}
	if (probe_plan_has_op(&e.plan, RTL_POINT_ENTRY, env->addr, RTL_PRIM_TIMER_START)) {
		out->timer_desc = env->new_counter(env->ctx);
		err = -RTL_ERR_NO_SPACE;
		if (!out->timer_desc || (err = x86_timer_start(&out->w, out->timer_desc)))
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
		/* flags are dead at entry */
		if ((err = emit_counter(&out->w, out->entry_counter, false, env->atomic, out)))
			goto out;
	}
	if ((err = own_snippets(&e, RTL_POINT_ENTRY, env->addr, out)))
		goto out;
	for (size_t i = 0; i < a->n; i++) {
		/* a block the compiler aligned after padding (a loop head) stays
		 * aligned in the copy: misaligned hot loops cost more than the nops */
		if (a->leader[i] && i > 0 && a->insns[i].addr % 16 == 0 &&
		    a->insns[i - 1].is_nop)
			x86_align_nops(&out->w, 16);
		e.label[i] = x86_writer_pc(&out->w);
		/* where the call before returns (the return address, or the
		 * return point of an original return): the signal again */
		const struct x86_insn *prev = i ? &a->insns[i - 1] : NULL;
		if (prev && (prev->kind == X86_CALL || prev->kind == X86_ICALL) &&
		    probe_plan_has_op(&e.plan, RTL_POINT_CALL_AFTER, prev->addr, RTL_PRIM_SLOT_SET) &&
		    (err = x86_signal_set(&out->w, out->w.base, env->signal_id)))
			goto out;
		if (a->leader[i] && (err = emit_block_counter(&e, a->block_of[i], out)))
			goto out;
		if ((err = emit_insn(&e, i, out)))
			goto out;
	}
	const struct x86_insn *last = &a->insns[a->n - 1];
	if (last->kind == X86_OTHER || last->kind == X86_JCC || last->kind == X86_LOOP ||
	    last->kind == X86_CALL || last->kind == X86_ICALL) {
		uint64_t next = env->addr + env->size, to = env->redirect(env->ctx, next);
		if ((err = add_ext(out, x86_jmp(&out->w, to), next, to)))
			goto out;
	}
	for (size_t k = 0; k < e.nfix; k++) {
		uint64_t field_end = dest + e.fix[k].off + 4;
		x86_patch_u32(&out->w, e.fix[k].off,
			      (uint32_t)x86_rel32(&out->w, field_end, e.label[e.fix[k].insn]));
	}
	if ((err = emit_tables(&e)))
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
	err = out->w.failed ? -RTL_ERR_NO_SPACE : 0;
out:
	free(e.label);
	free(e.fix);
	free(e.table_disp);
	free(e.table_disp_of);
	free(e.table_disp_end);
	probe_plan_free(&e.plan);
	return err;
}

int x86_analyze(const struct x86_reloc_env *env, struct x86_analysis **out, const char **reason)
{
	*out = NULL;
	*reason = NULL;
	if (env->size == 0) {
		*reason = "empty function";
		return -RTL_ERR_UNSUPPORTED;
	}
	struct x86_analysis *a = calloc(1, sizeof(*a));
	if (!a)
		return -ENOMEM;
	a->env = env;
	int err = analyze(a, reason);
	if (err) {
		x86_analysis_free(a);
		return err;
	}
	a->env = NULL;   /* ENV may be the analysing thread's: x86_emit gets its own */
	*out = a;
	return 0;
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

void x86_analysis_free(struct x86_analysis *a)
{
	if (a) {
		analysis_free(a);
		free(a);
	}
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
	free(r->sites);
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

int x86_decode_function(const uint8_t *code, size_t size, uint64_t addr, struct x86_insn **out,
			size_t *n)
{
	size_t off = 0, k = 0, cap = 0;
	struct x86_insn *v = NULL;
	/* room for an instruction every 4 bytes first: one allocation, mostly */
	int err = rtl_grow(&v, &cap, size / 4 + 16, sizeof(*v));
	while (!err && off < size) {
		if ((err = rtl_grow(&v, &cap, k + 1, sizeof(*v))) ||
		    (err = x86_decode(code + off, size - off, addr + off, &v[k])))
			break;
		off += v[k++].len;
	}
	*out = v;
	*n = k;
	return err;
}

size_t x86_external_targets(const struct x86_insn *insns, size_t n, uint64_t addr, size_t size,
			    uint64_t *out, size_t max)
{
	size_t k = 0;
	for (size_t i = 0; i < n && k < max; i++) {
		const struct x86_insn *in = &insns[i];
		if ((in->kind == X86_JMP || in->kind == X86_JCC || in->kind == X86_LOOP ||
		     in->kind == X86_CALL) && (in->target < addr || in->target >= addr + size))
			out[k++] = in->target;
	}
	return k;
}
