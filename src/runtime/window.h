/* The injected runtime: shared memory that the target maps near each module.
 *
 * One memfd per traced address space holds every window. A window is a
 * code area (mapped read+exec in the target) followed by a counter area
 * (read+write), placed within +-2GiB of its module so that relocated code
 * reaches both the module and its counters with rip+disp32. reticle maps the
 * same memory, so it writes code directly and reads counters even after the
 * target dies. Windows are owned by their struct shm. */
#ifndef RETICLE_RUNTIME_WINDOW_H
#define RETICLE_RUNTIME_WINDOW_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct window {
	uint64_t addr;          /* run-time address in the target */
	size_t code_cap, ctr_cap;
	size_t code_used, ctr_used;
	size_t off;             /* offset in the memfd */
	uint8_t *local;         /* reticle's mapping of the window */
	/* the arc table (arc_table.h) at the top of the counter area: its
	 * offset there (counters stop below it), 0 when the window has none */
	size_t arc_off;
	uint32_t narc_sites;    /* indirect call sites numbered so far */
	/* where its counter area lies in every thread's slab of counters
	 * (thread_area.h, TA_SLAB): counter C's word is at slab + (C - the
	 * area's start); -1 when the slab has no room for it (its counters
	 * are then locked once the process has threads) */
	int64_t slab;
	size_t slab_len;        /* bytes of its counter area that have slab words */
};

struct shm {
	int fd;
	size_t size;            /* bytes of the memfd in use */
	struct window *wins;
	size_t nwins;
	size_t slab_used;       /* bytes of the thread slabs' layout given to windows */
};

/* Start of the scratch page at the top of the first window's code area:
 * a 'syscall; int3' gadget and room for inferior-call strings. */
enum { WINDOW_GADGET_SIZE = 4096 };
/* Bytes at the start of every counter area kept as writable scratch for
 * inferior system calls that return data (struct sigaction). */
enum { WINDOW_SCRATCH_SIZE = 64 };

int shm_init(struct shm *s);
void shm_free(struct shm *s);
/* Adds a window of the given capacities at target address ADDR (not yet
 * mapped in the target). Returns its index or a negative error. */
int shm_add_window(struct shm *s, uint64_t addr, size_t code_cap, size_t ctr_cap);
/* Copies S (used parts only) into a fresh memfd D with counters zeroed: the
 * state of a forked child, which must not share counters with its parent. */
int shm_clone(const struct shm *s, struct shm *d);

/* Keeps the top of W's counter area for an arc table (arc_table.h). */
void window_reserve_arcs(struct window *w);
/* Run-time address of W's arc table (past its header), 0 if none. */
uint64_t window_arcs(const struct window *w);

/* Bump allocation in a window: return the run-time address, 0 when full. */
uint64_t window_alloc_code(struct window *w, size_t len, size_t align);
/* The same from the last sixteenth of the code area too, which the first
 * leaves for copies that must be made (lazy.c: a function that jumps into
 * the bytes of another's entry jump cannot run as it is). */
uint64_t window_alloc_code_reserved(struct window *w, size_t len, size_t align);
uint64_t window_alloc_counter(struct window *w);
/* The words at the start of W's counter area that have slab words (its
 * counters below the arc table, within its place in the slab). */
size_t window_slab_words(const struct window *w);
/* The displacement from a thread's %gs base of COUNTER's word (a counter
 * of W below its arc table) in the thread's slab; -1 when it has none. */
int64_t window_slab_disp(const struct window *w, uint64_t counter);
/* reticle's pointer for a run-time address inside window W. */
static inline void *window_local(const struct window *w, uint64_t addr)
{
	return w->local + (addr - w->addr);
}

/* The free bytes of process PID that a window near [LO, HI) could use:
 * every free gap's part within +-2GiB of it, less [AVOID_LO, AVOID_HI). */
uint64_t free_room_near(pid_t pid, uint64_t lo, uint64_t hi, uint64_t avoid_lo, uint64_t avoid_hi);
/* A free address range of LEN bytes whose every byte is within +-2GiB of
 * [LO, HI) in process PID, avoiding [AVOID_LO, AVOID_HI). 0 if none. */
uint64_t find_free_range_near(pid_t pid, uint64_t lo, uint64_t hi, size_t len,
			      uint64_t avoid_lo, uint64_t avoid_hi);

#endif
