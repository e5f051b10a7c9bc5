/* A decoded x86-64 instruction in the form the relocator needs. Zydis types
 * stay inside src/isa/x86_64/: everything else sees this struct. */
#ifndef RETICLE_X86_INSN_H
#define RETICLE_X86_INSN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum x86_kind {
	X86_OTHER,
	X86_JMP,      /* direct unconditional jump (rel8/rel32) */
	X86_JCC,      /* direct conditional jump */
	X86_LOOP,     /* jrcxz/jecxz/loop/loope/loopne: rel8 only */
	X86_CALL,     /* direct call rel32 */
	X86_IJMP,     /* indirect jump */
	X86_ICALL,    /* indirect call */
	X86_RET,
	X86_STOP,     /* ud2, hlt, int3: execution does not fall through */
	X86_UNSUPPORTED, /* xbegin and other relative forms reticle cannot move */
};

/* Six status flags reticle tracks: CF PF AF ZF SF OF, as bits 0..5. */
enum { X86_FLAGS_ALL = 0x3f };

struct x86_mem {          /* the memory operand, when there is one */
	int8_t base, index;   /* register numbers 0..15, -1 for none, 16 for rip */
	uint8_t scale;
	int64_t disp;
};

struct x86_insn {
	uint64_t addr;
	uint8_t len;
	uint8_t kind;          /* enum x86_kind */
	uint8_t opcode;        /* last opcode byte (Zydis opcode) */
	uint8_t cc;            /* condition code for X86_JCC */
	uint8_t prefix_len;    /* bytes of legacy prefixes before the opcode */
	uint8_t flags_read;    /* X86_FLAGS bits read */
	uint8_t flags_written; /* X86_FLAGS bits always written */
	bool rip_rel;          /* has a rip-relative memory operand */
	bool has_mem;
	bool is_lea;           /* lea: computes an address, reads no memory */
	bool is_movsxd4;       /* movsxd r64, dword [base + index*4]: jump-table load */
	bool rep;              /* rep/repe/repne-prefixed string instruction */
	bool rep_plain;        /* rep movs/stos/lods/ins/outs: exactly rcx iterations */
	/* repe/repne cmps/scas: at most rcx iterations, stops early when ZF
	 * becomes 0 (repe) or 1 (repne); rcx is left at the iterations not run */
	bool rep_cond;
	bool repne;            /* rep_cond with repne (f2): continues while ZF is 0 */
	int8_t dst_reg;        /* register written by lea/mov/movsxd, -1 otherwise */
	uint8_t disp_off;      /* offset of disp32 in the encoding (rip_rel, has_mem) */
	uint8_t disp_size;
	uint64_t target;       /* branch target (direct branches) or rip-relative address */
	struct x86_mem mem;
	bool is_nop;
};

/* A decoded instruction in 24 bytes, without its address (the previous
 * one's end): what warm start keeps on disk instead of decoding again. */
struct x86_packed {
	uint8_t len, kind, opcode, cc, prefix_len, flags_read, flags_written;
	uint8_t bits;          /* the bools of struct x86_insn, and whether target is set */
	uint8_t bits2;
	int8_t dst_reg, base, index;
	uint8_t scale, disp_off, disp_size, pad;
	int32_t disp;          /* mem.disp */
	int32_t target;        /* target - (addr + len), when set */
};
/* Whether IN fits the packed form (every decoded instruction does). */
bool x86_pack(const struct x86_insn *in, struct x86_packed *out);
/* The instruction P at run-time address ADDR. */
void x86_unpack(const struct x86_packed *p, uint64_t addr, struct x86_insn *out);

/* One data access of an instruction, as its registers give it before it
 * runs: the address is base + index * scale + disp (base 16: the absolute
 * address ABS, rip-relative), plus the thread's %fs base with FS. */
