/* reticle's own helper threads (warm-start decoding, the placement
 * watchdog): they never take signals, which belong to the event loop (job
 * control interrupts its waitpid). */
#ifndef RETICLE_UTIL_THREAD_H
#define RETICLE_UTIL_THREAD_H

#include <pthread.h>

/* pthread_create with every signal blocked in the new thread. Returns 0 or
 * pthread_create's error. */
int rtl_thread_start(pthread_t *t, void *(*fn)(void *), void *arg);

#endif
