#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <reticle/signal.h>
#include "runtime/thread_area.h"

#define REGION_SIZE ((size_t)TA_COUNT * TA_SIZE)

int thread_region_init(struct thread_region *r)
{
	memset(r, 0, sizeof(*r));
	r->fd = memfd_create("reticle-threads", MFD_CLOEXEC);
	if (r->fd < 0)
		return -errno;
	/* pages cost nothing until touched: the size is a bound */
	void *local = MAP_FAILED;
	if (!ftruncate(r->fd, (off_t)REGION_SIZE))
		local = mmap(NULL, REGION_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, r->fd, 0);
	if (local == MAP_FAILED) {
		int err = -errno;
		close(r->fd);
		r->fd = -1;
		return err;
	}
	r->local = local;
	r->used[0] = true;   /* the null area */
	r->end = 1;
	return 0;
}

void thread_region_free(struct thread_region *r)
{
	if (r->local)
		munmap(r->local, REGION_SIZE);
	if (r->fd >= 0)
		close(r->fd);
	memset(r, 0, sizeof(*r));
	r->fd = -1;
}

uint8_t *thread_area_local(const struct thread_region *r, unsigned k)
{
	return r->local + (size_t)k * TA_SIZE;
}

uint64_t thread_area_addr(const struct thread_region *r, unsigned k)
{
	return r->addr + (uint64_t)k * TA_SIZE;
}

int thread_area_at(const struct thread_region *r, uint64_t base)
{
	if (!r->addr || base < r->addr || base >= r->addr + REGION_SIZE || (base - r->addr) % TA_SIZE)
		return -1;
	return (int)((base - r->addr) / TA_SIZE);
}

/* the program's header and reticle's agree; no frame reaches them */
_Static_assert(RTL_SIGNAL_OFFSET == TA_USER_SIGNAL && RTL_SIGNAL_MARK_OFFSET == TA_SIGNAL_MARK, "signal.h");
_Static_assert(TA_FRAMES + ((TA_FRAMES_LIMIT - TA_FRAMES) / TA_FRAME_SIZE + 1) * TA_FRAME_SIZE <= TA_MT_SAVE1,
	       "the last frame and the user signal overlap");

int64_t thread_area_clock(const uint8_t *a)
{
	const int64_t *w = (const int64_t *)(a + TA_MT_CLOCK);
	uint64_t sum = 0;
	for (int k = 0; k < TA_MT_CLOCKS; k++)
		sum += (uint64_t)w[k];   /* wraps as the snippets' adds do */
	return (int64_t)sum;
}

void thread_area_clock_set(uint8_t *a, int64_t left)
{
	int64_t *w = (int64_t *)(a + TA_MT_CLOCK);
	w[0] = left;
	for (int k = 1; k < TA_MT_CLOCKS; k++)
		w[k] = 0;
}

/* Adds the words of [AT, END) of the memfd (8-byte aligned) to SUM. */
static void add_words(int fd, off_t at, off_t end, uint64_t *sum)
{
	uint64_t buf[1024];
	while (at < end) {
		size_t want = (size_t)(end - at) / 8 < 1024 ? (size_t)(end - at) / 8 : 1024;
		ssize_t got = pread(fd, buf, want * 8, at);
		if (got <= 0)
			return;
		size_t words = (size_t)got / 8;
		for (size_t i = 0; i < words; i++)
			sum[i] += buf[i];
		sum += words;
		at += (off_t)words * 8;
	}
}

void thread_area_slab_add(const struct thread_region *r, unsigned k, uint64_t off, size_t n, uint64_t *sum)
{
	off_t start = (off_t)((uint64_t)k * TA_SIZE + TA_SLAB + off), end = start + (off_t)n * 8, at = start;
	/* only the pages the thread wrote: the rest of a slab is a hole */
	while (at < end) {
		off_t data = lseek(r->fd, at, SEEK_DATA);
		if (data < 0) {
			if (errno != ENXIO)   /* no SEEK_DATA: read it all */
				add_words(r->fd, at, end, sum + (at - start) / 8);
			return;
		}
		if (data >= end)
			return;
		off_t hole = lseek(r->fd, data, SEEK_HOLE);
		if (hole < 0 || hole > end)
			hole = end;
		data &= ~(off_t)7;
		add_words(r->fd, data, hole, sum + (data - start) / 8);
		at = hole;
	}
}

