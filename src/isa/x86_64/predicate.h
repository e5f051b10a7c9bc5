/* Predicates inline (reticle/probe.h's struct rtl_predicate): a guard that
 * skips a snippet unless every predicate holds. */
#ifndef RETICLE_X86_PREDICATE_H
#define RETICLE_X86_PREDICATE_H

#include <stddef.h>
#include <reticle/probe.h>
#include "isa/x86_64/writer.h"

enum { X86_GUARD_MAX = RTL_MAX_PREDICATES };

struct x86_guard {
	size_t skips[X86_GUARD_MAX];   /* rel32 fields of the jumps out */
	size_t n;
};

/* Before a snippet, where the flags are dead and the red zone is free (a
 * function's entry, a return): tests Q[0..N) and jumps past the snippet
 * when one fails. Registers are kept (rax in the red zone's 8th word,
 * r11 in its 9th, below what the snippets use); %rsp never moves. */
int x86_guard_begin(struct x86_writer *w, const struct rtl_predicate *q, size_t n, struct x86_guard *g);
/* After the snippet: where the failed tests land; rax is restored. */
int x86_guard_end(struct x86_writer *w, const struct x86_guard *g);
/* rax := Q's operand (an argument, the return value, a global), extended
 * to 64 bits as its size and sign say. Flags are changed by none. */
int x86_load_operand(struct x86_writer *w, const struct rtl_predicate *q);

#endif
