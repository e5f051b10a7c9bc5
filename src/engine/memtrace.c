/* The consumer side of memory tracing (the memtrace collector): the
 * numbering of the data accesses that copies record (a point per access of
 * an instruction), the drain of a thread's buffer when it fills (the
 * snippet's int3) or when the thread ends, and the results: accesses per
 * instruction by kind, and every cache configuration of the session's bank
 * fed with the records in the order they are drained (a thread's in its
 * own order, threads buffer by buffer). A drained buffer is copied out and
 * the thread goes on at once; two stages of reticle's threads take it from
 * there, each on a CPU of its own when one is idle: the first expands the
 * records into accesses and counts them per instruction, the second
 * drives the bank with them (eight buffers at most wait for the first,
 * sixteen chunks of accesses for the second). */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <reticle/cachesim.h>
#include <reticle/error.h>
#include "analysis/bank_profile.h"
#include "analysis/sample_estimate.h"
#include "engine/engine.h"
#include "isa/x86_64/insn.h"
#include "isa/x86_64/memtrace.h"
#include "os/linux/os.h"
#include "util/array.h"
#include "util/fifo.h"
#include "util/hash.h"
#include "util/log.h"
#include "util/thread.h"

/* A queue marker's number for "a traced window begins" (others: the end
 * of window N) */
#define WINDOW_STARTS SIZE_MAX

/* An access as copies record it: numbered from 1, never moved once
 * published (the consumer reads them while the event loop adds more). */
struct mem_point {
	uint64_t insn;            /* run-time address of the instruction */
	uint32_t size;
	uint8_t kind;             /* RTL_ACC_LOAD, STORE or MODIFY */
	bool rep;                 /* a rep string's: its record holds the count */
	bool chained;             /* no record: NEXT of another's, at DELTA from the chain's head */
	bool absolute;            /* chained, at DELTA itself (an address fixed in the code) */
	uint32_t next;            /* the access chained after it, 0 for none */
	int64_t delta;
	uint8_t table;            /* the consumer's: TABLE_UNKNOWN, _NO or _YES (reads a copy's jump table) */
};

enum { CHUNK_BITS = 16, CHUNK = 1 << CHUNK_BITS, MAX_CHUNKS = 1 << 14, QUEUE = 8 };
/* Accesses handed to the simulating stage at a time, and how many such
 * chunks may wait for it */
enum { SIM_CHUNK = 16384, SIM_QUEUE = 16 };

/* A copy's own jump table [LO, HI) (isa/x86_64/emit.c copies them, and
 * twins have theirs): a load from it is the program's load from its
 * table, DELTA away. */
struct mem_table {
	uint64_t lo, hi;
	int64_t delta;
};
enum { TAB_CHUNK = 4096, TAB_CHUNKS = 256 };
/* Whether an instruction's records fall in a copy's jump table, known
 * from its first: only the dispatch loads the copies rewrote read them. */
enum { TABLE_UNKNOWN, TABLE_NO, TABLE_YES };

/* Records drained from a thread's buffer, as it holds them: the newest
 * first (a record: address, then access number). */
struct batch {
	uint64_t *w;
	size_t n;                 /* words */
	bool lower;               /* a lower-level warm-up's records */
};

/* The simulating stage's work, in order: accesses to simulate (or to warm
 * the lower levels with), or a window's start or end (N: its number). */
enum sim_op { SIM_PUSH, SIM_LOWER, SIM_STARTS, SIM_ENDS };
struct sim_item {
	rtl_access *a;
	size_t n;
	enum sim_op op;
};

/* Where an area's thread is on the way to its next traced window: running
 * untraced; warming the lower levels (--warmup-lower); warming every level
 * (--warmup); in the window. */
enum phase { PH_OFF, PH_LOWER, PH_WARM, PH_WINDOW };

struct memtrace {
	struct mem_point *pts[MAX_CHUNKS];
	uint64_t *counts[MAX_CHUNKS];   /* accesses per point: the consumer's */
	_Atomic size_t npts;
	uint64_t *untraced;       /* instructions whose accesses are not recorded */
	size_t nuntraced, capuntraced;
	/* copies' jump tables: appended by the event loop (never moved once
	 * published, as points), and the consumer's own sorted copy, with
	 * the range they span and the last one a load fell in */
	struct mem_table *tabs[TAB_CHUNKS];
	_Atomic size_t ntabs;
	struct mem_table *sorted;
	size_t nsorted, capsorted, last_tab;
	uint64_t tab_lo, tab_span;
	rtl_cachesim *bank;
	/* the two stages: drained batches expanded into accesses, then
	 * chunks of those simulated */
	struct rtl_fifo expand, sim;
	const struct os_cpus *cpus;
	/* the expanding stage's: the chunk it fills */
	uint64_t records, accesses, bad;
	rtl_access *buf;
	size_t nbuf;
	bool lowering;            /* the batch warms the lower levels */
	/* the simulating stage's: caches whose lower levels the bank cannot
	 * warm alone (warmed exactly) */
	bool lower_exact;
	/* --sample periodic:ON:OFF: instructions traced, then not, per thread
	 * (its clock, TA_MT_CLOCK); an area's records are dropped while
	 * it is off. Each period of ON+OFF has its window at a random offset
	 * (0..OFF: jitter), so that a program's own period cannot alias with
	 * the windows'; TAIL is what is left of the period after the window,
	 * PERIOD the period's number (the seed of the next offset). */
	uint64_t on, off, windows;
	bool is_off[TA_COUNT];
	uint64_t tail[TA_COUNT], period[TA_COUNT];
	uint64_t threads;         /* threads started: each one's offsets its own */
	/* --warmup W: the last W instructions before each window (of its gap)
	 * are traced into the caches but not counted in the estimate; with
	 * --warmup-lower L, the L before those into the lower levels only
	 * (rtl_cachesim_warm_lower). An area's PHASE, and the warm-ups that
	 * follow its untraced part */
	uint64_t warm, warm_lower;
	enum phase phase[TA_COUNT];
	uint64_t warm_next[TA_COUNT], lower_next[TA_COUNT];
	/* --sample simpoint: intervals of N instructions (POINT, sorted) traced,
	 * each estimate weighted by its WEIGHT; per area, the next point and
	 * the interval it is at */
	const uint64_t *point;
	const double *weight;
	size_t npoints;
	uint32_t *stratum;          /* of each point: its cluster's index */
	uint64_t interval;
	uint32_t next[TA_COUNT];
	uint64_t at[TA_COUNT];
	size_t reached;             /* points whose window began, in some thread */
	/* the consumer's: the bank's counts at the last window's end, and the
	 * windows' accesses and misses per configuration and level (cell),
	 * in strata (SimPoint's clusters; one for periodic windows) */
	rtl_cache_stats *prev;
	struct sample_estimate *est;
	size_t ncells;
	unsigned open;              /* windows begun and not ended (threads') */
	/* --trace: the stream written as a din trace instead of simulated */
	FILE *trace;
	char *trace_path;
	bool trace_failed;
};