/* Zero pages back to the system from byte OFF of area K on, LEN bytes. */
static void punch(const struct thread_region *r, unsigned k, uint64_t off, uint64_t len)
{
	fallocate(r->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)((uint64_t)k * TA_SIZE + off), (off_t)len);
}

void thread_area_slab_clear(struct thread_region *r, unsigned k)
{
	punch(r, k, TA_SLAB, TA_SLAB_SIZE);
}

void thread_region_slabs_add(const struct thread_region *r, uint64_t off, size_t n, uint64_t *sum)
{
	if (r->fd < 0 || (!r->live && !r->null_used))
		return;
	for (unsigned k = r->null_used ? 0 : 1; k < r->end; k++)
		if (r->used[k])
			thread_area_slab_add(r, k, off, n, sum);
}

uint64_t thread_region_slab_sum(const struct thread_region *r, uint64_t off)
{
	uint64_t sum = 0;
	thread_region_slabs_add(r, off, 1, &sum);
	return sum;
}

void thread_area_init(uint8_t *a, uint64_t base, bool null)
{
	struct ta_frame *sentinel = (struct ta_frame *)(a + TA_SENTINEL);
	*sentinel = (struct ta_frame){ .sp = ~0ull };
	((uint64_t *)a)[TA_TOP / 8] = base + TA_FRAMES;
	((uint64_t *)a)[TA_LIMIT / 8] = null ? base + TA_FRAMES - 1 : base + TA_FRAMES_LIMIT;
	((uint64_t *)a)[TA_MT_LEFT / 8] = TA_MT_WORDS;
	((int64_t *)a)[TA_BBV_LEFT / 8] = INT64_MAX;   /* no interval ends unless a collector sets one */
	thread_area_clock_set(a, INT64_MAX);
}

static void area_init(struct thread_region *r, unsigned k)
{
	thread_area_init(thread_area_local(r, k), thread_area_addr(r, k), k == 0);
}

void thread_region_place(struct thread_region *r, uint64_t addr)
{
	r->addr = addr;
	area_init(r, 0);
}

unsigned thread_region_take(struct thread_region *r)
{
	for (unsigned k = 1; k < TA_COUNT; k++)
		if (!r->used[k]) {
			r->used[k] = true;
			r->live++;
			if (k >= r->end)
				r->end = k + 1;
			area_init(r, k);
			return k;
		}
	return 0;
}

void thread_region_give(struct thread_region *r, unsigned k)
{
	if (!k || k >= TA_COUNT || !r->used[k])
		return;
	/* zero pages back to the system: the next thread finds zeroed timers */
	punch(r, k, 0, TA_SIZE);
	r->used[k] = false;
	r->live--;
}

/* Where area A's open frames end: the offset of its top (TA_FRAMES when
 * none is open, in the null area, or when the top is out of bounds). The
 * run-time base comes from the limit, which a pushed-on area keeps. */
static size_t frames_end(const uint8_t *a)
{
	uint64_t top = ((const uint64_t *)a)[TA_TOP / 8], limit = ((const uint64_t *)a)[TA_LIMIT / 8];
	uint64_t base = limit - TA_FRAMES_LIMIT;
	return top > base + TA_FRAMES && top <= base + TA_MT_SAVE1 && (top - base - TA_FRAMES) % sizeof(struct ta_frame) == 0
		? top - base : TA_FRAMES;
}

/* Pops area A's top frame (its end at offset END) at NOW: what the
 * snippets' pop does. */
static void pop_frame(uint8_t *a, size_t end, uint64_t now)
{
	struct ta_frame *f = (struct ta_frame *)(a + end) - 1;
	uint64_t elapsed = now - f->start;
	f[-1].children += elapsed;
	struct ta_timer *t = (struct ta_timer *)(a + f->timer);
	if (f->timer >= TA_WORDS && f->timer + sizeof(*t) <= TA_INDEX) {
		if (--t->active == 0)
			t->inclusive += elapsed;
	}
	/* as the snippets' pop: none below zero (a handler's frames closed
	 * into this one after its clock was read) */
	uint64_t own = (int64_t)(elapsed - f->children) > 0 ? elapsed - f->children : 0;
	if (f->timer >= TA_WORDS && f->timer + sizeof(*t) <= TA_INDEX)
		t->exclusive += own;
	struct ta_node *n = (struct ta_node *)(a + f->node);
	if (f->node == TA_LOST || (f->node >= TA_NODES && f->node + sizeof(*n) <= TA_MT_LEFT)) {
		n->inclusive += elapsed;
		n->exclusive += own;
	}
	((uint64_t *)a)[TA_TOP / 8] -= sizeof(*f);
}

