/* SHIM's observer (seed 004): a thread of reticle on another core that
 * reads, every PERIOD cycles on average, the signal word of every thread
 * of the program (its area's TA_SIGNAL: the function running now, stored
 * by one instruction at each entry and after each call), and the TSC
 * before and after each read. Double-time error correction, as SHIM's: the
 * period between the starts of a thread's two consecutive reads and the
 * period between their ends must agree (CPC, their ratio, within 5%, or
 * within 2,048 cycles); when they do not, the observer was preempted or
 * stalled around one of them,
 * and the sample, with the period it would stand for, is dropped. The
 * period is drawn uniformly from [PERIOD/2, 3*PERIOD/2) so that it cannot
 * alias with a loop of the program. A kept sample stands for the cycles
 * since the thread's previous read; after a stall (the observer away for
 * over 10 periods), when the value read differs from the one read before,
 * half of them go to each. */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <x86intrin.h>
#include "sample/sample.h"
#include "util/array.h"

struct cnt {
	uint64_t value, samples, cycles;
	bool used;
};

/* A run of the program's own signal (reticle/signal.h): its value from
 * the read that first saw it. */
struct run {
	uint64_t tsc, value;
};

enum { MAX_RUNS = 1 << 20 };   /* a thread's runs kept; later changes are counted only */

struct watched {
	volatile const uint64_t *signal, *user;
	pid_t pid, tid;
	unsigned gen;
	bool live;
	uint64_t last_s, last_e;  /* TSC before and after its last read, 0 before any */
	uint64_t last_v;          /* the function signal it read then */
	struct cnt *c;            /* open addressing by value */
	size_t nc, size;
	struct run *runs;         /* the user signal's changes as seen */
	size_t nruns, capruns;
	uint64_t user_last, runs_dropped;
};

struct shim {
	unsigned period;
	pthread_t thread;
	bool started;
	volatile bool stopping;
	pthread_mutex_t lock;
	struct watched **w;
	size_t nw, capw;
	int cpu;
	/* statistics (the observer's; read at the end) */
	uint64_t taken, kept, read_cycles;   /* kept: DTE's (each with its gap) */
	/* sweeps that came more than 10 periods after the one before (the
	 * observer lost its CPU), and the cycles lost so */
	uint64_t stalls, stalled_cycles, first_sweep, last_sweep, prev_sweep;
	double gap_sum, gap_sq;
	/* the gaps' distribution: 32-cycle buckets up to 32,768 cycles, the last
	 * bucket for the rest */
	uint64_t hist[1025];
};

/* VALUE held CYCLES more of T's time, SAMPLES (0 or 1) more reads saw it. */
static int count(struct watched *t, uint64_t value, uint64_t samples, uint64_t cycles)
{
	if ((t->nc + 1) * 2 > t->size) {
		size_t size = t->size ? t->size * 2 : 64;
		struct cnt *c = calloc(size, sizeof(*c));
		if (!c)
			return -ENOMEM;
		for (size_t i = 0; i < t->size; i++)
			if (t->c[i].used) {
				size_t h = (size_t)(t->c[i].value * 0x9e3779b97f4a7c15ull >> 32) & (size - 1);
				while (c[h].used)
					h = (h + 1) & (size - 1);
				c[h] = t->c[i];
			}
		free(t->c);
		t->c = c;
		t->size = size;
	}
	size_t mask = t->size - 1, h = (size_t)(value * 0x9e3779b97f4a7c15ull >> 32) & mask;
	while (t->c[h].used && t->c[h].value != value)
		h = (h + 1) & mask;
	if (!t->c[h].used) {
		t->c[h].value = value;
		t->c[h].used = true;
		t->nc++;
	}
	t->c[h].samples += samples;
	t->c[h].cycles += cycles;
	return 0;
}

