/* Function timers: every thread of a process image gets an area
 * (runtime/thread_area.h) when a collector times functions; a relocated
 * copy's timer gets a number, written into a counter of the copy that its
 * snippets read; a thread's timers are kept when it ends. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <reticle/error.h>
#include <reticle/signal.h>
#include "engine/engine.h"
#include "isa/x86_64/timers.h"
#include "os/linux/os.h"
#include "sample/sample.h"
#include "util/array.h"
#include "util/log.h"

static bool wanted(const struct proc *p)
{
	return session_probes(p->s)->timers;
}

/* RETICLE_THREAD_COUNTERS=0: locked increments as before (a comparison) */
static bool off_by_env(void)
{
	const char *e = getenv("RETICLE_THREAD_COUNTERS");
	return e && !strcmp(e, "0");
}

/* Counters per thread (space.h, thread_counters) once the process has
 * threads, unless a reader needs the shared words as they are: cover's
 * sweep finds fired increments by their bytes and reads them at every
 * sweep, bbv reads every block's counter at each interval's end, and an
 * attached process must be left with nothing of reticle's mapped. */
static bool counters_wanted(const struct proc *p)
{
	const struct probe_set *set = session_probes(p->s);
	return !set->whole_lines && !session_bbv_interval(p->s) && !p->attached && !off_by_env();
}

/* Adds area K's slab to the shared counters (its thread has ended) */
static void fold_counters(struct proc *p, unsigned k)
{
	if (!p->thread_counters)
		return;
	for (size_t i = 0; i < p->shm.nwins; i++) {
		struct window *w = &p->shm.wins[i];
		size_t n = window_slab_words(w);
		if (n > w->ctr_used / 8)
			n = w->ctr_used / 8;
		if (!n)
			continue;
		uint64_t *sum = calloc(n, 8);
		if (!sum) {
			rtl_warn("pid %d: no memory to add up a thread's counters", (int)p->pid);
			return;
		}
		thread_area_slab_add(&p->areas, k, (uint64_t)w->slab, n, sum);
		uint64_t *shared = window_local(w, w->addr + w->code_cap);
		for (size_t j = 0; j < n; j++)
			if (sum[j])
				__atomic_fetch_add(&shared[j], sum[j], __ATOMIC_RELAXED);
		free(sum);
	}
}

/* The observer (shim) reads thread TID's signal in area K from now on. */
static void watch(struct proc *p, pid_t tid, unsigned k)
{
	struct shim *s = session_shim(p->s);
	if (!s || !k)
		return;
	uint8_t *a = thread_area_local(&p->areas, k);
	uint64_t *signal = (uint64_t *)(a + TA_SIGNAL), *user = (uint64_t *)(a + TA_USER_SIGNAL);
	*signal = 0;
	*user = 0;
	*(uint64_t *)(a + TA_SIGNAL_MARK) = RTL_SIGNAL_MARK;   /* reticle/signal.h: the program's signal is read */
	shim_watch(s, p->pid, p->exec_gen, tid, signal, user);
}

/* Area K's countdowns (bbv's intervals, memtrace's windows) start. */
static void start_countdowns(struct proc *p, unsigned k)
{
	bbv_thread_start(p, k);
	memtrace_thread_start(p, k);
}

/* Gives thread T an area and points its %gs there. */
static void give_area(struct proc *p, struct thread *t)
{
	unsigned k = thread_region_take(&p->areas);
	/* the null area, or its creator's kept: it counts where others do */
	p->areas.null_used |= !k;
	if (!k)
		rtl_warn("pid %d: more than %d threads at once: thread %d is not timed%s", (int)p->pid,
			 TA_COUNT - 1, (int)t->tid,
			 p->thread_counters ? ", and its counts share a slab with the others beyond (they may be short)"
					    : "");
	if (os_set_area_base(t->tid, thread_area_addr(&p->areas, k))) {
		thread_region_give(&p->areas, k);
		if (p->thread_counters)
			rtl_warn("pid %d: thread %d keeps its creator's area: its counts may be short",
				 (int)p->pid, (int)t->tid);
		return;
	}
	t->area = (int)k;
	watch(p, t->tid, k);
	start_countdowns(p, k);
}