void thread_area_close_frames(uint8_t *a, uint64_t now)
{
	for (size_t end; (end = frames_end(a)) > TA_FRAMES;)
		pop_frame(a, end, now);
}

/* The offset of the context node for KEY in area A, taken if new (the
 * lost node when the tree is full): the entry snippet's search
 * (x86_64/timers.c), without counting a call. */
static uint64_t context_node(uint8_t *a, uint64_t key)
{
	uint32_t *index = (uint32_t *)(a + TA_INDEX);
	struct ta_node *nodes = (struct ta_node *)(a + TA_NODES);
	uint64_t *used = (uint64_t *)(a + TA_NODES_USED);
	for (uint32_t h = ta_context_slot(key);; h = (h + 1) & ((1u << TA_INDEX_BITS) - 1)) {
		uint32_t k = index[h];
		if (k && nodes[k].key == key)
			return TA_NODES + (uint64_t)k * sizeof(*nodes);
		if (k)
			continue;
		if (*used >= TA_MAX_NODES)
			return TA_LOST;
		k = (uint32_t)++*used;
		index[h] = k;
		nodes[k].key = key;
		return TA_NODES + (uint64_t)k * sizeof(*nodes);
	}
}

int thread_area_open_frame(uint8_t *a, uint64_t sp, uint64_t ret, uint64_t timer, uint64_t start)
{
	size_t end = frames_end(a);
	struct ta_frame *f0 = (struct ta_frame *)(a + TA_SENTINEL);   /* [0] the sentinel */
	size_t n = (end - TA_FRAMES) / sizeof(*f0), i = 1;
	for (; i <= n && f0[i].sp >= sp; i++)
		if (f0[i].sp == sp && f0[i].timer == timer)
			return 1;
	uint64_t *top = (uint64_t *)(a + TA_TOP), limit = ((uint64_t *)a)[TA_LIMIT / 8];
	if (*top > limit || timer < TA_WORDS || timer + sizeof(struct ta_timer) > TA_INDEX)
		return -ENOSPC;
	memmove(&f0[i + 1], &f0[i], (n + 1 - i) * sizeof(*f0));
	struct ta_frame *parent = &f0[i - 1], *f = &f0[i];
	*f = (struct ta_frame){ .sp = sp, .timer = timer, .start = start, .ret = ret };
	if (i <= n) {   /* the frame above it closes into it from now on */
		uint64_t before = start - f0[i + 1].start;
		parent->children += before;
		f->children = -before;
	}
	f->node = context_node(a, ta_context_key(parent->node, timer));
	((struct ta_timer *)(a + timer))->active++;
	*top += sizeof(*f);
	return 0;
}

void thread_area_live(const uint8_t *a, uint64_t now, size_t ntimers, int64_t *excl, int64_t *incl)
{
	const volatile struct ta_timer *w = (const volatile struct ta_timer *)(a + TA_WORDS);
	if (ntimers > TA_MAX_TIMERS)
		ntimers = TA_MAX_TIMERS;
	for (size_t i = 0; i < ntimers; i++) {
		excl[i] += (int64_t)w[i].exclusive;
		incl[i] += (int64_t)w[i].inclusive;
	}
	size_t end = frames_end(a), n = (end - TA_FRAMES) / sizeof(struct ta_frame);
	struct ta_frame *f = n ? malloc(n * sizeof(*f)) : NULL;
	uint8_t *seen = f ? calloc(ntimers, 1) : NULL;   /* timers with an open frame below */
	if (!seen) {
		free(f);
		return;
	}
	memcpy(f, a + TA_FRAMES, n * sizeof(*f));
	for (size_t i = 0; i < n; i++) {
		if (f[i].timer < TA_WORDS || f[i].timer >= TA_WORDS + ntimers * sizeof(struct ta_timer))
			continue;
		size_t t = (f[i].timer - TA_WORDS) / sizeof(struct ta_timer);
		int64_t elapsed = (int64_t)(now - f[i].start);
		/* the frame above it is its open child, unless pushed at the same entry */
		int64_t child = i + 1 < n && f[i + 1].sp != f[i].sp ? (int64_t)(now - f[i + 1].start) : 0;
		int64_t own = elapsed - (int64_t)f[i].children - child;
		excl[t] += own > 0 ? own : 0;
		/* the time a timer is on the stack counts once: its outermost frame */
		if (!seen[t] && elapsed > 0)
			incl[t] += elapsed;
		seen[t] = 1;
	}
	free(seen);
	free(f);
}

