/* Function timers inline: a frame pushed at the entry, popped at the exits
 * (runtime/thread_area.h). */
#ifndef RETICLE_X86_TIMERS_H
#define RETICLE_X86_TIMERS_H

#include <stdbool.h>
#include <stdint.h>
#include "isa/x86_64/writer.h"

/* At a function's entry: closes the frames its stack pointer shows were
 * left (tail calls, longjmp, exceptions), counts the call in the timer
 * whose area offset the counter DESC holds, and pushes its frame.
 * SAMPLED (a leaf: no call, no jump out): after the thread's first
 * TA_LEAF_FIRST calls of it, only about one call in 16 pushes a frame (the
 * clock read twice); the others count the call in the timer and in the
 * context's node, and in the node's untimed count (TA_UNTIMED), from which
 * the engine estimates their time. */
int x86_timer_start(struct x86_writer *w, uint64_t desc, bool sampled);
/* At a function's entry, for its numbered timers (struct rtl_snippet's
 * id) or before a predicate reads a timer's open frames: closes the frames
 * left as x86_timer_start does (AT_EXIT, before a return: those below the
 * stack pointer, not the function's own at it); and after it, each
 * numbered timer's push, which closes none (the function's frames share
 * its stack pointer) unless CLOSE (the first, when nothing closed them:
 * one reading of the clock for both). A frame pushed at the same entry as the one below
 * it adds no child time to it. */
int x86_timer_close_left(struct x86_writer *w, bool at_exit);
int x86_timer_push_numbered(struct x86_writer *w, uint32_t number, bool close);
/* Before a return: closes the frames left below the stack pointer, then
 * the function's own (those whose entry had this stack pointer). */
int x86_timer_stop(struct x86_writer *w);
/* The TSC ticks a timed call of an empty function measures (the snippets'
 * own work between the clock reads), measured in reticle; 0 if it cannot. */
uint64_t x86_timer_call_cost(void);

/* The thread's signal (RTL_PRIM_SLOT_SET) into its area's signal word: ID
 * sign-extended, one instruction; with ID 0, the address ENTRY (the
 * copy's start), kept in rax for a moment in the red zone's first word
 * (dead at an entry and where a call returns). No flag is changed. */
int x86_signal_set(struct x86_writer *w, uint64_t entry, uint32_t id);

/* Subtracts N (a block's instructions) from the thread's interval
 * countdown in its area; an int3 when it falls below zero (reticle ends
 * the interval). KEEP_FLAGS: the flags are live here, pushed below the
 * red zone around it. */
int x86_countdown(struct x86_writer *w, uint32_t n, bool keep_flags);

#endif