static void memtrace_free_state(struct memtrace *mt);
static void expand_batch(void *ctx, void *item);
static void simulate(void *ctx, void *item);
static void stage_starts(void *ctx);

/* The estimate's strata: SimPoint's clusters (points of one cluster share
 * its weight, each holding its part), or one for periodic windows. */
static int estimate_init(struct memtrace *mt, const uint32_t *cluster, size_t cells)
{
	size_t nstrata = 0;
	double *w = NULL;
	if (mt->npoints) {
		mt->stratum = malloc(mt->npoints * sizeof(*mt->stratum));
		w = calloc(mt->npoints, sizeof(*w));
		uint32_t *ids = malloc(mt->npoints * sizeof(*ids));
		if (!mt->stratum || !w || !ids) {
			free(w);
			free(ids);
			return -ENOMEM;
		}
		for (size_t k = 0; k < mt->npoints; k++) {
			size_t h = 0;
			while (h < nstrata && ids[h] != cluster[k])
				h++;
			if (h == nstrata)
				ids[nstrata++] = cluster[k];
			mt->stratum[k] = (uint32_t)h;
			w[h] += mt->weight[k];
		}
		free(ids);
	}
	mt->prev = calloc(cells, sizeof(*mt->prev));
	mt->est = sample_estimate_new(cells, nstrata, w);
	free(w);
	mt->ncells = cells;
	return mt->prev && mt->est ? 0 : -ENOMEM;
}

static struct memtrace *state(struct proc *p)
{
	if (p->mt)
		return p->mt;
	struct memtrace *mt = calloc(1, sizeof(*mt));
	if (!mt)
		return NULL;
	if (rtl_cachesim_create(&mt->bank)) {
		free(mt);
		return NULL;
	}
	if (rtl_fifo_init(&mt->expand, sizeof(struct batch), QUEUE, expand_batch, stage_starts, mt) ||
	    rtl_fifo_init(&mt->sim, sizeof(struct sim_item), SIM_QUEUE, simulate, stage_starts, mt)) {
		memtrace_free_state(mt);
		return NULL;
	}
	mt->buf = malloc(SIM_CHUNK * sizeof(*mt->buf));
	mt->cpus = session_placement(p->s) ? placement_all_cpus(session_placement(p->s)) : NULL;
	session_memtrace_sample(p->s, &mt->on, &mt->off, &mt->warm, &mt->warm_lower);
	const uint32_t *cluster;
	session_memtrace_points(p->s, &mt->point, &mt->weight, &cluster, &mt->npoints, &mt->interval);
	if (mt->npoints)
		mt->on = mt->interval;   /* a traced window is one interval */
	size_t n;
	const rtl_cache_config *cfgs = session_caches(p->s, &n);
	if ((mt->trace_path = session_memtrace_path(p->s, p->pid))) {
		if (!(mt->trace = fopen(mt->trace_path, "w"))) {
			rtl_warn("pid %d: cannot write the trace %s", (int)p->pid, mt->trace_path);
			mt->trace_failed = true;
		}
		n = 0;   /* written, not simulated */
	}
	for (size_t i = 0; i < n; i++)
		rtl_cachesim_add(mt->bank, &cfgs[i]);
	/* a bank of several first levels simulated on every CPU (the
	 * program mostly waits for it) */
	rtl_cachesim_set_threads(mt->bank, (int)sysconf(_SC_NPROCESSORS_ONLN));
	/* per-instruction misses of the first configuration's first data level */
	if (n)
		rtl_cachesim_enable_miss_attribution(mt->bank, 0, cfgs[0].level[RTL_L1D].present ? RTL_L1D : RTL_L1);
	if (mt->on && n && estimate_init(mt, cluster, n * RTL_LEVELS)) {
		memtrace_free_state(mt);
		return NULL;
	}
	return p->mt = mt;
}

static struct mem_point *point(struct memtrace *mt, size_t id)
{
	return &mt->pts[(id - 1) >> CHUNK_BITS][(id - 1) & (CHUNK - 1)];
}

static uint64_t *count_of(struct memtrace *mt, size_t id)
{
	return &mt->counts[(id - 1) >> CHUNK_BITS][(id - 1) & (CHUNK - 1)];
}

