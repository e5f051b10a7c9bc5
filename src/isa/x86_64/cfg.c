/* A function's control flow, for relocating it (cfg.h): its instructions
 * decoded, its jump tables and computed gotos found, its basic blocks and
 * the flags live at each block's entry. Emission (emit.c) reads it. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <reticle/error.h>
#include "isa/x86_64/cfg.h"
#include "util/array.h"

enum { MAX_TABLE_ENTRIES = 4096, MIN_OFFSET_ENTRIES = 4 };

void x86_cfg_free(struct x86_analysis *a)
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
	free(a->label_bases);
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
			 long rel_label, size_t limit, uint64_t **out)
{
	const struct x86_reloc_env *env = a->env;
	uint64_t *t = NULL;
	size_t n = 0, cap = 0;

	if (cfg_inside(a, base))
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
			target = (rel_label >= 0 ? a->insns[rel_label].addr : base) + (int64_t)rel;
		}
		if (cfg_inside(a, target) ? cfg_index_at(a, target) < 0
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

/* How many values V[0..N) holds, up to 3. */
static size_t distinct(const uint64_t *v, size_t n)
{
	uint64_t seen[3];
	size_t k = 0;
	for (size_t i = 0; i < n && k < 3; i++) {
		bool dup = false;
		for (size_t j = 0; j < k && !dup; j++)
			dup = seen[j] == v[i];
		if (!dup)
			seen[k++] = v[i];
	}
	return k;
}

/* The table at BASE, of which instruction INSN reads at most LIMIT
 * entries. A table two dispatches read keeps the larger limit. */