enum { X86_ACC_LOAD, X86_ACC_STORE, X86_ACC_MODIFY };   /* as RTL_ACC_* */
struct x86_access {
	struct x86_mem mem;
	uint64_t abs;
	uint16_t size;         /* bytes */
	uint8_t kind;          /* X86_ACC_* */
	bool fs;
	/* a rep-prefixed string instruction's (movs, stos, lods, ins, outs):
	 * rcx accesses of SIZE bytes from the address, upwards (the ABI's
	 * clear direction flag) */
	bool rep;
};
/* The data accesses of the instruction at CODE (run-time ADDR), at most
 * MAX, in valgrind's order (a call's or push's operand, then its stack
 * slot; a pop's or ret's slot first). Returns how many (0: none, as for
 * lea, nop and prefetches), or -1 when they cannot be told from the
 * registers before it runs: repe/repne string instructions (cmps, scas:
 * their count is known after), gathers, 32-bit addresses, %gs operands,
 * xsave and kin, a pop into memory at rsp. */
int x86_data_accesses(const uint8_t *code, size_t len, uint64_t addr, struct x86_access *out, int max);
/* Whether A's address is fixed in the code (rip-relative, or absolute
 * without registers), and that address. */
static inline bool x86_access_static(const struct x86_access *a)
{
	return !a->fs && a->mem.index < 0 && (a->mem.base == 16 || a->mem.base < 0);
}
static inline uint64_t x86_access_static_addr(const struct x86_access *a)
{
	return a->mem.base == 16 ? a->abs : (uint64_t)a->mem.disp;
}

/* Decodes one instruction of at most LEN bytes at run-time address ADDR.
 * Returns 0 or -RTL_ERR_DECODE. */
int x86_decode(const uint8_t *code, size_t len, uint64_t addr, struct x86_insn *out);
/* The instruction at CODE as Intel-syntax text in BUF (format.c); returns
 * its length, or 0 when it does not decode (BUF says "(bad)"). */
int x86_format(const uint8_t *code, size_t len, uint64_t addr, char *buf, size_t size);
/* General-purpose registers (bit N: register N, rax=0 .. r15=15) the
 * instruction at CODE reads (address registers and hidden operands
 * included, and partial or conditional writes, which keep part of the old
 * value) and those it overwrites whole. Unknown: reads all, kills none. */
void x86_regs_rw(const uint8_t *code, size_t len, uint16_t *read, uint16_t *killed);
/* Whether the instruction at CODE is 'mov rREG, IMM' (32 or 64 bits;
 * *IMM as the register receives it). */
bool x86_mov_imm(const uint8_t *code, size_t len, int *reg, uint64_t *imm);
/* Whether the instruction at CODE moves 64-bit register REG by a
 * constant, *DELTA (add or sub of an immediate, inc, dec, 'lea REG,
 * [REG+disp]', and for rsp push and pop); other registers it writes are
 * the caller's to check. */
bool x86_reg_step(const uint8_t *code, size_t len, int reg, int64_t *delta);
/* N when the instruction at CODE is 'jmp rN' (a register, not memory), else -1. */
int x86_jmp_register(const uint8_t *code, size_t len);
/* Whether the instruction at CODE is 'cmp rREG, IMM' with a 32- or 64-bit
 * register (*IMM as the comparison sees it, unsigned; false for a 64-bit
 * comparison with a negative immediate). */
bool x86_cmp_imm(const uint8_t *code, size_t len, int *reg, uint64_t *imm);
/* Registers the instruction at CODE writes, whole or in part, or may
 * write (bit N: register N); all of them when it does not decode. */
uint16_t x86_regs_written(const uint8_t *code, size_t len);
/* Whether the instruction at CODE zero-extends a byte into a 32- or 64-bit
 * register (movzx), and which. */
bool x86_movzx_byte(const uint8_t *code, size_t len, int *reg);
/* Whether the instruction at CODE only undoes a frame: ret, leave, pop or
 * a reload from the frame of a callee-saved register, an add or lea that
 * moves rsp, or the return value moved between registers (into rax, or
 * by movq/movd into xmm0). */
bool x86_is_epilogue(const uint8_t *code, size_t len);

#endif