static void *observe(void *arg)
{
	struct shim *s = arg;
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(s->cpu, &set);
	pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
	uint64_t rnd = __rdtsc() | 1, next = __rdtsc();
	while (!s->stopping) {
		uint64_t now;
		while ((now = __rdtsc()) < next)
			_mm_pause();
		bool stalled = s->prev_sweep && now - s->prev_sweep > 10ull * s->period;
		if (stalled) {
			s->stalls++;
			s->stalled_cycles += now - s->prev_sweep;
		}
		pthread_mutex_lock(&s->lock);
		size_t live = 0;
		for (size_t i = 0; i < s->nw; i++) {
			struct watched *t = s->w[i];
			if (!t->live)
				continue;
			live++;
			_mm_lfence();
			uint64_t t0 = __rdtsc();
			uint64_t v = *t->signal, u = *t->user;
			uint64_t t1 = __rdtscp(&(unsigned){ 0 });
			/* after a stall, a change happened at an unknown time while
			 * the observer was away: the middle of that time is the
			 * estimate that favours neither value */
			uint64_t mid = t->last_e && stalled ? t->last_e + (t0 - t->last_e) / 2 : t0;
			if (u != t->user_last) {   /* a new run of the program's signal */
				if (t->nruns < MAX_RUNS &&
				    !rtl_grow(&t->runs, &t->capruns, t->nruns + 1, sizeof(*t->runs)))
					t->runs[t->nruns++] = (struct run){ mid, u };
				else
					t->runs_dropped++;
				t->user_last = u;
			}
			s->taken++;
			s->read_cycles += t1 - t0;
			uint64_t gap = t0 - t->last_s, gap_e = t1 - t->last_e;
			bool first = !t->last_s;
			uint64_t last_v = t->last_v;
			t->last_s = t0;
			t->last_e = t1;
			t->last_v = v;
			/* DTE: start-to-start and end-to-end periods within 5%, or
			 * within 2,048 cycles: a read of a line the program just
			 * wrote takes a few hundred cycles more, and dropping those
			 * would bias against the functions that change the signal
			 * most; a preemption or an interrupt takes thousands */
			uint64_t skew = gap > gap_e ? gap - gap_e : gap_e - gap;
			if (first || (20 * skew > gap && skew > 2048))
				continue;
			s->hist[gap / 32 < 1024 ? gap / 32 : 1024]++;
			s->gap_sum += (double)gap;
			s->gap_sq += (double)gap * (double)gap;
			s->kept++;
			if (stalled && v != last_v) {
				/* the same split as a run's (above); the same value
				 * before and after a stall most likely held throughout */
				count(t, last_v, 0, t0 - mid);
				count(t, v, 1, gap - (t0 - mid));
			} else {
				count(t, v, 1, gap);
			}
		}
		pthread_mutex_unlock(&s->lock);
		if (!live) {
			usleep(1000);   /* no thread to watch (yet) */
			next = __rdtsc();
			s->prev_sweep = 0;
			continue;
		}
		if (!s->first_sweep)
			s->first_sweep = now;
		s->last_sweep = s->prev_sweep = now;
		rnd ^= rnd << 13;
		rnd ^= rnd >> 7;
		rnd ^= rnd << 17;
		next = now + s->period / 2 + rnd % s->period;
	}
	return NULL;
}

int shim_start(unsigned period, struct shim **out, char *why, size_t len)
{
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	if (ncpu < 2) {
		snprintf(why, len, "the shim collector's observer needs a core of its own, and this machine has "
			 "one (use -c sample)");
		return -EINVAL;
	}
	if (period < 100) {
		snprintf(why, len, "a shim period of %u cycles is below what the observer can do (100 and above; "
			 "a read costs ~30-100 cycles)", period);
		return -EINVAL;
	}
	struct shim *s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->period = period;
	/* the last CPU (reticle's own affinity may be one CPU while the
	 * program starts up: engine/placement.c) */
	s->cpu = (int)ncpu - 1;
	pthread_mutex_init(&s->lock, NULL);
	if (pthread_create(&s->thread, NULL, observe, s)) {
		pthread_mutex_destroy(&s->lock);
		free(s);
		snprintf(why, len, "cannot start the observer thread");
		return -EAGAIN;
	}
	s->started = true;
	*out = s;
	return 0;
}

static void watched_free(struct watched *t)
{
	free(t->c);
	free(t->runs);
	free(t);
}

/* T is seen no more: its signal's last run ends at its last read. */
static void close_runs(struct watched *t)
{
	if (t->user_last && t->last_e &&
	    !rtl_grow(&t->runs, &t->capruns, t->nruns + 1, sizeof(*t->runs))) {
		t->runs[t->nruns++] = (struct run){ t->last_e, 0 };
		t->user_last = 0;
	}
}