static uint32_t add_point(struct memtrace *mt, const struct mem_point *pt)
{
	size_t n = atomic_load_explicit(&mt->npts, memory_order_relaxed), c = n >> CHUNK_BITS;
	if (c >= MAX_CHUNKS)
		return 0;
	if (!mt->pts[c]) {
		mt->pts[c] = malloc(CHUNK * sizeof(struct mem_point));
		mt->counts[c] = calloc(CHUNK, sizeof(uint64_t));
		if (!mt->pts[c] || !mt->counts[c]) {
			free(mt->pts[c]);
			free(mt->counts[c]);
			mt->pts[c] = NULL;
			mt->counts[c] = NULL;
			return 0;
		}
	}
	mt->pts[c][n & (CHUNK - 1)] = *pt;
	atomic_store_explicit(&mt->npts, n + 1, memory_order_release);
	return (uint32_t)(n + 1);
}

uint32_t memtrace_point(struct proc *p, uint64_t insn, const struct x86_access *a, uint32_t after, int64_t delta)
{
	struct memtrace *mt = state(p);
	if (!mt || (after && after > atomic_load(&mt->npts)))
		return 0;
	struct mem_point pt = { insn, a->size,
				a->kind == X86_ACC_STORE ? RTL_ACC_STORE
				: a->kind == X86_ACC_MODIFY ? RTL_ACC_MODIFY : RTL_ACC_LOAD, a->rep, after != 0,
				after && x86_access_static(a), 0,
				after && x86_access_static(a) ? (int64_t)x86_access_static_addr(a) : delta, TABLE_UNKNOWN };
	uint32_t id = add_point(mt, &pt);
	/* (no record of AFTER's chain runs yet: its copy is being made) */
	if (id && after)
		point(mt, after)->next = id;
	return id;
}

void memtrace_table(struct proc *p, uint64_t copy, uint64_t orig, uint64_t bytes)
{
	struct memtrace *mt = state(p);
	size_t n = mt ? atomic_load(&mt->ntabs) : TAB_CHUNK * TAB_CHUNKS;
	if (n >= TAB_CHUNK * TAB_CHUNKS || !bytes)
		return;
	struct mem_table **chunk = &mt->tabs[n / TAB_CHUNK];
	if (!*chunk && !(*chunk = malloc(TAB_CHUNK * sizeof(**chunk))))
		return;
	(*chunk)[n % TAB_CHUNK] = (struct mem_table){ copy, copy + bytes, (int64_t)(orig - copy) };
	atomic_store_explicit(&mt->ntabs, n + 1, memory_order_release);
}

/* The consumer takes the tables published since it last looked (before
 * a batch: its records come from copies placed after their tables). */
static void take_tables(struct memtrace *mt)
{
	size_t n = atomic_load_explicit(&mt->ntabs, memory_order_acquire);
	if (n == mt->nsorted || rtl_grow(&mt->sorted, &mt->capsorted, n, sizeof(*mt->sorted)))
		return;
	uint64_t hi = mt->tab_lo + mt->tab_span;   /* 0 before the first */
	for (size_t k = mt->nsorted; k < n; k++) {
		struct mem_table t = mt->tabs[k / TAB_CHUNK][k % TAB_CHUNK];
		size_t at = mt->nsorted++;
		while (at && mt->sorted[at - 1].lo > t.lo) {
			mt->sorted[at] = mt->sorted[at - 1];
			at--;
		}
		mt->sorted[at] = t;
		hi = t.hi > hi ? t.hi : hi;
	}
	mt->tab_lo = mt->sorted[0].lo;
	mt->tab_span = hi - mt->tab_lo;
	mt->last_tab = 0;
}

static uint64_t table_addr(struct memtrace *mt, uint64_t addr);

/* PT's record at ADDR, at the program's table when PT reads a copy's. */
static uint64_t point_table_addr(struct memtrace *mt, struct mem_point *pt, uint64_t addr)
{
	uint64_t at = addr - mt->tab_lo < mt->tab_span ? table_addr(mt, addr) : addr;
	if (pt->table == TABLE_UNKNOWN)
		pt->table = at != addr ? TABLE_YES : TABLE_NO;
	return at;
}

/* ADDR, or the program's table address for a load from a copy's table. */
static uint64_t table_addr(struct memtrace *mt, uint64_t addr)
{
	const struct mem_table *t = &mt->sorted[mt->last_tab];
	if (addr >= t->lo && addr < t->hi)
		return addr + (uint64_t)t->delta;
	/* the last table starting at or below ADDR */
	size_t lo = rtl_lower_bound_u64_in(mt->sorted, mt->nsorted, sizeof(*mt->sorted),
					   offsetof(struct mem_table, lo), addr + 1);
	if (!lo || addr >= mt->sorted[lo - 1].hi)
		return addr;
	mt->last_tab = lo - 1;
	return addr + (uint64_t)mt->sorted[lo - 1].delta;
}

void memtrace_untraced(struct proc *p, uint64_t insn)
{
	struct memtrace *mt = state(p);
	if (mt && (!mt->nuntraced || mt->untraced[mt->nuntraced - 1] != insn) &&
	    !rtl_grow(&mt->untraced, &mt->capuntraced, mt->nuntraced + 1, sizeof(*mt->untraced)))
		mt->untraced[mt->nuntraced++] = insn;
}

/* ---- the consumer ---- */

/* Dinero's extended din: r (a load; a modify, as cachegrind counts it, is
 * m: Dinero's misc, read as a read), w (a store), hex address and size. */
