/* Per-thread areas: what snippets keep per thread (timers and their frames),
 * reached through %gs.
 *
 * Linux on x86-64 leaves %gs to the program, and programs leave it unused
 * (glibc, Go and the JVM keep their thread pointer in %fs), so reticle sets
 * each thread's %gs base to an area of its own: a snippet reaches it with a
 * segment prefix, no register, no call. The areas of a process image are
 * one memfd that both the target and reticle map, so reticle reads a
 * thread's timers when it likes, even after the thread or the process has
 * died, and a thread needs no system call of its own: only its %gs base set.
 *
 * An area: a header (the top of the frame stack and its limit), a stack of
 * frames (one per function entered and not yet left: the stack pointer at
 * its entry, its timer, when it started, the time of its children, its
 * context), the timers' words, and the thread's calling-context tree. Area
 * 0 is the null area, for threads beyond the last one: its limit is its
 * first frame, so nothing is ever pushed there.
 *
 * The calling-context tree: a node per call path (the function and the
 * node of its caller's frame; the roots' caller is node 0, the sentinel's),
 * with its calls and ticks. Nodes are taken in order (node 1, 2, ...: the
 * pages touched grow with the tree, not with its bound), and found by an
 * open-addressing index of node numbers hashed from the key (ta_context_key,
 * ta_context_slot). When TA_MAX_NODES are taken, a new path's frames use
 * the lost node, whose calls say how many were left out of the tree. */
#ifndef RETICLE_RUNTIME_THREAD_AREA_H
#define RETICLE_RUNTIME_THREAD_AREA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum {
	TA_TOP = 0,               /* address of the next free frame */
	TA_LIMIT = 8,             /* a frame is pushed only at or below it */
	TA_NODES_USED = 16,       /* nodes taken in the context tree */
	TA_SIGNAL = 24,           /* the thread's signal (shim): its copy's entry, 0 before any */
	TA_LOST = 32,             /* the lost node (a struct ta_node) */
	TA_SENTINEL = 64,         /* a frame whose sp is ~0: never left; its node is 0 */
	TA_FRAME_SIZE = 48,
	TA_FRAMES = TA_SENTINEL + TA_FRAME_SIZE,
	TA_FRAMES_END = 1 << 20,  /* 21,842 frames deep */
	/* in the 72 bytes after the last frame: the program's own signal
	 * (reticle/signal.h) and the mark that says the observer reads it */
	TA_USER_SIGNAL = TA_FRAMES_END - 8,
	TA_SIGNAL_MARK = TA_FRAMES_END - 16,
	/* memory tracing (x86_64/memtrace.c): the two registers a record's
	 * snippet borrows */
	TA_MT_SAVE0 = TA_FRAMES_END - 24,
	TA_MT_SAVE1 = TA_FRAMES_END - 32,
	/* a frame is pushed at or below this (so it ends before those words) */
	TA_FRAMES_LIMIT = TA_MT_SAVE1 - TA_FRAME_SIZE,
	TA_WORDS = 1 << 20,       /* timers from here */
	TA_INDEX = 4 << 20,       /* the context index: uint32_t node numbers */
	/* 3 M paths (gcc's cc1 compiling one 2,000-line file took more than
	 * 786,432 a thread; pages are touched as the tree grows) */
	TA_INDEX_BITS = 22,
	TA_NODES = 20 << 20,      /* node K at TA_NODES + 32 * K (node 0 unused) */
	TA_MAX_NODES = (3 << (TA_INDEX_BITS - 2)) - 1,   /* the index under 3/4 full */
	/* after the nodes, the memory trace: the 8-byte words left in the
	 * thread's buffer (records fill it from the top down; 0: full, reticle
	 * drains it), then the buffer */
	TA_MT_LEFT = 116 << 20,
	/* basic-block vectors (the bbv collector): instructions left in the
	 * thread's interval, signed; below zero, the interval has ended */
	TA_BBV_LEFT = TA_MT_LEFT + 8,
	/* memtrace --sample: nonzero while the thread's tracing is off (a
	 * traced copy leaves for its untraced twin at its entry and where a
	 * call returns), and nonzero while it is on (the twin leaves for the
	 * traced copy); reticle sets both at each window's end */
	TA_MT_OFF = TA_MT_LEFT + 16,
	TA_MT_ON = TA_MT_LEFT + 24,
	/* memtrace's window clock: instructions left, the sum of four words
	 * (blocks count down one each, so that they do not all wait on one
	 * word's last store; isa/x86_64/memtrace.h) */
	TA_MT_CLOCK = TA_MT_LEFT + 32,
	TA_MT_CLOCKS = 4,
	TA_MT_RECS = TA_MT_LEFT + 64,
	TA_MT_WORDS = (1 << 20) / 8,   /* 65,536 records of two words: address, point */
	/* the thread's own counters (a slab per area, engine/timers.c):
	 * once a process has threads, a copy's 'add qword [rip+X], 1' becomes
	 * 'inc qword gs:[TA_SLAB + S]' with S the counter's place in the
	 * process's slab layout (struct shm's), so that no increment is locked;
	 * readers add the slabs to the shared word */
	TA_SLAB = TA_MT_LEFT + (2 << 20),
	TA_SLAB_SIZE = 256 << 20,
	/* calls of a leaf function's timer that pushed no frame (sampled
	 * leaves, x86_timer_start): node K's at TA_UNTIMED + 8 * K; word 0,
	 * node 0's place, is the thread's countdown to the next timed call */
	TA_UNTIMED = TA_SLAB + TA_SLAB_SIZE,
	TA_LEAF_LEFT = TA_UNTIMED,
	/* a leaf's first calls in each thread are all timed */
	TA_LEAF_FIRST = 256,
	TA_SIZE = TA_UNTIMED + (32 << 20),   /* areas start on a page (and a huge page) */
	TA_COUNT = 512,           /* areas of an image, the null one included */
	TA_KEY_SHIFT = 22,        /* a key: caller's node offset << 22 | timer offset */
};
#define TA_HASH_MUL 0x9e3779b97f4a7c15ull

