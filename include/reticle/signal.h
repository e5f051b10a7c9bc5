/* User signals for the shim collector (SHIM's software signals written by
 * the program itself): a phase, a request type, an iteration, any number
 * the program wants timed. Header only; include it in the program, call
 * rtl_signal(VALUE) where the signal changes. Under `reticle run -c shim`
 * the observer thread reads every thread's signal every few hundred cycles
 * and `reticle report` gives the time each value held and its runs
 * (`--format chrome` draws them as counters); elsewhere (natively, under
 * other collectors) rtl_signal does nothing but one test.
 *
 * The signal is per thread, one 64-bit store to the thread's area (its %gs
 * base under reticle: reticle sets %gs only in programs it runs with
 * shim, and marks the area). The first call per process asks the kernel
 * whether %gs is set (one arch_prctl), then checks the mark. */
#ifndef RETICLE_SIGNAL_H
#define RETICLE_SIGNAL_H

#include <stdint.h>
#include <asm/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#define RTL_SIGNAL_OFFSET ((1 << 20) - 8)          /* the user signal in a thread's area */
#define RTL_SIGNAL_MARK_OFFSET ((1 << 20) - 16)    /* the mark shim leaves there */
#define RTL_SIGNAL_MARK 0x6c616e6769735452ull      /* "RTsignal" */

static int rtl_signal_state_;   /* 0 not asked yet, 1 on, -1 off */

/* Whether this thread's signal is watched (reticle with shim). */
static inline int rtl_signal_on(void)
{
	if (!rtl_signal_state_) {
		unsigned long base = 0;
		uint64_t mark = 0;
		if (syscall(SYS_arch_prctl, ARCH_GET_GS, &base) == 0 && base)
			__asm__ volatile("movq %%gs:%c1, %0" : "=r"(mark) : "i"(RTL_SIGNAL_MARK_OFFSET));
		rtl_signal_state_ = base && mark == RTL_SIGNAL_MARK ? 1 : -1;
	}
	return rtl_signal_state_ > 0;
}

/* The calling thread's signal is VALUE from now on (0: none). */
static inline void rtl_signal(uint64_t value)
{
	if (rtl_signal_on())
		__asm__ volatile("movq %0, %%gs:%c1" : : "r"(value), "i"(RTL_SIGNAL_OFFSET) : "memory");
}

#endif