static void write_din(struct memtrace *mt, const rtl_access *a, size_t n)
{
	static const char kind[] = { [RTL_ACC_LOAD] = 'r', [RTL_ACC_STORE] = 'w', [RTL_ACC_MODIFY] = 'm' };
	for (size_t i = 0; i < n && !mt->trace_failed; i++)
		if (fprintf(mt->trace, "%c %llx %x\n", kind[a[i].kind], (unsigned long long)a[i].addr, a[i].size) < 0)
			mt->trace_failed = true;
}

/* The chunk filled so far to the simulating stage, and a new one. */
static void flush(struct memtrace *mt)
{
	if (!mt->nbuf)
		return;
	rtl_fifo_put(&mt->sim, &(struct sim_item){ mt->buf, mt->nbuf, mt->lowering ? SIM_LOWER : SIM_PUSH });
	mt->nbuf = 0;
	if (!(mt->buf = malloc(SIM_CHUNK * sizeof(*mt->buf))))
		rtl_fifo_close(&mt->sim);   /* the chunks waiting freed: room again, perhaps */
	if (!mt->buf)
		mt->buf = malloc(SIM_CHUNK * sizeof(*mt->buf));
}

static void add(struct memtrace *mt, size_t id, const struct mem_point *pt, uint64_t addr)
{
	(*count_of(mt, id))++;
	mt->accesses++;
	if (__builtin_expect(!mt->buf, 0)) {
		mt->bad++;   /* no memory for the chunk: counted, not simulated */
		return;
	}
	/* the instruction with the kind in its low bit: misses are counted
	 * per instruction and kind (cachegrind's D1mr, D1mw) */
	mt->buf[mt->nbuf++] = (rtl_access){ addr, pt->insn << 1 | (pt->kind == RTL_ACC_STORE), pt->size, pt->kind };
	if (mt->nbuf == SIM_CHUNK)
		flush(mt);
}

/* The record that ends at W[I] (W[I-2], W[I-1]) and, for a rep string's
 * pair (movs: the load's record, then the store's, below it), the next
 * one: each iteration's accesses in turn, as the instruction makes them.
 * Returns the words used. */
static size_t expand(struct memtrace *mt, const uint64_t *w, size_t i, size_t npts)
{
	uint64_t addr = w[i - 2], id = w[i - 1] & 0xffffffff, count = w[i - 1] >> 32;
	if (!id || id > npts) {
		mt->bad++;
		return 2;
	}
	struct mem_point *pt = point(mt, id);
	if (!pt->rep) {
		if (pt->table != TABLE_NO)   /* (the tables span the copies' windows, data between) */
			addr = point_table_addr(mt, pt, addr);
		add(mt, id, pt, addr);
		/* the accesses chained to it, in the program's order */
		for (uint32_t c = pt->next; c && c <= npts; c = point(mt, c)->next) {
			const struct mem_point *q = point(mt, c);
			add(mt, c, q, q->absolute ? (uint64_t)q->delta : addr + (uint64_t)q->delta);
		}
		return 2;
	}
	const struct mem_point *pt2 = NULL;
	uint64_t id2 = i >= 4 ? w[i - 3] & 0xffffffff : 0, addr2 = 0;
	if (id2 && id2 <= npts && point(mt, id2)->rep && point(mt, id2)->insn == pt->insn &&
	    w[i - 3] >> 32 == count) {
		pt2 = point(mt, id2);
		addr2 = w[i - 4];
	}
	for (uint64_t k = 0; k < count; k++) {
		add(mt, id, pt, addr + k * pt->size);
		if (pt2)
			add(mt, id2, pt2, addr2 + k * pt2->size);
	}
	return pt2 ? 4 : 2;
}

/* The end of a traced window (K: SimPoint's point; periodic windows, 0):
 * the bank's counts since the previous end into the estimate. */
static void window_counts(struct memtrace *mt, size_t k)
{
	mt->open -= mt->open > 0;
	if (!mt->est || (mt->npoints && k >= mt->npoints))
		return;
	size_t h = mt->npoints ? mt->stratum[k] : 0;
	for (size_t i = 0; i < mt->ncells; i++) {
		rtl_cache_stats st;
		if (rtl_cachesim_stats(mt->bank, (int)(i / RTL_LEVELS), (int)(i % RTL_LEVELS), &st))
			continue;
		uint64_t acc = 0, miss = 0, pacc = 0, pmiss = 0;
		for (int kd = RTL_ACC_LOAD; kd <= RTL_ACC_STORE; kd++) {
			acc += st.access[kd];
			miss += st.miss[kd];
			pacc += mt->prev[i].access[kd];
			pmiss += mt->prev[i].miss[kd];
		}
		sample_estimate_add(mt->est, i, h, (double)(acc - pacc), (double)(miss - pmiss));
		mt->prev[i] = st;
	}
}

/* A traced window begins (after its warm-up): the estimate counts from
 * here, unless another thread's window is open (theirs mix). */
static void window_starts(struct memtrace *mt)
{
	for (size_t i = 0; !mt->open && i < mt->ncells; i++)
		rtl_cachesim_stats(mt->bank, (int)(i / RTL_LEVELS), (int)(i % RTL_LEVELS), &mt->prev[i]);
	mt->open++;
}

/* The expanding stage: batch B (its words freed), or a marker that its
 * accesses so far precede. */
static void expand_batch(void *ctx, void *item)
{
	struct memtrace *mt = ctx;
	const struct batch *b = item;
	if (!b->w) {   /* a marker: a traced window begins, or window B->N ended */
		flush(mt);
		rtl_fifo_put(&mt->sim, &(struct sim_item){ NULL, b->n, b->n == WINDOW_STARTS ? SIM_STARTS : SIM_ENDS });
		return;
	}
	size_t npts = atomic_load_explicit(&mt->npts, memory_order_acquire);
	take_tables(mt);
	if (mt->lowering != b->lower)
		flush(mt);   /* a chunk is warm-up or not throughout */
	mt->lowering = b->lower;
	for (size_t i = b->n; i >= 2;)   /* the oldest at the end */
		i -= expand(mt, b->w, i, npts);
	mt->records += b->n / 2;
	free(b->w);
}