/* A frame on an area's stack. */
struct ta_frame {
	uint64_t sp;              /* the stack pointer at the function's entry */
	uint64_t timer;           /* offset of its timer's words in the area */
	uint64_t start;           /* TSC at its entry */
	uint64_t children;        /* TSC ticks of the frames above it */
	uint64_t node;            /* offset of its context's node in the area */
	uint64_t ret;             /* the return address at its entry: while the word at sp holds it,
				   * the frame is on the thread's stack (RTL_OPND_ONSTACK) */
};
_Static_assert(sizeof(struct ta_frame) == TA_FRAME_SIZE, "the snippets' frame");
_Static_assert(TA_NODES + (TA_MAX_NODES + 1) * 32ull == TA_MT_LEFT, "nodes fill their part");
_Static_assert(TA_MT_RECS + TA_MT_WORDS * 8 <= TA_SLAB, "the trace buffer fits");
_Static_assert(TA_MT_CLOCK + TA_MT_CLOCKS * 8 <= TA_MT_RECS, "the clock's words fit");
_Static_assert(TA_UNTIMED + (TA_MAX_NODES + 1) * 8ull <= TA_SIZE, "the untimed counts fit");

/* A node of the calling-context tree. */
struct ta_node {
	uint64_t key;             /* ta_context_key; 0: the lost node */
	uint64_t calls;
	uint64_t inclusive;       /* ticks from entries to exits (a path is never its own descendant) */
	uint64_t exclusive;       /* less the ticks of its children */
};

static inline uint64_t ta_context_key(uint64_t caller_node, uint64_t timer)
{
	return caller_node << TA_KEY_SHIFT | timer;
}

/* The index slot a key's search starts at (the entry snippet's hash). */
static inline uint32_t ta_context_slot(uint64_t key)
{
	return (uint32_t)((key * TA_HASH_MUL) >> (64 - TA_INDEX_BITS));
}

/* A timer's words, at TA_WORDS + 32 * its number. */
struct ta_timer {
	uint64_t calls;           /* entries */
	uint64_t active;          /* its frames on the stack */
	uint64_t inclusive;       /* ticks from the entry to the exit of its outermost frames */
	uint64_t exclusive;       /* ticks of its frames less their children's */
};

/* the timers end where the index starts: a timer's offset fits a key's low bits */
enum { TA_MAX_TIMERS = (TA_INDEX - TA_WORDS) / sizeof(struct ta_timer) };
_Static_assert(TA_INDEX <= 1 << TA_KEY_SHIFT, "a key holds any timer's offset");

struct thread_region {
	int fd;                   /* -1: none */
	uint64_t addr;            /* run-time address in the target, 0 before it is mapped */
	uint8_t *local;           /* reticle's mapping */
	bool used[TA_COUNT];
	bool null_used;           /* a thread was given the null area (or kept its creator's) */
	unsigned live;            /* areas taken and not given back, the null one not counted */
	unsigned end;             /* no area from here on has been taken */
};

