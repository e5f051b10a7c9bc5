/* Emits x86-64 machine code into a growable buffer whose final run-time
 * address is known (BASE), so rip-relative forms can be computed directly.
 * The buffer is owned by the writer and freed by x86_writer_free(). */
#ifndef RETICLE_X86_WRITER_H
#define RETICLE_X86_WRITER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* A field whose value depends on where the code, its counters or what it
 * reaches are: the writer logs each one it puts, so that a copy can be
 * saved and placed elsewhere in a later run (isa/x86_64/persist.c). The
 * rel32 of x86_jmp, x86_jcc and x86_call are not logged: the relocator
 * keeps those that leave the copy (x86_reloc.ext), and the others stay
 * within it. */
enum x86_fix_kind {
	X86_FIX_REL32,   /* int32 TARGET - BASE */
	X86_FIX_ABS64,   /* TARGET */
	X86_FIX_ABS32,   /* TARGET as a sign-extended int32 */
	X86_FIX_LO32,    /* TARGET's low half */
	X86_FIX_HI32,    /* TARGET's high half */
};

struct x86_fix {
	uint32_t off;    /* of the field in the buffer */
	uint8_t kind;
	uint64_t base;   /* X86_FIX_REL32: the address the displacement counts from */
	uint64_t target;
	/* TARGET is where original address ORIG leads now (another
	 * function's copy, or ORIG itself): 0 when it is not */
	uint64_t orig;
};

/* Where a snippet moves %rsp: from OFF bytes into the buffer on, %rsp is
 * BELOW bytes below its value around the snippet (0: back there). The
 * snippets report their own moves (x86_sp_moved), and the unwind builder
 * (src/unwind/cfa.c) makes CFA rows of them: a signal or a sampler that
 * unwinds from inside a snippet finds its caller. */
struct x86_sp_row {
	uint32_t off;
	uint32_t below;
};

struct x86_writer {
	uint8_t *buf;
	size_t len, cap;
	uint64_t base;   /* run-time address of buf[0] */
	bool failed;     /* out of memory or a displacement out of range */
	struct x86_fix *fix;
	size_t nfix, capfix;
	struct x86_sp_row *rows;   /* in offset order */
	size_t nrows, caprows;
};

/* How far below its value around the snippet %rsp is at offset OFF of a
 * copy whose rows are ROWS (N, in offset order): the last row at or before
 * OFF (a row takes effect after the instruction it follows). */
uint32_t x86_sp_below(const struct x86_sp_row *rows, size_t n, uint32_t off);
/* From the current end on, %rsp is BELOW bytes below its value around the
 * snippet being written (0: back to it). */
void x86_sp_moved(struct x86_writer *w, uint32_t below);
/* Below the red zone: 'lea rsp,[rsp-128]', then PUSH (a one-byte push:
 * pushfq, push rax); the way back after the snippet's body, POP then
 * 'lea rsp,[rsp+128]'. Both report their moves. */
void x86_below_red_zone(struct x86_writer *w, uint8_t push);
void x86_back_from_below(struct x86_writer *w, uint8_t pop);
/* The arithmetic flags kept in the red zone around snippets that may
 * change them, %rsp unmoved (timers record it): 'lahf; seto al' into
 * [rsp-104], rax kept at [rsp-96] meanwhile, below every snippet's words;
 * back with 'add al,0x7f' (OF) and 'sahf'. */
void x86_flags_stash(struct x86_writer *w);
void x86_flags_unstash(struct x86_writer *w);

void x86_writer_init(struct x86_writer *w, uint64_t base);
void x86_writer_free(struct x86_writer *w);
static inline uint64_t x86_writer_pc(const struct x86_writer *w) { return w->base + w->len; }

/* Room for N more bytes (false, and failed set, when out of memory). */
bool x86_writer_reserve(struct x86_writer *w, size_t n);
/* Inline: the relocator puts a few bytes at a time, hundreds of thousands
 * of times at a program's start. */