uint8_t *thread_area_copy(const uint8_t *a, size_t ntimers)
{
	uint8_t *c = mmap(NULL, TA_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (c == MAP_FAILED)
		return NULL;
	size_t nodes;
	thread_area_nodes(a, &nodes);
	memcpy(c, a, frames_end(a));
	memcpy(c + TA_WORDS, a + TA_WORDS, (ntimers < TA_MAX_TIMERS ? ntimers : TA_MAX_TIMERS) * sizeof(struct ta_timer));
	memcpy(c + TA_NODES, a + TA_NODES, (nodes + 1) * sizeof(struct ta_node));
	memcpy(c + TA_UNTIMED, a + TA_UNTIMED, (nodes + 1) * sizeof(uint64_t));
	return c;
}

void thread_area_copy_free(uint8_t *c)
{
	if (c)
		munmap(c, TA_SIZE);
}

void thread_area_shift_frames(uint8_t *a, uint64_t ticks)
{
	/* every open frame starts later: each one's time, and so each one's
	 * exclusive time, loses them once (a parent loses them from its own
	 * time and from its children's alike) */
	size_t end = frames_end(a);
	for (struct ta_frame *f = (struct ta_frame *)(a + TA_FRAMES); (uint8_t *)f < a + end; f++)
		f->start += ticks;
}

int thread_region_fork(const struct thread_region *s, unsigned k, size_t ntimers, uint64_t now,
		       struct thread_region *d)
{
	int err = thread_region_init(d);
	if (err)
		return err;
	thread_region_place(d, s->addr);
	if (!k) {   /* the child's thread counts in the null area, as its parent did */
		d->null_used = true;
		return 0;
	}
	d->used[k] = true;
	d->live = 1;
	d->end = k + 1;
	const uint8_t *from = thread_area_local(s, k);
	uint8_t *to = thread_area_local(d, k);
	size_t used = frames_end(from);
	memcpy(to, from, used);
	((uint64_t *)to)[TA_MT_LEFT / 8] = TA_MT_WORDS;   /* the parent's records stay its own */
	((int64_t *)to)[TA_BBV_LEFT / 8] = INT64_MAX;
	thread_area_clock_set(to, INT64_MAX);
	/* the child's time starts now; its frames go on, their counts do not */
	for (struct ta_frame *f = (struct ta_frame *)(to + TA_FRAMES); (uint8_t *)f < to + used; f++) {
		f->start = now;
		f->children = 0;
	}
	const struct ta_timer *st = (const struct ta_timer *)(from + TA_WORDS);
	struct ta_timer *dt = (struct ta_timer *)(to + TA_WORDS);
	for (size_t i = 0; i < ntimers && i < TA_MAX_TIMERS; i++)
		if (st[i].active)
			dt[i].active = st[i].active;
	/* the tree's paths go on, their counts do not: the child's open
	 * frames find their nodes, and its calls on those paths too */
	size_t nodes;
	const struct ta_node *sn = thread_area_nodes(from, &nodes);
	struct ta_node *dn = (struct ta_node *)(to + TA_NODES);
	uint32_t *index = (uint32_t *)(to + TA_INDEX);
	for (uint32_t i = 1; i <= nodes; i++) {
		dn[i].key = sn[i].key;
		uint32_t h = ta_context_slot(sn[i].key);
		while (index[h])
			h = (h + 1) & ((1u << TA_INDEX_BITS) - 1);
		index[h] = i;
	}
	((uint64_t *)to)[TA_NODES_USED / 8] = nodes;
	return 0;
}

const struct ta_node *thread_area_nodes(const uint8_t *a, size_t *n)
{
	uint64_t used = ((const uint64_t *)a)[TA_NODES_USED / 8];
	*n = used < TA_MAX_NODES ? used : TA_MAX_NODES;
	return (const struct ta_node *)(a + TA_NODES);
}