int timers_setup_image(struct proc *p, pid_t tid)
{
	bool counters = counters_wanted(p);
	if ((!wanted(p) && !counters) || p->areas.fd >= 0)
		return 0;
	int err = thread_region_init(&p->areas);
	uint64_t at = 0;
	/* Far from the modules: the areas take gigabytes of address space
	 * (512 of them, with memtrace's buffers), and where the kernel puts a
	 * mapping by itself, below the libraries, they took the room within
	 * 2 GiB of the ones loaded later, whose code caches must be there (the
	 * JVM's libnio and libnet went uninstrumented). %gs reaches anywhere. */
	static const uint64_t far_hint = 0x300000000000ull;
	if (!err)
		err = proc_map_memfd(p, tid, p->areas.fd, far_hint, (size_t)TA_COUNT * TA_SIZE, false, &at);
	if (err) {
		thread_region_free(&p->areas);
		if (wanted(p))
			rtl_warn("pid %d: no room for thread areas (%s): functions are not timed", (int)p->pid,
				 rtl_strerror(err));
		else   /* increments are locked once it has threads, as they were */
			rtl_debug("pid %d: no room for thread areas (%s): no counters per thread", (int)p->pid,
				  rtl_strerror(err));
		return 0;
	}
	thread_region_place(&p->areas, at);
	p->thread_counters = counters;
	start_countdowns(p, 0);   /* threads beyond the areas' number count down together */
	p->ntimers = 1;   /* timer 0 takes what does not fit */
	struct thread *t = proc_thread(p, tid);
	if (t)
		give_area(p, t);
	return 0;
}

void timers_new_thread(struct proc *p, pid_t child)
{
	struct thread *t = proc_thread(p, child);
	if (p->areas.addr && t && t->area < 0)
		give_area(p, t);
}

int timers_fork(struct proc *p, struct proc *c, pid_t tid)
{
	if (!p->areas.addr)
		return 0;
	struct thread *t = proc_thread(p, tid);
	unsigned k = t && t->area > 0 ? (unsigned)t->area : 0;
	int err = thread_region_fork(&p->areas, k, p->ntimers, os_tsc(), &c->areas);
	uint64_t at;
	if (!err)
		err = proc_map_memfd(c, c->pid, c->areas.fd, c->areas.addr, (size_t)TA_COUNT * TA_SIZE, true, &at);
	if (err)
		return err;
	c->ntimers = p->ntimers;
	c->thread_counters = p->thread_counters;   /* its copies' increments are as the parent's */
	struct thread *ct = proc_thread(c, c->pid);
	if (ct) {
		ct->area = (int)k;
		watch(c, c->pid, k);
		start_countdowns(c, k);   /* the child's own intervals and windows from its start */
	}
	/* the child's counters start at zero: its copies' timers are
	 * written again */
	for (size_t i = 0; i < c->nmods; i++) {
		struct module *m = &c->mods[i];
		size_t n = rtl_binary_function_count(m->bin);
		for (size_t f = 0; f < n; f++)
			if (m->fs[f].timer_desc) {
				struct window *w = proc_window_at(c, m->fs[f].timer_desc, 8);
				if (w)
					*(uint64_t *)window_local(w, m->fs[f].timer_desc) = m->fs[f].timer;
			}
	}
	return 0;
}

static size_t caller_of(const struct ta_node *node);

static size_t timer_index(uint64_t key)
{
	return ((key & ((1ull << TA_KEY_SHIFT) - 1)) - TA_WORDS) / sizeof(struct ta_timer);
}

/* Takes up to D ticks from *V, not below zero (an estimate may exceed
 * what was measured): how many it took. */
static int64_t take_ticks(uint64_t *v, int64_t d)
{
	int64_t have = (int64_t)*v, take = d < have ? d : have > 0 ? have : 0;
	*v = (uint64_t)(have - take);
	return take;
}