static int add_table(struct x86_analysis *a, size_t insn, uint64_t base, bool abs64, bool inside_only,
		     long rel_label, size_t limit)
{
	size_t at = 0;
	while (at < a->ntables && !(a->tables[at].base == base && a->tables[at].abs64 == abs64 &&
				    a->tables[at].rel_label == rel_label))
		at++;
	if (at < a->ntables && a->tables[at].limit >= limit) {
		a->table_of[insn] = (int32_t)at;
		return 0;
	}
	uint64_t *targets = NULL;
	size_t n = scan_table(a, base, abs64, inside_only, rel_label, limit, &targets);
	/* a table of offsets from a label: at least a few, and of a few
	 * values: relocated data holds zeros in the file (a FILE's vtable in
	 * vfprintf, its copy then refused by glibc's vtable check) */
	if (n < (rel_label >= 0 ? MIN_OFFSET_ENTRIES : 2) || (rel_label >= 0 && distinct(targets, n) < 3)) {
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
	a->tables[at] = (struct jump_table){ .base = base, .abs64 = abs64, .rel_label = rel_label, .limit = limit,
					     .n = n, .targets = targets };
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
				 in->kind == X86_CALL ? cfg_index_at(a, in->target) : -1;
		if (t >= 0)
			e[t] = true;
	}
	for (size_t i = 0; i < env->ninterior; i++) {
		long t = cfg_index_at(a, env->interior[i]);
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

/* The REX prefix of IN (0 for none): the byte before its one-byte opcode
 * (prefix_len counts it). */
static uint8_t rex_of(const struct x86_analysis *a, const struct x86_insn *in)
{
	const uint8_t *op = a->env->code + (in->addr - a->env->addr) + in->prefix_len;
	return in->prefix_len && (op[-1] & 0xf0) == 0x40 ? op[-1] : 0;
}

/* Whether instruction I is 'cdqe' (48 98): eax sign-extended into rax. */
static bool is_cdqe(const struct x86_analysis *a, size_t i)
{
	const uint8_t *b = a->env->code + (a->insns[i].addr - a->env->addr);
	return a->insns[i].len == 2 && b[0] == 0x48 && b[1] == 0x98;
}

/* Whether instruction I loads a 32-bit table entry as gcc -O0 does: 'mov
 * r32,[rB+rI*S]' (S 1 or 4), then 'cdqe' (gdb's demangler: its copies sent
 * every switch to the original code, which then ran into the patches there). */
static bool is_load32_cdqe(const struct x86_analysis *a, size_t i)
{
	const struct x86_insn *in = &a->insns[i];
	if (i + 1 >= a->n || !in->has_mem || in->is_lea || in->opcode != 0x8b || in->mem.base < 0 ||
	    in->mem.base >= 16 || in->mem.index < 0 || in->mem.index >= 16 ||
	    (in->mem.scale != 1 && in->mem.scale != 4))
		return false;
	if (rex_of(a, in) & 0x08)
		return false;   /* REX.W: a 64-bit load */
	return is_cdqe(a, i + 1);
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

/* 'add D, S' of two 64-bit registers (REX.W 01 /r or 03 /r, register
 * operands): its registers. */
static bool add_reg_reg(const uint8_t *b, size_t len, int *d, int *s)
{
	if (len != 3 || (b[0] & 0xf8) != 0x48 || (b[1] != 0x01 && b[1] != 0x03) || (b[2] & 0xc0) != 0xc0)
		return false;
	int reg = ((b[2] >> 3) & 7) | (b[0] & 4 ? 8 : 0), rm = (b[2] & 7) | (b[0] & 1 ? 8 : 0);
	*d = b[1] == 0x01 ? rm : reg;
	*s = b[1] == 0x01 ? reg : rm;
	return true;
}

/* Whether IN is a 64-bit 'mov' between a register and a stack-like slot
 * [rB+disp] (no index): a load (8b) or a store (89), as OPCODE says;
 * the register in *REG. */
static bool slot_move(const struct x86_analysis *a, const struct x86_insn *in, uint8_t opcode, int *reg)
{
	const uint8_t *op = a->env->code + (in->addr - a->env->addr) + in->prefix_len;
	uint8_t rex = rex_of(a, in);
	if (!in->has_mem || in->is_lea || in->rip_rel || in->opcode != opcode || op[0] != opcode ||
	    in->mem.base < 0 || in->mem.base >= 16 || in->mem.index != -1 || !(rex & 0x08))
		return false;
	*reg = ((op[1] >> 3) & 7) | (rex & 4 ? 8 : 0);
	return true;
}

/* The register that holds the target of a dispatch whose straight-line
 * run ends at instruction J: its 'jmp R'; a jump to a shared 'jmp R' (gcc
 * -O0); or a jump to a shared 'mov R,[S]; jmp R' of a slot S the run
 * stored into (clang -O0), then the register stored. *FROM: where the
 * run before that register's value ends (scanned back from). -1: J ends
 * no dispatch. */
static int dispatch_register(const struct x86_analysis *a, size_t j, size_t *from)
{
	const struct x86_reloc_env *env = a->env;
	const struct x86_insn *end = &a->insns[j];
	long t = end->kind == X86_IJMP ? (long)j : end->kind == X86_JMP ? cfg_index_at(a, end->target) : -1;
	if (t < 0)
		return -1;
	*from = j;
	const struct x86_insn *to = &a->insns[t];
	if (to->kind == X86_IJMP)
		return x86_jmp_register(env->code + (to->addr - env->addr), to->len);
	int r, q;
	if ((size_t)t + 1 >= a->n || a->insns[t + 1].kind != X86_IJMP || !slot_move(a, to, 0x8b, &r) ||
	    r != x86_jmp_register(env->code + (a->insns[t + 1].addr - env->addr), a->insns[t + 1].len))
		return -1;
	for (size_t k = j; k-- > 0 && j - k <= 4;) {
		const struct x86_insn *st = &a->insns[k];
		if (st->kind != X86_OTHER)
			return -1;
		if (slot_move(a, st, 0x89, &q) && st->mem.base == to->mem.base && st->mem.disp == to->mem.disp) {
			*from = k;
			return q;
		}
	}
	return -1;
}

/* Dispatches through a table of offsets from a label of this function:
 * 'goto *(&&L + table[i])', as glibc's vfprintf dispatches on each
 * character of a format (and OCaml's bytecode interpreter on each
 * opcode). The straight-line run 'movsxd rX,[rT+rI*4] ... add rX,rB ...
 * jmp rX' (or the add into rB, the jump through rB) names the registers
 * that held the table (rT) and the label (rB). A rip-relative lea of
 * read-only data into rT whose entries, added to a label some lea loads
 * into rB, land on this function's instructions is such a table: its copy
 * holds the offsets from the label's copy, and the lea of the label loads
 * the label's copy. Before, the dispatch kept the original label and ran
 * the original code on, uncounted (vfprintf: two thirds of its
 * instructions). */
static int offset_tables(struct x86_analysis *a)
{
	const struct x86_reloc_env *env = a->env;
	struct { int t, b; } pairs[8];
	size_t npairs = 0;
	/* Not in a process with original return addresses, attached ones
	 * among them: a thread a detach finds between the table's load and
	 * the jump holds an offset from the label's copy, which no register
	 * translation mends (the original code then adds it to the original
	 * label). */
	if (env->original_returns)
		return 0;
	for (size_t j = 0; j < a->n && npairs < 8; j++) {
		size_t from = j;
		int r = dispatch_register(a, j, &from);
		for (size_t k = from; r >= 0 && k-- > 0 && from - k <= 8;) {
			const struct x86_insn *in = &a->insns[k];
			const uint8_t *bytes = env->code + (in->addr - env->addr);
			int d, s;
			if (in->kind != X86_OTHER)
				break;
			if (!add_reg_reg(bytes, in->len, &d, &s) || d != r) {
				if (x86_regs_written(bytes, in->len) & (1u << r))
					break;
				continue;
			}
			for (size_t m = k; m-- > 0 && k - m <= 8;) {
				const struct x86_insn *ld = &a->insns[m];
				if (ld->kind != X86_OTHER)
					break;
				/* gcc -O0: 'mov eax,[rI4+rT]; cdqe', the table the base
				 * or the index */
				bool cdqe = is_load32_cdqe(a, m);
				if ((ld->is_movsxd4 || cdqe) && (ld->dst_reg == d || ld->dst_reg == s)) {
					int b = ld->dst_reg == d ? s : d;
					int t[2] = { ld->mem.base, cdqe ? ld->mem.index : -1 };
					/* rB loaded with a label of this function after the
					 * table's load (clang -O0 reuses rT for it) */
					bool rebased = false;
					for (size_t x = m + 1; x < k && !rebased; x++)
						rebased = a->insns[x].is_lea && a->insns[x].rip_rel &&
							  a->insns[x].dst_reg == b && cfg_index_at(a, a->insns[x].target) >= 0;
					for (int q = 0; q < 2 && npairs < 8; q++) {
						/* rT == rB: a switch's table of offsets from itself */
						bool dup = t[q] < 0 || t[q] >= 16 || (t[q] == b && !rebased);
						for (size_t p = 0; p < npairs && !dup; p++)
							dup = pairs[p].t == t[q] && pairs[p].b == b;
						if (!dup) {
							pairs[npairs].t = t[q];
							pairs[npairs++].b = b;
						}
					}
					break;
				}
			}
			break;
		}
	}
	for (size_t i = 0; i < a->n && npairs; i++) {
		const struct x86_insn *in = &a->insns[i];
		if (!in->is_lea || !in->rip_rel || a->table_of[i] >= 0 || cfg_inside(a, in->target) ||
		    !may_hold_table(env, in->target) || !env->is_readonly ||
		    !env->is_readonly(env->ctx, in->target, 4 * MIN_OFFSET_ENTRIES))
			continue;
		for (size_t k = 0; k < a->n && a->table_of[i] < 0; k++) {
			const struct x86_insn *bl = &a->insns[k];
			long label = bl->is_lea && bl->rip_rel ? cfg_index_at(a, bl->target) : -1;
			bool paired = false;
			for (size_t p = 0; p < npairs && !paired && label >= 0; p++)
				paired = pairs[p].t == in->dst_reg && pairs[p].b == bl->dst_reg;
			if (!paired)
				continue;
			int err = add_table(a, i, in->target, false, true, label, MAX_TABLE_ENTRIES);
			if (err)
				return err;
		}
	}
	/* the leas of the labels the tables found are relative to */
	for (size_t k = 0; k < a->n; k++) {
		const struct x86_insn *bl = &a->insns[k];
		long label = bl->is_lea && bl->rip_rel && a->table_of[k] < 0 ? cfg_index_at(a, bl->target) : -1;
		bool used = false;
		for (size_t t = 0; t < a->ntables && !used && label >= 0; t++)
			used = a->tables[t].rel_label == label;
		if (!used || bl->dst_reg < 0 || bl->dst_reg > 15)
			continue;
		if (rtl_grow(&a->label_bases, &a->caplabel_bases, a->nlabel_bases + 1, sizeof(*a->label_bases)))
			return -ENOMEM;
		a->label_bases[a->nlabel_bases++] = (struct goto_src){ (uint32_t)k, (uint32_t)label, bl->dst_reg };
	}
	return 0;
}

/* 'add D, imm32' of a 64-bit register (REX.W 05 id into rax, REX.W 81 /0
 * id): D and the immediate. */
static bool add_reg_imm32(const uint8_t *b, size_t len, int *d, int64_t *imm)
{
	int32_t v;
	if (len == 6 && b[0] == 0x48 && b[1] == 0x05) {
		*d = 0;
		memcpy(&v, b + 2, 4);
	} else if (len == 7 && (b[0] == 0x48 || b[0] == 0x49) && b[1] == 0x81 && (b[2] & 0xf8) == 0xc0) {
		*d = (b[2] & 7) | (b[0] & 1 ? 8 : 0);
		memcpy(&v, b + 3, 4);
	} else {
		return false;
	}
	*imm = v;
	return true;
}

/* Whether instruction M loads a 32-bit entry of a table at an absolute
 * address into register S, sign-extended: 'movsxd rS,[T+rI*4]', or gcc
 * -O0's 'mov eax,[T+rI*4]; cdqe'. */
static bool loads_abs_entry(const struct x86_analysis *a, size_t m, int s)
{
	const struct x86_insn *ld = &a->insns[m];
	if (!ld->has_mem || ld->is_lea || ld->rip_rel || ld->mem.base != -1 || ld->mem.index < 0 ||
	    ld->mem.index >= 16 || ld->mem.scale != 4 || ld->disp_size != 4 || ld->dst_reg != s)
		return false;
	if (ld->opcode == 0x63)
		return (rex_of(a, ld) & 0x08) != 0;   /* movsxd r64 */
	return ld->opcode == 0x8b && s == 0 && m + 1 < a->n && !(rex_of(a, ld) & 0x08) && is_cdqe(a, m + 1);
}

/* Dispatches through a table of offsets from a label in non-PIE code,
 * where the label is an immediate: 'movsxd rX,[T+rI*4]; add rX,L; jmp rX'
 * (gcc), 'lea rX,[rX+L]' (clang), gcc -O0's 'mov eax,[T+rI*4]; cdqe; add
 * rax,L' and a jump to a shared 'jmp rax'. The copy keeps L (so a thread
 * needs no translation of it) and its table holds the offsets from L to
 * the labels' copies, which are within 2 GiB of it (windows lie beside
 * their modules). Before, the dispatch ran the original code, uncounted. */
static int label_offset_tables(struct x86_analysis *a)
{
	const struct x86_reloc_env *env = a->env;
	if (env->original_returns || !env->is_readonly)   /* as offset_tables */
		return 0;
	for (size_t j = 0; j < a->n; j++) {
		size_t from = j;
		int r = dispatch_register(a, j, &from), s = -1;
		size_t k = from;
		int64_t label_addr = 0;
		/* the add or lea of the label into R */
		while (r >= 0 && s < 0 && k-- > 0 && from - k <= 8) {
			const struct x86_insn *in = &a->insns[k];
			const uint8_t *bytes = env->code + (in->addr - env->addr);
			int d;
			if (in->kind != X86_OTHER)
				break;
			if (add_reg_imm32(bytes, in->len, &d, &label_addr) && d == r) {
				s = r;
			} else if (in->is_lea && !in->rip_rel && in->dst_reg == r && in->mem.base >= 0 &&
				   in->mem.base < 16 && in->mem.index == -1 && in->disp_size == 4) {
				s = in->mem.base;
				label_addr = in->mem.disp;
			} else if (x86_regs_written(bytes, in->len) & (1u << r)) {
				break;
			}
		}
		long label = s >= 0 ? cfg_index_at(a, (uint64_t)label_addr) : -1;
		if (label < 0)
			continue;
		/* the table's load into S before it, S written by nothing between */
		for (size_t m = k; m-- > 0 && k - m <= 8;) {
			const struct x86_insn *ld = &a->insns[m];
			if (ld->kind != X86_OTHER)
				break;
			if (loads_abs_entry(a, m, s)) {
				uint64_t table = (uint64_t)ld->mem.disp;
				if (cfg_inside(a, table) || !env->is_readonly(env->ctx, table, 4 * MIN_OFFSET_ENTRIES))
					break;
				int err = add_table(a, m, table, false, true, label, MAX_TABLE_ENTRIES);
				if (err)
					return err;
				if (a->table_of[m] >= 0)
					a->tables[a->table_of[m]].label_kept = true;
				break;
			}
			/* (cdqe writes rax after the load: the load is one back) */
			if (!(s == 0 && is_cdqe(a, m)) &&
			    (x86_regs_written(env->code + (ld->addr - env->addr), ld->len) & (1u << s)))
				break;
		}
	}
	return 0;
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
		a->has_abs4 |= in->has_mem && !in->is_lea && in->mem.base == -1 && in->mem.index >= 0 &&
			       in->mem.scale == 4;
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
			err = add_table(a, i, in->target, false, false, -1, MAX_TABLE_ENTRIES);
		} else if (in->has_mem && !in->is_lea && in->mem.base == -1 && in->mem.index >= 0 &&
			   in->mem.index < 16 && in->mem.scale == 8 && in->disp_size == 4) {
			if (!entered && !(entered = entered_insns(a)))
				return -ENOMEM;
			err = add_table(a, i, (uint64_t)in->mem.disp, true, false, -1,
					index_bound(a, entered, i, in->mem.index));
		}
		if (!err && a->table_of[i] < 0 && in->is_lea && in->rip_rel && a->has_index8 &&
		    !cfg_inside(a, in->target) && env->is_readonly &&
		    env->is_readonly(env->ctx, in->target, 16))
			err = add_table(a, i, in->target, true, true, -1, MAX_TABLE_ENTRIES);
		if (err) {
			free(entered);
			free(data);
			return err;
		}
	}
	free(entered);
	free(data);
	int err = a->has_movsxd4 ? offset_tables(a) : 0;
	return err || !a->has_abs4 ? err : label_offset_tables(a);
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

int x86_cfg_indirect_targets(const struct x86_analysis *a, uint32_t **out, size_t *n)
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
			long idx = cfg_index_at(a, a->tables[t].targets[e]);
			if (idx >= 0)
				v[(*n)++] = (uint32_t)idx;
		}
	for (size_t k = 0; k < env->ninterior; k++) {
		long idx = cfg_index_at(a, env->interior[k]);
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
				 cfg_index_at(a, in->target) : -1;
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

/* (A register the ABI lets a callee clobber may still be live across the
 * call, and at an exit: GCC's interprocedural register allocation keeps
 * values in registers a callee in the same unit is known to leave alone.) */
enum { ALL_LIVE = 0xffff };

int x86_cfg_live_regs(const struct x86_analysis *a, uint16_t **out)
{
	const struct x86_reloc_env *env = a->env;
	size_t nind;
	uint32_t *ind_at;
	int err = x86_cfg_indirect_targets(a, &ind_at, &nind);
	uint16_t *rd = malloc(a->n * sizeof(*rd)), *kill = malloc(a->n * sizeof(*kill));
	uint16_t *live = calloc(a->n, sizeof(*live));
	if (err || !rd || !kill || !live) {
		free(live);
		live = NULL;
		err = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < a->n; i++) {
		const struct x86_insn *in = &a->insns[i];
		x86_regs_rw(env->code + (in->addr - env->addr), in->len, &rd[i], &kill[i]);
	}
	for (bool changed = true; changed;) {
		changed = false;
		uint16_t ind = 0;
		for (size_t k = 0; k < nind; k++)
			ind |= live[ind_at[k]];
		for (size_t i = a->n; i-- > 0;) {
			const struct x86_insn *in = &a->insns[i];
			uint16_t next = i + 1 < a->n ? live[i + 1] : ALL_LIVE;
			long t = (in->kind == X86_JMP || in->kind == X86_JCC || in->kind == X86_LOOP) ?
				 cfg_index_at(a, in->target) : -1;
			uint16_t target = t >= 0 ? live[t] : ALL_LIVE, o;
			switch (in->kind) {
			case X86_JMP: o = target; break;
			case X86_JCC: case X86_LOOP: o = next | target; break;
			case X86_CALL: case X86_ICALL: o = ARG_REGS | next; break;
			case X86_RET: o = ALL_LIVE; break;
			case X86_IJMP: o = ind | ALL_LIVE; break;
			case X86_STOP: o = 0; break;
			default: o = next; break;
			}
			uint16_t v = (uint16_t)(rd[i] | (o & ~kill[i]));
			if (v != live[i]) {
				live[i] = v;
				changed = true;
			}
		}
	}
out:
	free(ind_at);
	free(rd);
	free(kill);
	*out = live;
	return err;
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
			if ((!cfg_inside(a, lo32) && !cfg_inside(a, (uint64_t)(int64_t)(int32_t)lo32) &&
			     !cfg_inside(a, imm64)) ||
			    !x86_mov_imm(bytes, in->len, &reg, &target))
				continue;
		} else {
			continue;
		}
		long t = cfg_index_at(a, target);
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
	err = x86_cfg_indirect_targets(a, &ind_at, &nind);
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

/* The leas of labels that tables of offsets are relative to join the
 * computed gotos' (ascending): the copy loads the label's copy. */
static int add_label_bases(struct x86_analysis *a)
{
	for (size_t k = 0; k < a->nlabel_bases; k++) {
		const struct goto_src *b = &a->label_bases[k];
		size_t at = 0;
		while (at < a->ngotos && a->gotos[at].insn < b->insn)
			at++;
		if (at < a->ngotos && a->gotos[at].insn == b->insn)
			continue;
		if (rtl_grow(&a->gotos, &a->capgotos, a->ngotos + 1, sizeof(*a->gotos)))
			return -ENOMEM;
		memmove(&a->gotos[at + 1], &a->gotos[at], (a->ngotos - at) * sizeof(*a->gotos));
		a->gotos[at] = *b;
		a->ngotos++;
	}
	return 0;
}

static bool ends_block(const struct x86_insn *in)
{
	return in->kind != X86_OTHER;
}

static void mark_leader(struct x86_analysis *a, uint64_t addr)
{
	long idx = cfg_index_at(a, addr);
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
		/* a rep string instruction ends its block too (valgrind's
		 * translation loops on it alone): its block's counter of
		 * iterations is then its own, for reports by instruction */
		if ((ends_block(in) || in->rep) && i + 1 < a->n)
			a->leader[i + 1] = true;
		if ((in->kind == X86_JMP || in->kind == X86_JCC || in->kind == X86_LOOP ||
		     in->kind == X86_CALL) && cfg_inside(a, in->target)) {
			if (cfg_index_at(a, in->target) < 0) {
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
	/* where its .cold parts jump back: a block starts there, or the
	 * instructions from there to the block's end would run uncounted */
	for (size_t k = 0; k < env->nforeign; k++)
		mark_leader(a, env->foreign[k]);
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
void x86_cfg_block_succs(const struct x86_analysis *a, size_t b, bool call_edges, uint32_t s[2], bool *leaves)
{
	size_t end = b + 1 < a->nblocks ? a->block_first[b + 1] : a->n;
	const struct x86_insn *in = &a->insns[end - 1];
	size_t n = 0;
	s[0] = s[1] = X86_NO_BLOCK;
	*leaves = in->kind == X86_RET || in->kind == X86_IJMP || in->kind == X86_STOP ||
		  in->kind == X86_UNSUPPORTED;
	if (in->kind == X86_JMP || in->kind == X86_JCC || in->kind == X86_LOOP ||
	    (call_edges && in->kind == X86_CALL)) {
		long t = cfg_index_at(a, in->target);
		if (t >= 0)
			s[n++] = a->block_of[t];
		else if (in->kind != X86_CALL)   /* a tail call, a .cold part */
			*leaves = true;
	}
	if (in->kind == X86_OTHER || in->kind == X86_JCC || in->kind == X86_LOOP || in->kind == X86_CALL ||
	    in->kind == X86_ICALL) {
		if (b + 1 < a->nblocks)
			s[n++] = (uint32_t)(b + 1);
		else
			*leaves = true;   /* falls out of the function */
	}
}

static void block_succ_live(const struct x86_analysis *a, size_t b, uint8_t indirect, uint8_t *out)
{
	uint32_t s[2];
	bool leaves;
	uint8_t live = 0;
	x86_cfg_block_succs(a, b, false, s, &leaves);
	for (int k = 0; k < 2; k++)
		if (s[k] != X86_NO_BLOCK)
			live |= a->live_in[s[k]];
	size_t end = b + 1 < a->nblocks ? a->block_first[b + 1] : a->n;
	if (a->insns[end - 1].kind == X86_IJMP)
		live |= indirect;
	*out = live;
}

static int compute_liveness(struct x86_analysis *a)
{
	bool changed = true;
	size_t nind;
	uint32_t *ind_at;

	a->live_in = calloc(a->nblocks, 1);
	if (x86_cfg_indirect_targets(a, &ind_at, &nind) || !a->live_in) {
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

int x86_cfg_analyze(struct x86_analysis *a, const char **reason)
{
	int err;

	if ((err = decode_all(a, reason)) || (err = find_jump_tables(a)) ||
	    (err = find_gotos(a)) || (err = add_label_bases(a)) || (err = find_blocks(a, reason)) ||
	    (err = compute_liveness(a)))
		return err;
	return 0;
}

const struct goto_src *x86_cfg_goto_at(const struct x86_analysis *a, size_t i)
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
bool x86_cfg_flags_live_at(const struct x86_analysis *a, uint64_t addr)
{
	long idx = cfg_index_at(a, addr);
	return idx < 0 || a->live_in[a->block_of[idx]] != 0;
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
	int err = x86_cfg_analyze(a, reason);
	if (err) {
		x86_analysis_free(a);
		return err;
	}
	a->env = NULL;   /* ENV may be the analysing thread's: x86_emit gets its own */
	*out = a;
	return 0;
}

void x86_analysis_free(struct x86_analysis *a)
{
	if (a) {
		x86_cfg_free(a);
		free(a);
	}
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

size_t x86_cfg_targets_outside(const struct x86_analysis *a, uint64_t addr, uint64_t size, uint64_t *out,
			       size_t max, bool *more)
{
	size_t k = x86_external_targets(a->insns, a->n, addr, size, out, max);
	*more = k == max;
	for (size_t t = 0; t < a->ntables; t++)
		for (size_t i = 0; i < a->tables[t].n; i++)
			if (a->tables[t].targets[i] < addr || a->tables[t].targets[i] >= addr + size) {
				if (k == max) {
					*more = true;
					return k;
				}
				out[k++] = a->tables[t].targets[i];
			}
	return k;
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

bool x86_cfg_has_offset_tables(const struct x86_analysis *a)
{
	for (size_t t = 0; t < a->ntables; t++)
		if (a->tables[t].rel_label >= 0)
			return true;
	return false;
}
