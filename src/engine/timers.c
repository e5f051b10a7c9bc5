/* Function timers: every thread of a process image gets an area
 * (runtime/thread_area.h) when a collector times functions; a relocated
 * copy's timer gets a number, written into a counter of the copy that its
 * snippets read; a thread's timers are kept when it ends. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <reticle/error.h>
#include "engine/engine.h"
#include "os/linux/os.h"
#include "util/array.h"
#include "util/log.h"

static bool wanted(const struct proc *p)
{
	return session_probes(p->s)->timers;
}

/* Gives thread T an area and points its %gs there. */
static void give_area(struct proc *p, struct thread *t)
{
	unsigned k = thread_region_take(&p->areas);
	if (!k)
		rtl_warn("pid %d: more than %d threads at once: thread %d is not timed", (int)p->pid,
			 TA_COUNT - 1, (int)t->tid);
	if (os_set_area_base(t->tid, thread_area_addr(&p->areas, k))) {
		thread_region_give(&p->areas, k);
		return;
	}
	t->area = (int)k;
}

int timers_setup_image(struct proc *p, pid_t tid)
{
	if (!wanted(p) || p->areas.fd >= 0)
		return 0;
	int err = thread_region_init(&p->areas);
	uint64_t at = 0;
	if (!err)
		err = proc_map_memfd(p, tid, p->areas.fd, 0, (size_t)TA_COUNT * TA_SIZE, false, &at);
	if (err) {
		thread_region_free(&p->areas);
		rtl_warn("pid %d: no room for thread areas (%s): functions are not timed", (int)p->pid,
			 rtl_strerror(err));
		return 0;
	}
	thread_region_place(&p->areas, at);
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
	struct thread *ct = proc_thread(c, c->pid);
	if (ct)
		ct->area = (int)k;
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

static void keep(struct proc *p, pid_t tid, unsigned k, uint64_t now)
{
	uint8_t *a = thread_area_local(&p->areas, k);
	thread_area_close_frames(a, now);
	size_t n = p->ntimers < TA_MAX_TIMERS ? p->ntimers : TA_MAX_TIMERS;
	struct thread_times tt = { tid, malloc(n * sizeof(struct ta_timer)), n };
	if (!tt.t || rtl_grow(&p->times, &p->ntimes_cap, p->ntimes + 1, sizeof(*p->times))) {
		free(tt.t);
		return;
	}
	memcpy(tt.t, a + TA_WORDS, n * sizeof(struct ta_timer));
	p->times[p->ntimes++] = tt;
}

void timers_thread_exit(struct proc *p, pid_t tid)
{
	struct thread *t = proc_thread(p, tid);
	if (!t || t->area < 0 || !p->areas.addr)
		return;
	if (t->area > 0) {
		keep(p, tid, (unsigned)t->area, os_tsc());
		thread_region_give(&p->areas, (unsigned)t->area);
	}
	t->area = -1;
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
}

void timers_record(struct proc *p, struct func_state *fs, uint64_t desc)
{
	struct window *w = proc_window_at(p, desc, 8);
	if (!w)
		return;
	size_t n = p->ntimers < TA_MAX_TIMERS ? p->ntimers++ : 0;
	if (!n && p->ntimers++ == TA_MAX_TIMERS)
		rtl_warn("pid %d: more than %d timed functions: the rest share one timer", (int)p->pid,
			 TA_MAX_TIMERS - 1);
	fs->timer = (uint32_t)(TA_WORDS + n * sizeof(struct ta_timer));
	fs->timer_desc = desc;
	*(uint64_t *)window_local(w, desc) = fs->timer;
}

static int by_tid(const void *a, const void *b)
{
	const struct rtl_timer_view *x = a, *y = b;
	return (x->tid > y->tid) - (x->tid < y->tid);
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
	double hz = timers_tsc_hz(p->s);
	for (size_t i = 0; i < p->ntimes; i++) {
		const struct thread_times *tt = &p->times[i];
		if (idx >= tt->n || !tt->t[idx].calls)
			continue;
		const struct ta_timer *t = &tt->t[idx];
		/* ticks as signed: a frame closed by a CPU whose TSC lags is never huge */
		v[(*n)++] = (struct rtl_timer_view){ tt->tid, t->calls, (double)(int64_t)t->inclusive / hz,
						     (double)(int64_t)t->exclusive / hz };
	}
	if (*n > 1)
		qsort(v, *n, sizeof(*v), by_tid);
	return v;
}