/* The sampled leaves' calls that were not timed (their nodes' untimed
 * counts in area A) given time, each the average of its context's timed
 * calls (or, with none timed there, of the function's in the thread) less
 * what timing a call adds to it: what is added to a leaf's context is
 * taken from its caller's exclusive time, where those calls' ticks went.
 * A timed call's ticks hold the snippets' own work between the two clock
 * reads (a few ns, most of a small leaf's measure: out of order, its body
 * overlaps the reads), which reticle measures once on an empty function,
 * so that a leaf of a few instructions is not charged, for each untimed
 * call, the cost of timing it. TT's timers and nodes are changed. */
static void estimate_untimed(struct thread_times *tt, const uint8_t *a)
{
	static double cost = -1;
	const uint64_t *untimed = (const uint64_t *)(a + TA_UNTIMED);
	size_t n = tt->n;
	uint64_t *fn_untimed = NULL;
	int64_t *extra = NULL;
	double *avg = NULL;
	for (size_t k = 1; k <= tt->nnodes; k++) {
		const struct ta_node *nd = &tt->nodes[k - 1];
		if (!untimed[k] || untimed[k] > nd->calls)
			continue;
		if (!fn_untimed) {
			fn_untimed = calloc(n, sizeof(*fn_untimed));
			extra = calloc(tt->nnodes + 1, sizeof(*extra));
			avg = calloc(n, sizeof(*avg));
			if (!fn_untimed || !extra || !avg)
				goto out;
		}
		size_t t = timer_index(nd->key);
		if (t < n)
			fn_untimed[t] += untimed[k];
	}
	if (!fn_untimed)
		return;
	if (cost < 0)
		cost = (double)x86_timer_call_cost();
	for (size_t t = 0; t < n; t++)
		if (fn_untimed[t] && tt->t[t].calls > fn_untimed[t])
			avg[t] = (double)(int64_t)tt->t[t].inclusive / (double)(tt->t[t].calls - fn_untimed[t]);
	for (size_t k = 1; k <= tt->nnodes; k++) {
		const struct ta_node *nd = &tt->nodes[k - 1];
		size_t t = timer_index(nd->key);
		if (!untimed[k] || t >= n || untimed[k] > nd->calls)
			continue;
		uint64_t timed = nd->calls - untimed[k];
		double mean = timed ? (double)(int64_t)nd->inclusive / (double)timed : avg[t];
		extra[k] = mean > cost ? (int64_t)((mean - cost) * (double)untimed[k] + 0.5) : 0;
	}
	for (size_t k = 1; k <= tt->nnodes; k++) {
		if (!extra[k])
			continue;
		struct ta_node *nd = &tt->nodes[k - 1];
		struct ta_timer *t = &tt->t[timer_index(nd->key)];
		nd->inclusive += (uint64_t)extra[k];
		nd->exclusive += (uint64_t)extra[k];
		t->inclusive += (uint64_t)extra[k];
		t->exclusive += (uint64_t)extra[k];
		size_t up = caller_of(nd);
		if (up < 1 || up >= k)
			continue;
		/* the function's exclusive time is the sum of its contexts': the
		 * same ticks taken from both */
		struct ta_node *caller = &tt->nodes[up - 1];
		int64_t took = take_ticks(&caller->exclusive, extra[k]);
		size_t ct = timer_index(caller->key);
		if (ct < n)
			take_ticks(&tt->t[ct].exclusive, took);
	}
out:
	free(fn_untimed);
	free(extra);
	free(avg);
}