/* The simulating stage: a chunk of accesses (freed) into the bank, or
 * written as din; a window's start or end. */
static void simulate(void *ctx, void *item)
{
	struct memtrace *mt = ctx;
	const struct sim_item *it = item;
	switch (it->op) {
	case SIM_STARTS:
		window_starts(mt);
		return;
	case SIM_ENDS:
		window_counts(mt, it->n);
		return;
	case SIM_LOWER:
		if (!mt->trace && !mt->lower_exact &&
		    rtl_cachesim_warm_lower(mt->bank, it->a, it->n) == -ENOTSUP)
			mt->lower_exact = true;   /* caches it cannot warm alone: warmed exactly */
		if (mt->trace || mt->lower_exact)
			break;
		free(it->a);
		return;
	case SIM_PUSH:
		break;
	}
	if (mt->trace)
		write_din(mt, it->a, it->n);
	else
		rtl_cachesim_push(mt->bank, it->a, it->n);
	free(it->a);
}

/* Both stages on any CPU but the one the event loop may be pinned to. */
static void stage_starts(void *ctx)
{
	struct memtrace *mt = ctx;
	if (mt->cpus)
		os_cpus_set(0, mt->cpus);
}

/* B to the expanding stage: waits while its queue is full (the thread
 * that filled its buffer stays stopped meanwhile). */
static void enqueue(struct memtrace *mt, struct batch b)
{
	rtl_fifo_put(&mt->expand, &b);
}

/* Everything drained so far simulated, and both stages' threads gone. */
static void finish(struct memtrace *mt)
{
	rtl_fifo_close(&mt->expand);
	flush(mt);
	rtl_fifo_close(&mt->sim);
}

void memtrace_drain(struct proc *p, unsigned area)
{
	struct memtrace *mt = p->mt;
	if (!mt || !p->areas.addr)
		return;
	uint8_t *a = thread_area_local(&p->areas, area);
	uint64_t *left = (uint64_t *)(a + TA_MT_LEFT), *w = (uint64_t *)(a + TA_MT_RECS);
	uint64_t end = *left;
	if (end > TA_MT_WORDS || end % 2)
		end = 0;   /* not a count the snippets leave: take the whole buffer */
	size_t n = TA_MT_WORDS - end;
	if (area < TA_COUNT && mt->is_off[area])
		n = 0;   /* between two traced windows: not simulated */
	if (n) {
		struct batch b = { malloc(n * sizeof(uint64_t)), n, area < TA_COUNT && mt->phase[area] == PH_LOWER };
		if (b.w) {
			memcpy(b.w, w + end, n * sizeof(uint64_t));
			enqueue(mt, b);
		} else {
			mt->bad += n / 2;
		}
	}
	*left = TA_MT_WORDS;
}

/* Which of the copies area AREA's thread runs: the traced ones, or their
 * untraced twins while its window is off (isa/x86_64/memtrace.h). */
static void set_twins(struct proc *p, struct memtrace *mt, unsigned area)
{
	uint8_t *a = thread_area_local(&p->areas, area);
	*(uint64_t *)(a + TA_MT_OFF) = mt->is_off[area];
	*(uint64_t *)(a + TA_MT_ON) = !mt->is_off[area];
}

/* Thread TID, stopped in a copy with a twin at a window's end, goes on
 * in the one its window asks for: the same offset from the same label
 * (both start with the same checks and clock). Its callers switch
 * where their calls return. */
static void switch_copy(struct proc *p, struct memtrace *mt, pid_t tid, unsigned area)
{
	uint64_t pc;
	struct module *m;
	const struct func_state *fs;
	if (os_get_pc(tid, &pc) || !(fs = proc_copy_at(p, pc, &m)) || !fs->twin_to)
		return;
	bool in_twin = pc >= fs->twin_start;
	if (in_twin == mt->is_off[area])
		return;
	const uint64_t *from = in_twin ? fs->twin_to : fs->map_to, *to = in_twin ? fs->map_to : fs->twin_to;
	size_t i = rtl_lower_bound_u64(from, fs->nmap, pc + 1);
	if (i && pc - from[i - 1] <= X86_TWIN_CHECK + X86_MEMTRACE_MAX)   /* in a label's checks and clock */
		os_set_pc(tid, to[i - 1] + (pc - from[i - 1]));
}

/* Area AREA's traced window begins: with SimPoint, that of its next point. */
static void window_begins(struct memtrace *mt, unsigned area)
{
	mt->windows++;
	if (mt->next[area] < mt->npoints && mt->next[area] + 1 > mt->reached)
		mt->reached = mt->next[area] + 1;
	if (mt->est)
		enqueue(mt, (struct batch){ NULL, WINDOW_STARTS, false });
}

/* Instructions until area AREA's next point starts (SimPoint), its state
 * moved to it; INT64_MAX / 2 when none is left. */
static uint64_t to_next_point(struct memtrace *mt, unsigned area)
{
	if (mt->next[area] >= mt->npoints)
		return INT64_MAX / 2;
	uint64_t start = mt->point[mt->next[area]], gap = start > mt->at[area] ? start - mt->at[area] : 0;
	mt->at[area] = start;
	return gap * mt->interval;
}

/* Traced window K ended (SimPoint's point K; 0 for a periodic one): a
 * marker after its records. */
static void mark_window(struct memtrace *mt, size_t k)
{
	if (mt->est)
		enqueue(mt, (struct batch){ NULL, k, false });
}