void shim_watch(struct shim *s, pid_t pid, unsigned gen, pid_t tid, volatile const uint64_t *signal,
		volatile const uint64_t *user)
{
	struct watched *t = calloc(1, sizeof(*t));
	if (!t)
		return;
	t->signal = signal;
	t->user = user;
	t->pid = pid;
	t->tid = tid;
	t->gen = gen;
	t->live = true;
	pthread_mutex_lock(&s->lock);
	for (size_t i = 0; i < s->nw; i++)   /* an area given again: the old thread left it */
		if (s->w[i]->live && s->w[i]->signal == signal) {
			s->w[i]->live = false;
			close_runs(s->w[i]);
		}
	if (rtl_grow(&s->w, &s->capw, s->nw + 1, sizeof(*s->w)))
		free(t);
	else
		s->w[s->nw++] = t;
	pthread_mutex_unlock(&s->lock);
}

void shim_unwatch(struct shim *s, pid_t tid)
{
	pthread_mutex_lock(&s->lock);
	for (size_t i = 0; i < s->nw; i++)
		if (s->w[i]->tid == tid && s->w[i]->live) {
			s->w[i]->live = false;
			close_runs(s->w[i]);
		}
	pthread_mutex_unlock(&s->lock);
}

int shim_take(struct shim *s, pid_t pid, unsigned gen, struct shim_counts *out)
{
	memset(out, 0, sizeof(*out));
	int err = 0;
	pthread_mutex_lock(&s->lock);
	size_t keep = 0;
	for (size_t i = 0; i < s->nw; i++) {
		struct watched *t = s->w[i];
		if (t->pid != pid || t->gen != gen) {
			s->w[keep++] = t;
			continue;
		}
		close_runs(t);
		for (size_t k = 0; k < t->size && !err; k++) {
			if (!t->c[k].used)
				continue;
			if (rtl_grow(&out->c, &out->cap, out->n + 1, sizeof(*out->c)))
				err = -ENOMEM;
			else
				out->c[out->n++] = (struct shim_count){ t->tid, t->c[k].value, t->c[k].samples,
									 t->c[k].cycles };
		}
		for (size_t k = 0; k < t->nruns && !err; k++) {
			if (rtl_grow(&out->runs, &out->capruns, out->nruns + 1, sizeof(*out->runs)))
				err = -ENOMEM;
			else
				out->runs[out->nruns++] = (struct shim_run){ t->tid, t->runs[k].tsc, t->runs[k].value };
		}
		out->runs_dropped += t->runs_dropped;
		watched_free(t);
	}
	s->nw = keep;
	pthread_mutex_unlock(&s->lock);
	return err;
}

void shim_counts_free(struct shim_counts *c)
{
	free(c->runs);
	free(c->c);
	memset(c, 0, sizeof(*c));
}

void shim_stop(struct shim *s, struct shim_stats *st)
{
	if (!s)
		return;
	if (s->started) {
		s->stopping = true;
		pthread_join(s->thread, NULL);
	}
	if (st) {
		memset(st, 0, sizeof(*st));
		st->period = s->period;
		st->taken = s->taken;
		st->kept = s->kept;
		st->read_cycles = s->taken ? (double)s->read_cycles / (double)s->taken : 0;
		st->stalls = s->stalls;
		uint64_t span = s->last_sweep > s->first_sweep ? s->last_sweep - s->first_sweep : 0;
		st->stalled_share = span ? (double)s->stalled_cycles / (double)span : 0;
		if (s->kept) {
			st->gap_mean = s->gap_sum / (double)s->kept;
			double var = s->gap_sq / (double)s->kept - st->gap_mean * st->gap_mean;
			st->gap_cv = var > 0 && st->gap_mean > 0 ? sqrt(var) / st->gap_mean : 0;
			double *q[] = { &st->gap_p10, &st->gap_p50, &st->gap_p90 };
			double at[] = { 0.1, 0.5, 0.9 };
			for (int i = 0; i < 3; i++) {
				uint64_t want = (uint64_t)(at[i] * (double)s->kept), seen = 0;
				size_t b = 0;
				while (b < 1024 && (seen += s->hist[b]) <= want)
					b++;
				*q[i] = 32.0 * (double)b + 16;   /* the bucket's middle */
			}
		}
	}
	for (size_t i = 0; i < s->nw; i++)
		watched_free(s->w[i]);
	free(s->w);
	pthread_mutex_destroy(&s->lock);
	free(s);
}