/* The times of thread TID from its area A (closed at NOW: A is changed). */
static void keep(struct proc *p, pid_t tid, uint8_t *a, uint64_t now)
{
	thread_area_close_frames(a, now);
	size_t n = p->ntimers < TA_MAX_TIMERS ? p->ntimers : TA_MAX_TIMERS, nnodes;
	if (n <= RTL_MAX_TIMER_ID)   /* the numbered ones */
		n = RTL_MAX_TIMER_ID + 1;
	const struct ta_node *nodes = thread_area_nodes(a, &nnodes);
	struct thread_times tt = { tid, malloc(n * sizeof(struct ta_timer)), n,
				   malloc((nnodes + 1) * sizeof(struct ta_node)), nnodes, p->ncontexts + 1 };
	if (!tt.t || !tt.nodes || rtl_grow(&p->times, &p->ntimes_cap, p->ntimes + 1, sizeof(*p->times))) {
		free(tt.t);
		free(tt.nodes);
		return;
	}
	memcpy(tt.t, a + TA_WORDS, n * sizeof(struct ta_timer));
	memcpy(tt.nodes, nodes + 1, nnodes * sizeof(struct ta_node));
	estimate_untimed(&tt, a);
	p->ncontexts += nnodes;
	p->times[p->ntimes++] = tt;
	const struct ta_node *lost = (const struct ta_node *)(a + TA_LOST);
	if (lost->calls)
		rtl_warn("pid %d, thread %d: %llu calls on paths beyond the first %d are left out of the "
			 "calling-context tree", (int)p->pid, (int)tid, (unsigned long long)lost->calls,
			 TA_MAX_NODES);
}

void timers_check_gs(struct proc *p, pid_t tid)
{
	struct thread *t = proc_thread(p, tid);
	uint64_t base;
	if (t && t->area > 0 && p->areas.addr && !p->gs_taken && !os_get_area_base(tid, &base) &&
	    base != thread_area_addr(&p->areas, (unsigned)t->area)) {
		/* the program set its own %gs base (docs/engine.md, Known limits) */
		p->gs_taken = true;
		/* the values say whose doing it was if it was not the program's:
		 * 0 after an exec, another area's address, the null area's after
		 * an inferior call */
		rtl_warn("pid %d: thread %d set its own %%gs base: reticle's counts and times of its threads may "
			 "be wrong (RETICLE_THREAD_COUNTERS=0 counts without %%gs; base %#llx, its area %d at %#llx, "
			 "areas from %#llx)", (int)p->pid, (int)tid, (unsigned long long)base, t->area,
			 (unsigned long long)thread_area_addr(&p->areas, (unsigned)t->area),
			 (unsigned long long)p->areas.addr);
	}
}

void timers_thread_exit(struct proc *p, pid_t tid)
{
	struct thread *t = proc_thread(p, tid);
	if (!t || t->area < 0 || !p->areas.addr)
		return;
	if (t->area > 0) {
		if (session_shim(p->s))
			shim_unwatch(session_shim(p->s), tid);
		memtrace_drain(p, (unsigned)t->area);
		uint8_t *a = thread_area_local(&p->areas, (unsigned)t->area);
		if (p->runs_on) {
			/* it runs on in the copies, its timer frames open: they are
			 * closed in a copy of its area, which stays as it is */
			uint8_t *copy = thread_area_copy(a, p->ntimers > RTL_MAX_TIMER_ID ? p->ntimers
										 : RTL_MAX_TIMER_ID + 1);
			if (copy)
				keep(p, tid, copy, os_tsc());
			thread_area_copy_free(copy);
		} else {
			keep(p, tid, a, os_tsc());
			fold_counters(p, (unsigned)t->area);
			thread_region_give(&p->areas, (unsigned)t->area);
		}
	}
	t->area = -1;
}

