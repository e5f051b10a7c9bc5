/* Function timers inline: a frame pushed at the entry, popped at the exits
 * (runtime/thread_area.h). */
#ifndef RETICLE_X86_TIMERS_H
#define RETICLE_X86_TIMERS_H

#include <stdint.h>
#include "isa/x86_64/writer.h"

/* At a function's entry: closes the frames its stack pointer shows were
 * left (tail calls, longjmp, exceptions), counts the call in the timer
 * whose area offset the counter DESC holds, and pushes its frame. */
int x86_timer_start(struct x86_writer *w, uint64_t desc);
/* Before a return: closes the frames left below the stack pointer, then
 * the function's own (the one whose entry had this stack pointer). */
int x86_timer_stop(struct x86_writer *w);

#endif
