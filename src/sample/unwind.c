/* Unwinding a sampled user stack: each frame's call-frame information from
 * its file (elfutils: .eh_frame, else .debug_frame), evaluated over the
 * sample's registers and its copy of the stack; frame pointers where a
 * function has none (Go's code, JIT code). A frame in a copy is looked up
 * at its original instruction: a copy keeps the original's stack layout
 * (its counter code aside, which may lower rsp for a few instructions). */
#include <elfutils/libdw.h>
#include <dwarf.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>
#include "os/linux/perf_ring.h"
#include "sample/sample.h"

enum { DW_RA = 16, DW_NREGS = 17 };

struct unw_mod {
	char *path;
	int fd;
	Elf *elf;
	Dwarf *dw;                /* for .debug_frame */
	Dwarf_CFI *eh, *debug;
	bool debug_tried;
};

struct unw_mods {
	struct unw_mod **mods;
	size_t count, cap;
	struct unw_mod *last;
};

struct unw_mods *unw_mods_new(void)
{
	elf_version(EV_CURRENT);
	return calloc(1, sizeof(struct unw_mods));
}

void unw_mods_free(struct unw_mods *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->count; i++) {
		struct unw_mod *u = m->mods[i];
		if (u->eh)
			dwarf_cfi_end(u->eh);
		if (u->dw)
			dwarf_end(u->dw);
		if (u->elf)
			elf_end(u->elf);
		if (u->fd >= 0)
			close(u->fd);
		free(u->path);
		free(u);
	}
	free(m->mods);
	free(m);
}

/* reticle's own vdso, which is every process's (the same kernel), and its
 * size, for libelf to read from memory. */
static const void *own_vdso(size_t *size)
{
	const uint8_t *v = (const void *)getauxval(AT_SYSINFO_EHDR);
	Elf64_Ehdr eh;
	if (!v)
		return NULL;
	memcpy(&eh, v, sizeof(eh));
	if (memcmp(eh.e_ident, ELFMAG, SELFMAG) || eh.e_ident[EI_CLASS] != ELFCLASS64)
		return NULL;
	*size = eh.e_shoff + (size_t)eh.e_shnum * eh.e_shentsize;
	return v;
}

static struct unw_mod *mod_of(struct unw_mods *m, const char *path)
{
	if (m->last && !strcmp(m->last->path, path))
		return m->last;
	for (size_t i = 0; i < m->count; i++)
		if (!strcmp(m->mods[i]->path, path))
			return m->last = m->mods[i];
	if (m->count == m->cap) {
		size_t cap = m->cap ? m->cap * 2 : 32;
		struct unw_mod **n = realloc(m->mods, cap * sizeof(*n));
		if (!n)
			return NULL;
		m->mods = n;
		m->cap = cap;
	}
	struct unw_mod *u = calloc(1, sizeof(*u));
	if (!u || !(u->path = strdup(path))) {
		free(u);
		return NULL;
	}
	size_t size;
	const void *vdso = strcmp(path, "[vdso]") ? NULL : own_vdso(&size);
	u->fd = vdso ? -1 : open(path, O_RDONLY | O_CLOEXEC);
	if (vdso)   /* every process of this kernel has the same one as ours */
		u->elf = elf_memory((char *)vdso, size);
	else if (u->fd >= 0)
		u->elf = elf_begin(u->fd, ELF_C_READ_MMAP, NULL);
	if (u->elf)
		u->eh = dwarf_getcfi_elf(u->elf);
	m->mods[m->count++] = u;
	return m->last = u;
}