int timers_live(struct proc *p, double **excl, double **incl, size_t *n)
{
	*excl = *incl = NULL;
	*n = p->areas.addr ? (p->ntimers < TA_MAX_TIMERS ? p->ntimers : TA_MAX_TIMERS) : 0;
	if (!*n)
		return 0;
	int64_t *e = calloc(*n, sizeof(*e)), *i = calloc(*n, sizeof(*i));
	double *de = malloc(*n * sizeof(*de)), *di = malloc(*n * sizeof(*di));
	if (!e || !i || !de || !di) {
		free(e), free(i), free(de), free(di);
		*n = 0;
		return -ENOMEM;
	}
	for (size_t k = 0; k < p->ntimes; k++)   /* threads that ended */
		for (size_t t = 0; t < *n && t < p->times[k].n; t++) {
			e[t] += (int64_t)p->times[k].t[t].exclusive;
			i[t] += (int64_t)p->times[k].t[t].inclusive;
		}
	uint64_t now = os_tsc();
	for (size_t k = 0; k < p->nthreads; k++)
		if (p->threads[k].area > 0)
			thread_area_live(thread_area_local(&p->areas, (unsigned)p->threads[k].area), now, *n, e, i);
	double hz = timers_tsc_hz(p->s);
	for (size_t t = 0; t < *n; t++) {
		de[t] = (double)e[t] / hz;
		di[t] = (double)i[t] / hz;
	}
	free(e);
	free(i);
	*excl = de;
	*incl = di;
	return 0;
}

void timers_pause(struct proc *p, pid_t tid, uint64_t ticks)
{
	struct thread *t = proc_thread(p, tid);
	if (t && t->area > 0 && p->areas.addr)
		thread_area_shift_frames(thread_area_local(&p->areas, (unsigned)t->area), ticks);
}

void timers_harvest_all(struct proc *p)
{
	for (size_t i = 0; i < p->nthreads; i++)
		timers_thread_exit(p, p->threads[i].tid);
	if (p->areas.null_used && !p->runs_on) {   /* the threads beyond the areas' number */
		fold_counters(p, 0);
		thread_area_slab_clear(&p->areas, 0);
		p->areas.null_used = false;
	}
}

void timers_record(struct proc *p, struct func_state *fs, uint64_t desc)
{
	struct window *w = proc_window_at(p, desc, 8);
	if (!w)
		return;
	/* numbers up to RTL_MAX_TIMER_ID are the plans' */
	if (p->ntimers <= RTL_MAX_TIMER_ID)
		p->ntimers = RTL_MAX_TIMER_ID + 1;
	size_t n = p->ntimers < TA_MAX_TIMERS ? p->ntimers++ : 0;
	if (!n && p->ntimers++ == TA_MAX_TIMERS)
		rtl_warn("pid %d: more than %d timed functions: the rest share one timer", (int)p->pid,
			 TA_MAX_TIMERS - 1);
	fs->timer = (uint32_t)(TA_WORDS + n * sizeof(struct ta_timer));
	fs->timer_desc = desc;
	*(uint64_t *)window_local(w, desc) = fs->timer;
}

static int by_timer(const void *a, const void *b)
{
	const struct context_rec *x = a, *y = b;
	if (x->timer != y->timer)
		return (x->timer > y->timer) - (x->timer < y->timer);
	if (x->v.tid != y->v.tid)
		return (x->v.tid > y->v.tid) - (x->v.tid < y->v.tid);
	return (x->v.id > y->v.id) - (x->v.id < y->v.id);
}

/* The node number of NODE's caller (0: a root). */
static size_t caller_of(const struct ta_node *node)
{
	uint64_t off = node->key >> TA_KEY_SHIFT;
	return off >= TA_NODES ? (off - TA_NODES) / sizeof(struct ta_node) : 0;
}