/* Area AREA's untraced instructions before its next periodic window: the
 * rest of this period, then a random offset into the next (0..OFF, from
 * a fixed seed: runs repeat). */
static uint64_t jittered_gap(struct memtrace *mt, unsigned area)
{
	uint64_t x = rtl_mix64(((uint64_t)area << 40) ^ mt->period[area]++ ^ 0x7265746963ull);
	uint64_t offset = x % (mt->off + 1), gap = mt->tail[area] + offset;
	mt->tail[area] = mt->off - offset;
	return gap;
}

/* Area AREA goes on to its next phase with instructions still to come
 * before the window (its warm-ups, each possibly 0), then the window; *LEFT
 * (the clock) gets the phase's length. */
static void next_phase(struct memtrace *mt, unsigned area, int64_t *left)
{
	mt->is_off[area] = false;
	if (mt->lower_next[area]) {
		mt->phase[area] = PH_LOWER;
		*left += (int64_t)mt->lower_next[area];
		mt->lower_next[area] = 0;
	} else if (mt->warm_next[area]) {
		mt->phase[area] = PH_WARM;
		*left += (int64_t)mt->warm_next[area];
		mt->warm_next[area] = 0;
	} else {
		mt->phase[area] = PH_WINDOW;
		*left += (int64_t)mt->on;
		window_begins(mt, area);
	}
}

/* Area AREA has GAP instructions before its next window: untraced, then
 * the lower levels' warm-up, then every level's (both traced, not
 * counted), then the window. */
static void before_window(struct memtrace *mt, unsigned area, uint64_t gap, int64_t *left)
{
	uint64_t warm = gap < mt->warm ? gap : mt->warm, rest = gap - warm;
	uint64_t lower = rest < mt->warm_lower ? rest : mt->warm_lower;
	mt->warm_next[area] = warm;
	mt->lower_next[area] = lower;
	if (rest > lower) {
		mt->is_off[area] = true;
		mt->phase[area] = PH_OFF;
		*left += (int64_t)(rest - lower);
	} else {
		next_phase(mt, area, left);
	}
}

void memtrace_thread_start(struct proc *p, unsigned area)
{
	if (!session_memtrace_sampled(p->s) || !p->areas.addr || area >= TA_COUNT)
		return;
	struct memtrace *mt = state(p);
	if (!mt)
		return;
	mt->next[area] = 0;
	mt->at[area] = 0;
	mt->tail[area] = 0;
	/* a thread that reuses an ended one's area draws its own offsets:
	 * with the area's seed alone, 2,000 short threads one after another
	 * all traced the same first stretch of their work (a fixed phase of
	 * each) and the estimate missed the rest */
	mt->period[area] = ++mt->threads << 32;
	int64_t left = 0;
	before_window(mt, area, mt->npoints ? to_next_point(mt, area) : jittered_gap(mt, area), &left);
	thread_area_clock_set(thread_area_local(&p->areas, area), left);
	set_twins(p, mt, area);
}

/* Area AREA's countdown passed zero (true), or not. */
static bool window_end(struct proc *p, unsigned area)
{
	struct memtrace *mt = p->mt;
	if (!mt || !mt->on || !p->areas.addr || area >= TA_COUNT)
		return false;
	/* the clock's words (TA_MT_CLOCK) summed, and set again below */
	int64_t clock = thread_area_clock(thread_area_local(&p->areas, area)), *left = &clock;
	if (*left >= 0)
		return false;
	while (*left < 0) {
		/* a traced window ends: its records go to the bank; an untraced
		 * one: what it recorded is dropped */
		memtrace_drain(p, area);
		if (mt->phase[area] != PH_WINDOW) {   /* on to a warm-up, or the window */
			next_phase(mt, area, left);
			continue;
		}
		uint64_t gap;
		if (mt->npoints) {   /* the point traced, on to the next */
			mark_window(mt, mt->next[area]++);
			mt->at[area]++;
			gap = to_next_point(mt, area);
		} else {
			mark_window(mt, 0);
			gap = jittered_gap(mt, area);
		}
		before_window(mt, area, gap, left);   /* no gap: the next point follows at once */
	}
	thread_area_clock_set(thread_area_local(&p->areas, area), clock);
	set_twins(p, mt, area);
	return true;
}

/* Whether the int3 before PC is one of the copies' (a clock's: the
 * clock is checked only here and there, so it may be below zero when
 * another int3 traps, a function's first call) */
static bool in_copy(struct proc *p, uint64_t pc)
{
	struct module *m;
	return proc_copy_at(p, pc - 1, &m) != NULL;
}

bool memtrace_window_trap(struct proc *p, pid_t tid)
{
	struct thread *t = proc_thread(p, tid);
	uint64_t pc;
	if (!t || t->area < 0 || !p->mt || !p->mt->on || os_get_pc(tid, &pc) || !in_copy(p, pc))
		return false;
	/* a clock's; its sum may have been made of words a signal handler's
	 * blocks changed on the way (a dead register's sum is not restarted
	 * as a borrowed one is): then no window ended, and it goes on */
	if (window_end(p, (unsigned)t->area))
		switch_copy(p, p->mt, tid, (unsigned)t->area);
	return true;
}

bool memtrace_call_trap(struct proc *p, uint64_t pc)
{
	if (!p->mt || !p->areas.addr)
		return false;
	if (!*(const uint64_t *)(thread_area_local(&p->areas, 0) + TA_MT_LEFT)) {
		memtrace_drain(p, 0);   /* a record's: its buffer full */
		return true;
	}
	if (!p->mt->on || !in_copy(p, pc))
		return false;
	window_end(p, 0);   /* a clock's (maybe spurious: memtrace_window_trap) */
	return true;
}