static inline void x86_put(struct x86_writer *w, const void *bytes, size_t n)
{
	if (w->len + n > w->cap && !x86_writer_reserve(w, n))
		return;
	memcpy(w->buf + w->len, bytes, n);
	w->len += n;
}
static inline void x86_put_u8(struct x86_writer *w, uint8_t b) { x86_put(w, &b, 1); }
static inline void x86_put_u32(struct x86_writer *w, uint32_t v) { x86_put(w, &v, 4); }
static inline void x86_put_u64(struct x86_writer *w, uint64_t v) { x86_put(w, &v, 8); }
void x86_align(struct x86_writer *w, size_t a, uint8_t fill);
/* Pads to a multiple of A with the fewest multi-byte nops. */
void x86_align_nops(struct x86_writer *w, size_t a);
/* Stores a 32-bit value at offset OFF of the buffer (a later fixup). */
void x86_patch_u32(struct x86_writer *w, size_t off, uint32_t v);

/* rel32 from the end of an instruction ending at END to TARGET; sets failed
 * when it does not fit. */
int32_t x86_rel32(struct x86_writer *w, uint64_t end, uint64_t target);

/* Position-dependent fields, logged (struct x86_fix). ORIG as there. */
/* int32 TARGET - BASE at offset OFF (written earlier) / at the end. */
void x86_patch_rel32(struct x86_writer *w, size_t off, uint64_t base, uint64_t target);
void x86_put_rel32(struct x86_writer *w, uint64_t base, uint64_t target, uint64_t orig);
void x86_put_abs64(struct x86_writer *w, uint64_t target, uint64_t orig);
/* TARGET as a sign-extended int32 at offset OFF; sets failed when it does not fit. */
void x86_patch_abs32(struct x86_writer *w, size_t off, uint64_t target);
/* The low (KIND X86_FIX_LO32) or high (X86_FIX_HI32) half of TARGET. */
void x86_put_half(struct x86_writer *w, uint64_t target, enum x86_fix_kind kind);

/* Branches with 32-bit displacements; return the buffer offset of the rel32
 * field so that internal targets can be fixed up later. */
size_t x86_jmp(struct x86_writer *w, uint64_t target);
size_t x86_jcc(struct x86_writer *w, unsigned cc, uint64_t target);
size_t x86_call(struct x86_writer *w, uint64_t target);
/* 'lea rREG, [rip+disp32]' with a zero displacement: returns the offset of
 * the disp32 (the instruction's last field) for a fixup. */
size_t x86_lea_rip(struct x86_writer *w, int reg);

/* Short jumps inside a snippet: OP (a jcc or jmp opcode) with a rel8 to be
 * landed later (returns the rel8's offset); the rel8 at AT reaching the
 * current end; OP with a rel8 back to offset TO. A rel8 that cannot reach
 * sets failed. */
size_t x86_jump8(struct x86_writer *w, uint8_t op);
void x86_land8(struct x86_writer *w, size_t at);
void x86_jump8_back(struct x86_writer *w, uint8_t op, size_t to);
/* The same, near: OP is a short jcc's opcode (0x70-0x7f) or jmp's (0xeb),
 * written in its rel32 form; x86_land32 lands it at the current end. */
size_t x86_jump32(struct x86_writer *w, uint8_t op);
void x86_land32(struct x86_writer *w, size_t at);

/* OP (N bytes), a rip-relative modrm (register field REG) reaching ADDR,
 * then TRAIL bytes of IMM: the displacement is logged as a fix. */
void x86_rip_form(struct x86_writer *w, const uint8_t *op, size_t n, uint8_t reg, uint64_t addr,
		  const uint8_t *imm, size_t trail);

/* Counter increments. Until a process has a second thread they are plain
 * read-modify-writes; then they must be atomic. Each increment emitted with
 * ATOMIC false can be switched in place by the two bytes at its start
 * (returned offset), written while no other thread runs:
 *   flags dead: ds-prefixed 'add qword [rip+X], 1'; byte 0xf0 makes it 'lock add'.
 *   flags live: a 2-byte nop before a save/mov/lea/mov/restore path; 'jmp +35'
 *   there runs the atomic 'pushfq; lock add; popfq' path after it instead.
 * Both report their %rsp moves (x86_sp_moved). */