int timers_contexts(struct proc *p, struct contexts *c)
{
	memset(c, 0, sizeof(*c));
	size_t total = 0;
	for (size_t i = 0; i < p->ntimes; i++)
		total += p->times[i].nnodes;
	if (!total)
		return 0;
	c->r = malloc(total * sizeof(*c->r));
	if (!c->r)
		return -ENOMEM;
	double hz = p->tsc_hz;
	for (size_t i = 0; i < p->ntimes; i++) {
		const struct thread_times *tt = &p->times[i];
		/* a node is kept when it ran or a descendant did (a forked
		 * child's tree starts with its parent's paths, counts zeroed);
		 * a caller was taken before its callees, so one pass back */
		uint8_t *kept = calloc(tt->nnodes + 1, 1);
		if (!kept)
			return -ENOMEM;
		for (size_t k = tt->nnodes; k >= 1; k--) {
			const struct ta_node *n = &tt->nodes[k - 1];
			size_t up = caller_of(n);
			kept[k] |= n->calls || n->inclusive;
			if (kept[k] && up < k)
				kept[up] = 1;
		}
		for (size_t k = 1; k <= tt->nnodes; k++) {
			const struct ta_node *n = &tt->nodes[k - 1];
			uint64_t timer = n->key & ((1ull << TA_KEY_SHIFT) - 1);
			size_t up = caller_of(n);
			if (!kept[k] || up >= k || timer <= TA_WORDS)
				continue;   /* the shared timer: no function to name */
			uint64_t base = (uint64_t)p->image << 32;
			c->r[c->n++] = (struct context_rec){ (uint32_t)timer, { tt->tid, base | (tt->first_id + k - 1),
				up ? base | (tt->first_id + up - 1) : 0, n->calls, (double)(int64_t)n->inclusive / hz,
				(double)(int64_t)n->exclusive / hz } };
		}
		free(kept);
	}
	qsort(c->r, c->n, sizeof(*c->r), by_timer);
	return 0;
}

const struct context_rec *timers_contexts_of(const struct contexts *c, const struct func_state *fs, size_t *n)
{
	*n = 0;
	size_t lo = 0, hi = c->n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (c->r[mid].timer < fs->timer)
			lo = mid + 1;
		else
			hi = mid;
	}
	while (lo + *n < c->n && c->r[lo + *n].timer == fs->timer)
		(*n)++;
	return c->r + lo;
}

static int by_tid(const void *a, const void *b)   /* by id first: the numbered ones */
{
	const struct rtl_timer_view *x = a, *y = b;
	if (x->id != y->id)
		return x->id < y->id ? -1 : 1;
	return (x->tid > y->tid) - (x->tid < y->tid);
}

struct rtl_timer_view *timers_numbered(struct proc *p, size_t *n)
{
	*n = 0;
	struct rtl_timer_view *v = malloc((p->ntimes ? p->ntimes : 1) * RTL_MAX_TIMER_ID * sizeof(*v));
	if (!v)
		return NULL;
	for (uint32_t id = 1; id <= RTL_MAX_TIMER_ID; id++)
		for (size_t i = 0; i < p->ntimes; i++) {
			const struct thread_times *tt = &p->times[i];
			/* a frame opened at an insertion times without a call */
			if (id >= tt->n || (!tt->t[id].calls && !tt->t[id].inclusive))
				continue;
			const struct ta_timer *t = &tt->t[id];
			v[(*n)++] = (struct rtl_timer_view){ tt->tid, t->calls, (double)(int64_t)t->inclusive / p->tsc_hz,
							     (double)(int64_t)t->exclusive / p->tsc_hz, id };
		}
	if (*n > 1)
		qsort(v, *n, sizeof(*v), by_tid);
	return v;
}

struct rtl_timer_view *timers_view(struct proc *p, const struct func_state *fs, size_t *n)
{
	*n = 0;
	if (!fs->timer || fs->timer == TA_WORDS || !p->ntimes)
		return NULL;
	size_t idx = (fs->timer - TA_WORDS) / sizeof(struct ta_timer);
	struct rtl_timer_view *v = malloc(p->ntimes * sizeof(*v));
	if (!v)
		return NULL;
	double hz = p->tsc_hz;
	for (size_t i = 0; i < p->ntimes; i++) {
		const struct thread_times *tt = &p->times[i];
		if (idx >= tt->n || !tt->t[idx].calls)
			continue;
		const struct ta_timer *t = &tt->t[idx];
		/* ticks as signed: a frame closed by a CPU whose TSC lags is never huge */
		v[(*n)++] = (struct rtl_timer_view){ tt->tid, t->calls, (double)(int64_t)t->inclusive / hz,
						     (double)(int64_t)t->exclusive / hz, 0 };
	}
	if (*n > 1)
		qsort(v, *n, sizeof(*v), by_tid);
	return v;
}