bool memtrace_trap(struct proc *p, pid_t tid)
{
	struct thread *t = proc_thread(p, tid);
	if (!p->mt || !p->areas.addr || !t || t->area < 0)
		return false;
	const uint64_t *left = (const uint64_t *)(thread_area_local(&p->areas, (unsigned)t->area) + TA_MT_LEFT);
	if (*left)
		return false;   /* not the snippet's int3: its buffer is full only there */
	memtrace_drain(p, (unsigned)t->area);
	return true;
}

void memtrace_signal(struct proc *p, pid_t tid)
{
	struct thread *t = proc_thread(p, tid);
	uint64_t pc;
	if (!p->mt || !p->areas.addr || !t || t->area < 0 || os_get_pc(tid, &pc))
		return;
	struct window *w = proc_window_at(p, pc, 1);
	if (!w || pc >= w->addr + w->code_used)
		return;   /* not in the code cache's copies */
	/* the copied code around PC, within the window (a snippet never spans two) */
	uint64_t lo = pc - w->addr > X86_MEMTRACE_MAX ? pc - X86_MEMTRACE_MAX : w->addr;
	uint64_t hi = w->addr + w->code_used - pc > X86_MEMTRACE_MAX ? pc + X86_MEMTRACE_MAX : w->addr + w->code_used;
	struct x86_memtrace_span s;
	if (!x86_memtrace_locate(window_local(w, lo), hi - lo, pc - lo, &s))
		return;
	uint8_t *a = thread_area_local(&p->areas, (unsigned)t->area);
	uint64_t r0 = *(uint64_t *)(a + TA_MT_SAVE0), r1 = *(uint64_t *)(a + TA_MT_SAVE1);
	if (pc - lo <= s.start + 18) {   /* the saves: nothing changed yet */
		os_set_pc(tid, lo + s.start);
		return;
	}
	if (pc - lo >= s.commit && !*(uint64_t *)(a + TA_MT_LEFT))
		memtrace_drain(p, (unsigned)t->area);   /* the int3 it will not reach */
	os_set_scratch(tid, r0, r1);
	os_set_pc(tid, lo + (pc - lo < s.commit ? s.start : s.end));
}

/* The function of M at run-time address INSN, its profile id (-1: none). */
static int64_t function_id(struct proc *p, uint64_t insn, uint64_t *site)
{
	struct module *m = proc_module_at(p, insn);
	if (!m)
		return -1;
	const rtl_function *f = rtl_binary_find_function(m->bin, insn - m->bias);
	*site = insn - m->bias;
	return f ? m->fs[f - rtl_binary_function(m->bin, 0)].profile_id : -1;
}

static int64_t function_of(uint64_t insn, uint64_t *site, void *p)
{
	return function_id(p, insn, site);
}