/* The header of area A at run-time address BASE: an empty stack over the
 * sentinel, no trace records, no interval or window counting down; the
 * null area's (NULL) limit lets no frame in. */
void thread_area_init(uint8_t *a, uint64_t base, bool null);

/* A region of TA_COUNT areas, mapped in reticle (not yet in the target). */
int thread_region_init(struct thread_region *r);
void thread_region_free(struct thread_region *r);
/* The region is (to be) mapped at run-time ADDR in the target. */
void thread_region_place(struct thread_region *r, uint64_t addr);
/* A fresh area for a new thread, initialised: its index (0, the null area,
 * when all are taken). */
unsigned thread_region_take(struct thread_region *r);
/* Area K is free again (its pages returned). */
void thread_region_give(struct thread_region *r, unsigned k);
/* reticle's pointer to area K; its run-time address. */
uint8_t *thread_area_local(const struct thread_region *r, unsigned k);
uint64_t thread_area_addr(const struct thread_region *r, unsigned k);
/* The area at run-time address BASE (a thread's %gs base), or -1. */
int thread_area_at(const struct thread_region *r, uint64_t base);
/* Closes every frame of area A at time NOW, as the exit snippet would. */
void thread_area_close_frames(uint8_t *a, uint64_t now);
/* Opens a frame of the timer whose words are at offset TIMER for a
 * function already running in area A's thread, entered at stack pointer SP
 * (return address RET), as if it had been entered at START (Paradyn's
 * timer started at insertion): placed by SP among the open frames, deeper
 * ones above it, and the frame right above it then closes into it (the
 * time it ran before START stays its old parent's child time). Its call is
 * not counted: it was not seen. 1 when such a frame (SP, TIMER) is open
 * already, 0 when opened, -ENOSPC when the stack of frames is full. */
int thread_area_open_frame(uint8_t *a, uint64_t sp, uint64_t ret, uint64_t timer, uint64_t start);
/* Adds area A's times of timers 0..NTIMERS-1 in ticks, as they would be
 * if its open frames closed at NOW, to EXCL and INCL (read while its thread
 * runs: a snapshot of its frames, so the sums are as good as the moment's). */
void thread_area_live(const uint8_t *a, uint64_t now, size_t ntimers, int64_t *excl, int64_t *incl);
/* A copy of area A with what closing its frames and reading its times
 * need (its words, open frames, first NTIMERS timers, used nodes), the
 * rest untouched (the copy is sparse, and A's unused pages are not read:
 * in the target's memfd, reading them would allocate them); NULL without
 * memory. Freed with thread_area_copy_free. */
uint8_t *thread_area_copy(const uint8_t *a, size_t ntimers);
void thread_area_copy_free(uint8_t *c);
/* The thread of area A was stopped TICKS for reticle: its open frames
 * start that much later. */
void thread_area_shift_frames(uint8_t *a, uint64_t ticks);
/* Copies S into a fresh region D placed alike: area K (a forked child's
 * one thread) with the counts of its NTIMERS timers and its context tree
 * zeroed and its open frames restarted at NOW. */
/* The context nodes of area A: node K (1 <= K <= *N) at [K]; the lost
 * node is at A + TA_LOST. */
const struct ta_node *thread_area_nodes(const uint8_t *a, size_t *n);
int thread_region_fork(const struct thread_region *s, unsigned k, size_t ntimers, uint64_t now,
		       struct thread_region *d);

/* Adds the N words of area K's slab from byte OFF of it (TA_SLAB + OFF
 * in the area) to SUM. Read from the memfd, so that pages the thread
 * never touched read as zeros without being allocated. */
void thread_area_slab_add(const struct thread_region *r, unsigned k, uint64_t off, size_t n, uint64_t *sum);
/* Area K's slab zeroed (its pages given back). */
void thread_area_slab_clear(struct thread_region *r, unsigned k);
/* The N words from byte OFF of the slab summed over every area in use
 * (the null area's too once a thread counts there: threads beyond the
 * last), added to SUM; _sum: the one word there. */
void thread_region_slabs_add(const struct thread_region *r, uint64_t off, size_t n, uint64_t *sum);
uint64_t thread_region_slab_sum(const struct thread_region *r, uint64_t off);

/* memtrace's window clock of area A (its local mapping): the
 * instructions left, and setting them (TA_MT_CLOCK). */
int64_t thread_area_clock(const uint8_t *a);
void thread_area_clock_set(uint8_t *a, int64_t left);

#endif