bool unw_load_bias(struct unw_mods *m, const char *path, uint64_t start, uint64_t pgoff, uint64_t *bias)
{
	struct unw_mod *u = mod_of(m, path);
	size_t n;
	if (!u || !u->elf || elf_getphdrnum(u->elf, &n))
		return false;
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;
		if (!gelf_getphdr(u->elf, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		if (pgoff >= (ph.p_offset & ~0xfffull) && pgoff < ph.p_offset + ph.p_filesz) {
			*bias = start - pgoff - (ph.p_vaddr - ph.p_offset);
			return true;
		}
	}
	return false;
}

static Dwarf_CFI *debug_cfi(struct unw_mod *u)
{
	if (!u->debug_tried) {
		u->debug_tried = true;
		if (u->elf && (u->dw = dwarf_begin_elf(u->elf, DWARF_C_READ, NULL)))
			u->debug = dwarf_getcfi(u->dw);
	}
	return u->debug;
}

/* A walk's state: the registers of the frame being left, by DWARF number. */
struct walk {
	uint64_t r[DW_NREGS];
	bool ok[DW_NREGS];
	uint64_t sp0;             /* where the stack copy starts */
	const uint8_t *stack;
	size_t len;
};

static bool read_stack(const struct walk *w, uint64_t addr, uint64_t *v)
{
	if (addr < w->sp0 || addr - w->sp0 > w->len || w->len - (addr - w->sp0) < 8)
		return false;
	memcpy(v, w->stack + (addr - w->sp0), 8);
	return true;
}

/* Evaluates a DWARF expression of CFI. *IS_VALUE: the result is the value
 * (DW_OP_stack_value, or a register location); else it is an address. */
static bool eval(const struct walk *w, const Dwarf_Op *ops, size_t n, uint64_t cfa, uint64_t *out, bool *is_value)
{
	uint64_t st[16];
	size_t sp = 0;
	*is_value = false;
#define PUSH(v) do { uint64_t v_ = (v); if (sp == 16) return false; st[sp++] = v_; } while (0)
#define NEED(k) do { if (sp < (k)) return false; } while (0)
	for (size_t i = 0; i < n; i++) {
		uint8_t op = ops[i].atom;
		uint64_t a, b;
		if (op >= DW_OP_lit0 && op <= DW_OP_lit31) {
			PUSH((uint64_t)(op - DW_OP_lit0));
			continue;
		}
		if ((op >= DW_OP_breg0 && op <= DW_OP_breg31) || op == DW_OP_bregx) {
			unsigned reg = op == DW_OP_bregx ? (unsigned)ops[i].number : (unsigned)(op - DW_OP_breg0);
			int64_t off = (int64_t)(op == DW_OP_bregx ? ops[i].number2 : ops[i].number);
			if (reg >= DW_NREGS || !w->ok[reg])
				return false;
			PUSH(w->r[reg] + (uint64_t)off);
			continue;
		}
		if ((op >= DW_OP_reg0 && op <= DW_OP_reg31) || op == DW_OP_regx) {
			unsigned reg = op == DW_OP_regx ? (unsigned)ops[i].number : (unsigned)(op - DW_OP_reg0);
			if (reg >= DW_NREGS || !w->ok[reg] || i + 1 != n)
				return false;
			*out = w->r[reg];
			*is_value = true;
			return true;
		}
		switch (op) {
		case DW_OP_const1u: case DW_OP_const1s: case DW_OP_const2u: case DW_OP_const2s:
		case DW_OP_const4u: case DW_OP_const4s: case DW_OP_const8u: case DW_OP_const8s:
		case DW_OP_constu: case DW_OP_consts:
			PUSH(ops[i].number);
			break;
		case DW_OP_call_frame_cfa: PUSH(cfa); break;
		case DW_OP_dup: NEED(1); PUSH(st[sp - 1]); break;
		case DW_OP_drop: NEED(1); sp--; break;
		case DW_OP_over: NEED(2); PUSH(st[sp - 2]); break;
		case DW_OP_swap: NEED(2); a = st[sp - 1]; st[sp - 1] = st[sp - 2]; st[sp - 2] = a; break;
		case DW_OP_deref:
			NEED(1);
			if (!read_stack(w, st[sp - 1], &st[sp - 1]))
				return false;
			break;
		case DW_OP_plus_uconst: NEED(1); st[sp - 1] += ops[i].number; break;
		case DW_OP_neg: NEED(1); st[sp - 1] = -st[sp - 1]; break;
		case DW_OP_not: NEED(1); st[sp - 1] = ~st[sp - 1]; break;
		case DW_OP_nop: break;
		case DW_OP_stack_value:
			NEED(1);
			*out = st[sp - 1];
			*is_value = true;
			return true;
		case DW_OP_plus: case DW_OP_minus: case DW_OP_and: case DW_OP_or: case DW_OP_xor:
		case DW_OP_mul: case DW_OP_shl: case DW_OP_shr: case DW_OP_shra:
		case DW_OP_ge: case DW_OP_gt: case DW_OP_le: case DW_OP_lt: case DW_OP_eq: case DW_OP_ne:
			NEED(2);
			b = st[--sp];
			a = st[sp - 1];
			switch (op) {
			case DW_OP_plus: a += b; break;
			case DW_OP_minus: a -= b; break;
			case DW_OP_and: a &= b; break;
			case DW_OP_or: a |= b; break;
			case DW_OP_xor: a ^= b; break;
			case DW_OP_mul: a *= b; break;
			case DW_OP_shl: a = b < 64 ? a << b : 0; break;
			case DW_OP_shr: a = b < 64 ? a >> b : 0; break;
			case DW_OP_shra: a = b < 64 ? (uint64_t)((int64_t)a >> b) : 0; break;
			case DW_OP_ge: a = (int64_t)a >= (int64_t)b; break;
			case DW_OP_gt: a = (int64_t)a > (int64_t)b; break;
			case DW_OP_le: a = (int64_t)a <= (int64_t)b; break;
			case DW_OP_lt: a = (int64_t)a < (int64_t)b; break;
			case DW_OP_eq: a = a == b; break;
			default: a = a != b; break;
			}
			st[sp - 1] = a;
			break;
		default:
			return false;   /* branches, TLS, pieces: not in x86-64 CFI */
		}
	}
#undef PUSH
#undef NEED
	if (!sp)
		return false;
	*out = st[sp - 1];
	return true;
}

/* One step by CFI: the caller's registers into NEXT. -1: no CFI here;
 * 0: stepped; 1: the outermost frame (return address undefined). */
static int step_cfi(struct unw_mod *u, uint64_t link_pc, const struct walk *w, struct walk *next)
{
	Dwarf_Frame *fr = NULL;
	if ((!u->eh || dwarf_cfi_addrframe(u->eh, link_pc, &fr)) &&
	    (!debug_cfi(u) || dwarf_cfi_addrframe(u->debug, link_pc, &fr)))
		return -1;
	int rc = -1;
	Dwarf_Op *ops, mem[3];
	size_t nops;
	uint64_t cfa;
	bool is_value;
	if (dwarf_frame_cfa(fr, &ops, &nops) || !nops || !eval(w, ops, nops, 0, &cfa, &is_value))
		goto out;
	*next = *w;
	for (int reg = 0; reg < DW_NREGS; reg++) {
		if (reg == 7)
			continue;
		if (dwarf_frame_register(fr, reg, mem, &ops, &nops)) {
			next->ok[reg] = false;
			continue;
		}
		if (!nops) {   /* same value (ops NULL) or undefined */
			if (ops) {
				next->ok[reg] = false;
				if (reg == DW_RA) {
					rc = 1;
					goto out;
				}
			}
			continue;
		}
		uint64_t v;
		if (!eval(w, ops, nops, cfa, &v, &is_value) || (!is_value && !read_stack(w, v, &v))) {
			next->ok[reg] = false;
			continue;
		}
		next->r[reg] = v;
		next->ok[reg] = true;
	}
	next->r[7] = cfa;
	next->ok[7] = true;
	rc = next->ok[DW_RA] ? 0 : -1;
out:
	free(fr);
	return rc;
}

/* One step by the frame pointer: rbp holds the caller's rbp, the return
 * address above it. */
static bool step_fp(const struct walk *w, struct walk *next)
{
	uint64_t bp = w->r[6], saved, ra;
	if (!w->ok[6] || bp < w->r[7] || !read_stack(w, bp, &saved) || !read_stack(w, bp + 8, &ra))
		return false;
	*next = *w;
	next->r[6] = saved;
	next->r[DW_RA] = ra;
	next->r[7] = bp + 16;
	next->ok[DW_RA] = next->ok[7] = true;
	return true;
}

size_t unw_stack(struct unw_mods *m, const struct unw_frame_env *env, const uint64_t *regs,
		 const uint8_t *stack, size_t len, uint64_t *frames, uint64_t *cfas, size_t max, bool *truncated)
{
	static const int dw_of[PR_NREGS] = {
		[PR_AX] = 0, [PR_DX] = 1, [PR_CX] = 2, [PR_BX] = 3, [PR_SI] = 4, [PR_DI] = 5,
		[PR_BP] = 6, [PR_SP] = 7, [PR_R8] = 8, [PR_R9] = 9, [PR_R10] = 10, [PR_R11] = 11,
		[PR_R12] = 12, [PR_R13] = 13, [PR_R14] = 14, [PR_R15] = 15, [PR_IP] = DW_RA,
	};
	struct walk w = { .sp0 = regs[PR_SP], .stack = stack, .len = stack ? len : 0 };
	for (int i = 0; i < PR_NREGS; i++) {
		w.r[dw_of[i]] = regs[i];
		w.ok[dw_of[i]] = true;
	}
	size_t n = 0;
	*truncated = true;
	while (n < max) {
		uint64_t pc = w.r[DW_RA];
		if (!pc) {
			*truncated = n == 0;
			break;
		}
		uint64_t at = n ? pc - 1 : pc;
		uint64_t orig = env->original(env->user, at, n == 0);
		if (orig)
			at = orig;
		/* the original instruction's rules know %rsp as it had it (a
		 * return address is at a call, where no snippet has moved it) */
		if (!n && orig && env->sp_below)
			w.r[7] += env->sp_below(env->user, pc);
		if (cfas)
			cfas[n] = 0;
		frames[n++] = at;
		const char *path;
		uint64_t bias;
		struct walk next;
		int rc = -1;
		struct unw_mod *u = env->module_at(env->user, at, &path, &bias) ? mod_of(m, path) : NULL;
		if (u)
			rc = step_cfi(u, at - bias, &w, &next);
		if (rc == 1) {
			*truncated = false;
			break;
		}
		if (rc < 0 && w.ok[6] && !w.r[6] && n > 1) {
			*truncated = false;   /* a frame-pointer chain's end (Go's goexit) */
			break;
		}
		if (rc < 0 && !step_fp(&w, &next))
			break;
		if (next.r[7] <= w.r[7])
			break;   /* the stack must unwind upwards */
		if (cfas)
			cfas[n - 1] = next.r[7];
		w = next;
	}
	return n;
}
