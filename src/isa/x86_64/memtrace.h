/* Memory tracing inline (RTL_PRIM_BUFFER_APPEND at RTL_POINT_MEMORY): a
 * record of each data access appended to the thread's buffer in its area
 * (runtime/thread_area.h), before the instruction runs. */
#ifndef RETICLE_X86_MEMTRACE_H
#define RETICLE_X86_MEMTRACE_H

#include <stdbool.h>
#include <stdint.h>
#include "isa/x86_64/insn.h"
#include "isa/x86_64/writer.h"

/* Appends the record {address of access A, ID} to the thread's buffer
 * (with rep, ID | the count in rcx << 32);
 * when that fills it, an int3 lets reticle drain it (the snippet then goes
 * on after the int3). No flag and no register changes, and the stack is
 * not touched (rax and rcx wait in the area). An %fs operand needs
 * rdfsbase (FSGSBASE): -RTL_ERR_UNSUPPORTED without it. */
int x86_memtrace_record(struct x86_writer *w, const struct x86_access *a, uint32_t id, bool fsgsbase);

/* memtrace's window clock (TA_MT_CLOCK: four words whose sum is the
 * instructions left): a block takes its N instructions off word WORD;
 * with CHECK (entries, loop heads, where indirect jumps land: every cycle
 * passes one) it then sums the four words and runs an int3 when the sum
 * is below zero (reticle ends the window). KEEP_FLAGS: the flags are
 * live, rcx and rax are borrowed as a record borrows them (the same saves
 * and restores, and stores a signal finds as it finds a record's commit)
 * and the sign is read from the stored sum's top byte. */
int x86_memtrace_clock(struct x86_writer *w, uint32_t n, unsigned word, bool check, bool keep_flags);
/* The same checked where the flags and register FREE (not rsp) are dead:
 * the sum in it, no register borrowed. */
int x86_memtrace_clock_free(struct x86_writer *w, uint32_t n, unsigned word, int free);

/* Traced copies and their untraced twins (memtrace --sample): a copy
 * that records and its twin that does not are emitted together, and a
 * thread goes from one to the other at the function's entry, where a
 * call returns and where an indirect jump lands (where the flags are
 * dead), when the word SLOT of its area (TA_MT_OFF in the traced copy,
 * TA_MT_ON in the twin) is not zero.
 * Writes 'cmp qword gs:[SLOT],0; jne rel32' (X86_TWIN_CHECK bytes) and
 * returns the offset of its rel32, which the caller points at the same
 * place of the other copy. */
enum { X86_TWIN_CHECK = 16 };
size_t x86_twin_check(struct x86_writer *w, uint32_t slot);

/* A snippet as a signal finds it: the offsets of its start, of the end of
 * the store that commits its record, and of its end. The handler's own
 * snippets use the same two words of the area, so a thread stopped inside
 * one must leave it first: before the commit, back to its start with rax
 * and rcx as saved; after it, on to its end with them restored. */
struct x86_memtrace_span {
	size_t start, commit, end;
};
enum { X86_MEMTRACE_MAX = 160 };   /* a snippet's bytes at most */
/* Whether offset AT of CODE (LEN bytes, copied code around AT) lies in a
 * snippet, and where. */
bool x86_memtrace_locate(const uint8_t *code, size_t len, size_t at, struct x86_memtrace_span *out);

#endif