enum { X86_SWITCH_LOCK = 0xf0 };
extern const uint8_t x86_switch_keep_flags[2];

/* Switches the increment whose first byte is at SITE to its atomic form. */
void x86_switch_atomic(uint8_t *site, bool keep_flags);
/* The counter that the still plain increment at SITE (run-time address
 * AT) adds 1 to: 0 when SITE holds another form (a rep count's 'add
 * [rip+X],rcx', an arc table's, one swept away). */
uint64_t x86_switch_counter(const uint8_t *site, uint64_t at, bool keep_flags);
/* Switches that increment to the thread's own counter instead:
 * 'inc qword gs:[DISP]' (9 bytes, as long as the ds-prefixed add; in the
 * flags-live form, its atomic path's locked add becomes it). */
void x86_switch_per_thread(uint8_t *site, bool keep_flags, int32_t disp);

size_t x86_inc_counter(struct x86_writer *w, uint64_t counter, bool atomic);
size_t x86_inc_counter_keep_flags(struct x86_writer *w, uint64_t counter, bool atomic);

/* One store that removes an increment of LEN bytes (9: x86_inc_counter's,
 * plain, atomic or per thread; longer: the flags-live form) at SITE,
 * run-time address AT, while other threads may run it: BYTES at SITE+OFF.
 * The bytes that change lie in one aligned 16-byte block: a thread on
 * another CPU decodes an instruction from fetch blocks each read before or
 * after the store, so an instruction whose changed bytes span two can run
 * half old, half new (Intel's "unsynchronized cross-modifying code").
 * The 9-byte form becomes 'nopw' (its first 4 bytes X86_INCREMENT_NOP, its
 * displacement and 1 the nop's SIB and displacement) or 'jmp +7'; the
 * ds-prefixed one 'ds; jmp +6' one byte on; a longer one 'jmp +LEN-2'.
 * False where none fits: a locked or longer form ending a block. */
struct x86_live_store {
	uint8_t off, len;
	uint8_t bytes[4];
};
#define X86_INCREMENT_NOP "\x66\x0f\x1f\x84"
bool x86_increment_off(const uint8_t *site, uint64_t at, size_t len, struct x86_live_store *st);
/* add [rip+X], rcx inside pushfq/popfq below the red zone: the iterations a
 * plain rep string instruction is about to run. Returns the offset of its
 * ds/lock prefix byte (switched like x86_inc_counter's). */
size_t x86_add_rcx_to_counter(struct x86_writer *w, uint64_t counter, bool atomic);

/* repe/repne cmps/scas. valgrind counts one execution per iteration, plus
 * one more when rcx reaches 0 with the condition still holding (it re-runs
 * the instruction, which then sees rcx 0), and 1 when rcx starts at 0. With
 * K = rcx before - rcx after, the executions beyond the block's one are:
 * 0 when rcx starts at 0; else K - 1, plus 1 if rcx ends at 0 and ZF
 * still says continue. Emitted around the instruction:
 *   skip = x86_rep_cond_skip()       jrcxz done (rcx 0: the instruction is a no-op)
 *   x86_add_rcx_to_counter()          counter += rcx before
 *   the instruction
 *   x86_sub_rcx_after_rep_cond()      counter += ~rcx unless rcx is 0 and ZF says continue
 *   x86_rep_cond_land(skip)           done:
 * Flags and registers are preserved throughout; x86_sub_rcx_after_rep_cond
 * returns the offset of its ds/lock prefix byte (switched like the others). */
size_t x86_rep_cond_skip(struct x86_writer *w);
void x86_rep_cond_land(struct x86_writer *w, size_t skip);
size_t x86_sub_rcx_after_rep_cond(struct x86_writer *w, uint64_t counter, bool atomic, bool repne);

#endif
