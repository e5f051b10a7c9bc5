/* Counting an indirect call's targets inline (runtime/arc_table.h). */
#ifndef RETICLE_X86_ARCS_H
#define RETICLE_X86_ARCS_H

#include <stdbool.h>
#include <stddef.h>
#include "isa/x86_64/insn.h"
#include "isa/x86_64/writer.h"

/* Before the indirect call IN (its bytes BYTES): adds 1 to the arc table's
 * count of (site, target), WORDS being the site's two counter words (key
 * prefix, table address). Its two increments are switchable (writer.h):
 * their prefix bytes are at SWITCHES (hit, lost). Returns 0, or
 * -RTL_ERR_UNSUPPORTED for an operand it cannot read. */
int x86_count_target(struct x86_writer *w, const struct x86_insn *in, const uint8_t *bytes,
		     uint64_t words, bool atomic, size_t switches[2]);
/* The same for the value of KEY (an operand, reticle/probe.h) instead of
 * a call's target, kept to its low 47 bits: RTL_PRIM_COUNT_BY. Where the
 * flags are dead and the red zone free. */
struct rtl_predicate;
int x86_count_value(struct x86_writer *w, const struct rtl_predicate *key, uint64_t words, bool atomic,
		    size_t switches[2]);

#endif