int memtrace_write(struct proc *p, rtl_profile *prof)
{
	struct memtrace *mt = p->mt;
	if (!mt)
		return 0;
	memtrace_drain(p, 0);   /* threads beyond the areas' number share the null one */
	finish(mt);
	if (mt->open && !mt->npoints)
		window_counts(mt, 0);   /* the window the image ended in */
	int err = 0;
	static const char *const names[] = { "mem_loads", "mem_stores", "mem_modifies" };
	size_t npts = atomic_load(&mt->npts);
	for (size_t i = 1; i <= npts && !err; i++) {
		const struct mem_point *pt = point(mt, i);
		uint64_t site, n = *count_of(mt, i);
		int64_t id = n ? function_id(p, pt->insn, &site) : -1;
		if (id >= 0)
			err = rtl_profile_add_metric(prof, id, names[pt->kind], site, (double)n);
	}
	for (size_t i = 0; i < mt->nuntraced && !err; i++) {
		uint64_t site;
		int64_t id = function_id(p, mt->untraced[i], &site);
		if (id >= 0)
			err = rtl_profile_add_metric(prof, id, "mem_untraced_instructions", site, 1);
	}
	if (!err)
		err = bank_profile_write(mt->bank, prof, function_of, p);
	char key[160], val[256];
	if (mt->trace && fclose(mt->trace))
		mt->trace_failed = true;
	mt->trace = NULL;
	if (mt->trace_failed)
		rtl_warn("pid %d: the trace %s is incomplete", (int)p->pid, mt->trace_path ? mt->trace_path : "");
	else if (mt->trace_path && !err)
		err = rtl_profile_set_meta(prof, "memtrace_trace", mt->trace_path);
	/* the estimate of each configuration and level from the windows: the
	 * points' weighted by their clusters' shares (SimPoint), or the
	 * periodic ones' (a share ON / (ON + OFF) of the run) */
	double covered = mt->npoints ? 0 : (double)mt->on / (double)(mt->on + mt->off);
	for (size_t i = 0; mt->est && i < mt->ncells && !err; i++) {
		const rtl_cache_config *cfg = rtl_cachesim_config(mt->bank, (int)(i / RTL_LEVELS));
		if (!cfg || !cfg->level[i % RTL_LEVELS].present || i % RTL_LEVELS == RTL_L1I)
			continue;
		struct sample_result r = sample_estimate_get(mt->est, i, covered);
		char half[96] = "";
		if (r.half >= 0)
			snprintf(half, sizeof(half), " +- %.6f", r.half);
		snprintf(key, sizeof(key), "memtrace_estimate_%zu_%s", i / RTL_LEVELS, bank_level_names[i % RTL_LEVELS]);
		snprintf(val, sizeof(val), "miss ratio %.6f%s (%s; %llu windows, weighted accesses %.0f, misses %.0f)",
			 r.ratio, half,
			 r.half >= 0 ? "95% confidence" : "no interval: a cluster with one point",
			 (unsigned long long)r.windows, r.acc, r.miss);
		err = rtl_profile_set_meta(prof, key, val);
	}
	if (mt->npoints) {
		session_memtrace_reached(p->s, mt->reached);
		snprintf(val, sizeof(val), "simpoint:%zu points of %llu instructions, %zu reached", mt->npoints,
			 (unsigned long long)mt->interval, mt->reached);
		if (!err)
			err = rtl_profile_set_meta(prof, "memtrace_sample", val);
	} else if (mt->on) {
		snprintf(val, sizeof(val), "periodic:%llu:%llu", (unsigned long long)mt->on,
			 (unsigned long long)mt->off);
		if (!err)
			err = rtl_profile_set_meta(prof, "memtrace_sample", val);
	}
	if (mt->on && (mt->warm || mt->warm_lower)) {
		snprintf(val, sizeof(val), "%llu instructions before each window, and %llu before those for the "
			 "levels below the first%s", (unsigned long long)mt->warm, (unsigned long long)mt->warm_lower,
			 mt->lower_exact ? " (warmed exactly: not LRU, or inclusive)" : "");
		if (!err)
			err = rtl_profile_set_meta(prof, "memtrace_warmup", val);
	}
	if (mt->on) {
		snprintf(val, sizeof(val), "%llu", (unsigned long long)mt->windows);
		if (!err)
			err = rtl_profile_set_meta(prof, "memtrace_windows", val);
	}
	if (mt->on) {   /* copies with an untraced twin (0: RETICLE_MEMTRACE_TWINS=0) */
		size_t twins = 0;
		for (size_t i = 0; i < p->nmods; i++)
			for (size_t k = 0, n = p->mods[i].fs ? rtl_binary_function_count(p->mods[i].bin) : 0; k < n; k++)
				twins += p->mods[i].fs[k].twin_to != NULL;
		snprintf(val, sizeof(val), "%zu", twins);
		if (!err)
			err = rtl_profile_set_meta(prof, "memtrace_twins", val);
	}
	snprintf(val, sizeof(val), "%llu", (unsigned long long)mt->records);
	if (!err)
		err = rtl_profile_set_meta(prof, "memtrace_records", val);
	snprintf(val, sizeof(val), "%llu", (unsigned long long)mt->accesses);
	if (!err)
		err = rtl_profile_set_meta(prof, "memtrace_accesses", val);
	snprintf(val, sizeof(val), "%zu %zu", npts, mt->nuntraced);
	if (!err)
		err = rtl_profile_set_meta(prof, "memtrace_points_untraced", val);
	/* MetaSim's Table 7: the memory instructions of the copies made, and
	 * those left with a record (the others' accesses chained) */
	size_t insns = 0, recorded = 0;
	bool has = false;   /* the instruction has a record (its accesses' points are in a row) */
	for (size_t i = 1; i <= npts; i++) {
		const struct mem_point *pt = point(mt, i);
		if (i == 1 || point(mt, i - 1)->insn != pt->insn) {
			insns++;
			recorded += has;
			has = false;
		}
		has |= !pt->chained;
	}
	recorded += has;
	snprintf(val, sizeof(val), "%zu of %zu memory instructions (%.1f%%)", recorded, insns,
		 insns ? 100.0 * (double)recorded / (double)insns : 0.0);
	if (!err)
		err = rtl_profile_set_meta(prof, "memtrace_instrumented", val);
	if (mt->bad)
		rtl_warn("pid %d: %llu memory records named no access", (int)p->pid, (unsigned long long)mt->bad);
	return err;
}

int memtrace_fork(struct proc *p, struct proc *c)
{
	if (!p->mt)
		return 0;
	struct memtrace *mt = state(c);
	if (!mt || rtl_grow(&mt->untraced, &mt->capuntraced, p->mt->nuntraced, sizeof(*mt->untraced)))
		return -ENOMEM;
	size_t n = atomic_load(&p->mt->npts);
	for (size_t i = 1; i <= n; i++)
		if (!add_point(mt, point(p->mt, i)))
			return -ENOMEM;
	for (size_t k = 0, nt = atomic_load(&p->mt->ntabs); k < nt; k++) {
		const struct mem_table *t = &p->mt->tabs[k / TAB_CHUNK][k % TAB_CHUNK];
		memtrace_table(c, t->lo, t->lo + (uint64_t)t->delta, t->hi - t->lo);
	}
	memcpy(mt->untraced, p->mt->untraced, p->mt->nuntraced * sizeof(*mt->untraced));
	mt->nuntraced = p->mt->nuntraced;
	return 0;
}

void memtrace_free(struct proc *p)
{
	if (p->mt)
		memtrace_free_state(p->mt);
	p->mt = NULL;
}

static void memtrace_free_state(struct memtrace *mt)
{
	finish(mt);
	rtl_fifo_destroy(&mt->expand);
	rtl_fifo_destroy(&mt->sim);
	free(mt->buf);
	rtl_cachesim_destroy(mt->bank);
	for (size_t c = 0; c < MAX_CHUNKS && mt->pts[c]; c++) {
		free(mt->pts[c]);
		free(mt->counts[c]);
	}
	if (mt->trace)
		fclose(mt->trace);
	free(mt->trace_path);
	free(mt->prev);
	sample_estimate_free(mt->est);
	free(mt->stratum);
	for (size_t c = 0; c < TAB_CHUNKS && mt->tabs[c]; c++)
		free(mt->tabs[c]);
	free(mt->sorted);
	free(mt->untraced);
	free(mt);
}
