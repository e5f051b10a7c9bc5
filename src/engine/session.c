/* Sessions: launching, the event loop over every traced thread, following
 * clone, fork, vfork and exec, and naming the profiles. */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <unistd.h>
#include <reticle/cachesim.h>
#include <reticle/error.h>
#include <reticle/session.h>
#include "engine/debug.h"
#include "engine/engine.h"
#include "engine/span.h"
#include "engine/session_priv.h"
#include "runtime/arc_table.h"
#include "collectors/builtin.h"
#include "os/linux/os.h"
#include "sample/sample.h"
#include "util/array.h"
#include "util/file_id.h"
#include "util/fifo.h"
#include "util/log.h"

/* A process in a group-stop (job control), and the signal that stopped it. */
struct stopped_proc {
	pid_t pid;
	int sig;
};

struct early_stop {
	pid_t tid;
	struct os_stop st;
};

struct rtl_session {
	/* session_dispose's thread, started at the first item, on the CPUs
	 * reticle had at creation (not the one the event loop may be pinned
	 * to when it starts) */
	struct rtl_fifo disposer;
	struct os_cpus cpus;
	bool cpus_known;
	char *output;
	const struct rtl_collector **colls;
	size_t ncolls;
	struct probe_set probes;
	/* binaries by path and by the file's identity then: a file replaced
	 * under its path (a configure script's conftest built and run again,
	 * a library copied over and dlopen'ed again) is another binary */
	struct { char *path; rtl_binary *bin; struct file_id id; } *bins;
	size_t nbins;
	struct proc **procs;
	size_t nprocs;
	struct early_stop *early;
	size_t nearly;
	char **profiles;
	size_t nprofiles;
	/* one profile for the whole session: every process image is written
	 * into it as it ends, committed when the session ends */
	rtl_profile *profile;
	char *profile_path;
	bool profile_failed;
	uint64_t t0;              /* CLOCK_MONOTONIC at creation, ns */
	uint64_t tsc0;            /* the TSC then */
	pid_t main_pid;
	char *main_command;
	int main_status;
	struct stopped_proc *stopped;
	size_t nstopped;
	unsigned images;
	struct rtl_session_stats stats;
	char *warm_dir;           /* warm-start cache, NULL when off */
	char **warm_aged;         /* lists aged by an image of this run already */
	size_t nwarm_aged, capwarm_aged;
	struct debugger *debugger;    /* reticle debug, run --debug-on-fault */
	char **meta;              /* the caller's key, value pairs for the profile; NULL-ended */
	uint64_t warm_max;        /* bytes it may hold */
	struct placement *placement;
	struct ahead *ahead;      /* copies made ahead; NULL with one CPU */
	struct armed_saver *armed;   /* armed text written for the next run; NULL until the first */
	struct patch_env patch_env;   /* the patcher's view of the session */
	/* stops met while one thread ran an inferior call, handled afterwards */
	struct os_stop *deferred;
	size_t ndeferred, capdeferred;
	/* the sample collector: its sampler once launched, and its options */
	bool sampling, instruments;
	struct sampler_opts sample_opts;
	struct sampler *sampler;
	/* the shim collector: its observer once launched, and its period */
	bool shimming;
	bool dynamic;             /* copies made again while it runs (dynamic_probes) */
	bool mem_chain;           /* memtrace's static analysis (not memtrace_no_chain) */
	bool no_aslr;             /* launched without address randomization */
	const char *aslr_meta;    /* "on" or "off" for a launched program */
	unsigned shim_period;
	struct shim *shim;
	/* the memtrace collector's cache configurations */
	struct rtl_cache_config *caches;
	size_t ncaches;
	/* the bbv collector's interval (0: not collecting) and file */
	uint64_t bbv_interval;
	char *bbv_path;
	char *trace_path;         /* memtrace --trace */
	uint64_t sample_on, sample_off;   /* memtrace --sample periodic:ON:OFF */
	uint64_t warmup, warmup_lower;    /* memtrace --warmup, --warmup-lower */
	uint64_t *points, point_interval; /* memtrace --sample simpoint */
	double *weights;
	uint32_t *clusters;               /* of each point */
	size_t npoints, points_reached;   /* the most any image began */
	/* attached to a running process: sampled alone (no ptrace), or
	 * traced and instrumented (TRACED); the run ends at the deadline, at
	 * rtl_session_stop, or when it exits; then every thread is
	 * interrupted (DETACHING) and, once all are held, it is left as it was */
	bool attached, traced, detaching;
	/* cover alone: its probes remove themselves once fired (sweep.c) */
	bool sweeps;
	/* rtl_session_on_tick's callback, its period and last call (ns) */
	void (*tick_fn)(rtl_session *s, void *ctx);
	void *tick_ctx;
	uint64_t tick_ns, last_tick;
	uint64_t swept;           /* increments removed, over every image */
	uint64_t given_up;        /* copies given up for the original code (sweep.c) */
	bool sweep_more;          /* a sweep was cut short */
	bool main_ended;          /* the first process has ended (its status is known) */
	uint64_t main_end_ns;     /* when */
	bool releasing;           /* letting go of what the program left running (release_all) */
	bool untraced_said;       /* the CLONE_UNTRACED note given (untraced_clone) */
	bool said_waiting;        /* that some cannot be let go: said once */
	double duration;
	volatile sig_atomic_t stop;
	struct span_def span;     /* the run's context (span.h) */
};

size_t session_ncollectors(const struct rtl_session *s) { return s->ncolls; }
char *const *session_meta(const struct rtl_session *s) { return s->meta; }
const struct rtl_collector *session_collector(const struct rtl_session *s, size_t i) { return s->colls[i]; }
const struct probe_set *session_probes(const struct rtl_session *s) { return &s->probes; }

double timers_tsc_hz(struct rtl_session *s)
{
	uint64_t ns = os_now_ns() - s->t0, ticks = os_tsc() - s->tsc0;
	return ns ? (double)ticks * 1e9 / (double)ns : 1e9;
}


void session_count_warm(struct rtl_session *s, size_t n) { s->stats.functions_warm += n; }
const char *session_warm_dir(const struct rtl_session *s) { return s->warm_dir; }
bool session_samples(const struct rtl_session *s) { return s->sampling; }

struct armed_saver *session_armed_saver(struct rtl_session *s)
{
	if (!s->armed)
		s->armed = armed_saver_new(s->placement ? placement_all_cpus(s->placement) : NULL);
	return s->armed;
}

const struct patch_env *session_patch_env(struct rtl_session *s)
{
	if (!s->patch_env.ev) {
		/* RETICLE_MEMTRACE_TWINS=0: sampled tracing without twins, the
		 * records of untraced windows written and dropped (to compare) */
		const char *twins = getenv("RETICLE_MEMTRACE_TWINS");
		s->patch_env = (struct patch_env){ &s->probes, s->dynamic,
						   session_memtrace_sampled(s) && !(twins && !strcmp(twins, "0")),
						   session_memtrace_sampled(s), s->ahead, &s->stats, &engine_patch_events,
						   s->mem_chain, s->placement ? placement_all_cpus(s->placement) : NULL,
						   patch_unw_templates_new() };
	}
	return &s->patch_env;
}

struct debugger *session_debugger(struct rtl_session *s) { return s->debugger; }
void session_set_debugger(struct rtl_session *s, struct debugger *d) { s->debugger = d; }
size_t session_proc_count(const struct rtl_session *s) { return s->nprocs; }
struct proc *session_proc_at(struct rtl_session *s, size_t i) { return i < s->nprocs ? s->procs[i] : NULL; }

bool session_warm_age_once(struct rtl_session *s, const char *list)
{
	for (size_t i = 0; i < s->nwarm_aged; i++)
		if (!strcmp(s->warm_aged[i], list))
			return false;
	char *dup = strdup(list);
	if (!dup || rtl_grow(&s->warm_aged, &s->capwarm_aged, s->nwarm_aged + 1, sizeof(*s->warm_aged))) {
		free(dup);
		return false;
	}
	s->warm_aged[s->nwarm_aged++] = dup;
	return true;
}
uint64_t session_warm_max(const struct rtl_session *s) { return s->warm_max; }
struct placement *session_placement(const struct rtl_session *s) { return s->placement; }
const char *session_aslr(const struct rtl_session *s) { return s->aslr_meta; }
struct sampler *session_sampler(const struct rtl_session *s) { return s->sampler; }
struct shim *session_shim(const struct rtl_session *s) { return s->shim; }
bool session_dynamic(const struct rtl_session *s) { return s->dynamic; }

bool each_relocated(struct proc *p, bool (*each)(struct proc *p, struct module *m, size_t k, void *ctx),
		    void *ctx)
{
	for (size_t j = 0; j < p->nmods; j++) {
		struct module *m = &p->mods[j];
		size_t nf = m->unloaded ? 0 : rtl_binary_function_count(m->bin);
		for (size_t k = 0; k < nf; k++)
			if (m->fs[k].status == FS_DONE && !each(p, m, k, ctx))
				return false;
	}
	return true;
}

long rtl_session_reinstrument(rtl_session *s, bool (*want)(const char *module, const char *name, uint64_t addr, void *ctx),
			      void *ctx)
{
	if (!s->dynamic)
		return -RTL_ERR_BAD_OPTION;
	long made = 0;
	for (size_t i = 0; i < s->nprocs; i++) {
		long n = reinstrument_running(s->procs[i], want, ctx);
		if (n < 0)
			return n;
		made += n;
	}
	return made;
}

uint64_t session_bbv_interval(const struct rtl_session *s) { return s->bbv_interval; }

/* BASE for the first process, BASE.PID for another (as exp-bbv names
 * the files of threads after the first). */
static char *per_process(const struct rtl_session *s, const char *base, pid_t pid)
{
	if (!base)
		return NULL;
	if (pid == s->main_pid)
		return strdup(base);
	size_t n = strlen(base) + 16;
	char *path = malloc(n);
	if (path)
		snprintf(path, n, "%s.%d", base, (int)pid);
	return path;
}

char *session_bbv_path(const struct rtl_session *s, pid_t pid)
{
	char deflt[64];   /* no path given: beside the default profile, reticle.PID.db */
	snprintf(deflt, sizeof(deflt), "reticle.%d.bb", (int)s->main_pid);
	return per_process(s, s->bbv_path ? s->bbv_path : deflt, pid);
}

void session_memtrace_sample(const struct rtl_session *s, uint64_t *on, uint64_t *off, uint64_t *warm,
			     uint64_t *warm_lower)
{
	*warm = s->warmup;
	*warm_lower = s->warmup_lower;
	*on = s->sample_on;
	*off = s->sample_off;
}

bool session_memtrace_sampled(const struct rtl_session *s)
{
	return s->sample_on || s->npoints;
}

void session_memtrace_reached(struct rtl_session *s, size_t reached)
{
	if (reached > s->points_reached)
		s->points_reached = reached;
}

size_t rtl_session_points_unreached(const rtl_session *s)
{
	return s->npoints > s->points_reached ? s->npoints - s->points_reached : 0;
}

void session_memtrace_points(const struct rtl_session *s, const uint64_t **point, const double **weight,
			     const uint32_t **cluster, size_t *n, uint64_t *interval)
{
	*point = s->points;
	*weight = s->weights;
	*cluster = s->clusters;
	*n = s->npoints;
	*interval = s->point_interval;
}

char *session_memtrace_path(const struct rtl_session *s, pid_t pid)
{
	return per_process(s, s->trace_path, pid);
}

const struct rtl_cache_config *session_caches(const struct rtl_session *s, size_t *n)
{
	*n = s->ncaches;
	return s->caches;
}

/* OPTS's cache specs, checked before anything runs. */
static int session_parse_caches(struct rtl_session *s, const struct rtl_session_opts *opts)
{
	static const char *const fallback[] = { "cachegrind,l1i=32k:8:64,l1d=32k:8:64,ll=8m:16:64" };
	bool given = opts->sz >= offsetof(struct rtl_session_opts, ncaches) + sizeof(opts->ncaches) &&
		     opts->ncaches;
	const char *const *specs = given ? opts->caches : fallback;
	size_t n = given ? opts->ncaches : 1;
	s->caches = calloc(n, sizeof(*s->caches));
	if (!s->caches)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		char why[256];
		if (rtl_cache_config_parse(specs[i], &s->caches[i], why, sizeof(why)) ||
		    rtl_cache_config_check(&s->caches[i], why, sizeof(why))) {
			rtl_log(RTL_LOG_ERROR, "--cache %s: %s", specs[i], why);
			return -RTL_ERR_BAD_OPTION;
		}
	}
	s->ncaches = n;
	return 0;
}
uint64_t session_tsc0(const struct rtl_session *s) { return s->tsc0; }
const struct span_def *session_span(const struct rtl_session *s) { return &s->span; }
uint64_t session_clock(const struct rtl_session *s) { return os_now_ns() - s->t0; }
void session_span_started(struct rtl_session *s) { s->span.started++; }
void session_scope_matched(struct rtl_session *s, size_t n) { s->span.matched += n; }

/* The run's context from OPTS: 0, or -RTL_ERR_BAD_OPTION said. */
static int session_parse_span(struct rtl_session *s, const struct rtl_session_opts *opts)
{
	if (opts->sz < offsetof(struct rtl_session_opts, to) + sizeof(opts->to))
		return 0;
	const char *why;
	int err = span_def_init(&s->span, opts->modules, opts->functions, opts->from, opts->to, &why);
	if (err == -RTL_ERR_BAD_OPTION)
		rtl_log(0, "bad span edge: %s", why);
	if (err || !(s->span.from.kind || s->span.to.kind))
		return err;
	for (size_t i = 0; i < s->ncolls; i++)
		if (s->colls[i]->timers || s->colls[i] == &collector_sample) {
			rtl_log(0, "a span (from, to) counts only: %s times or traces", s->colls[i]->name);
			return -RTL_ERR_BAD_OPTION;
		}
	return 0;
}
bool session_instruments(const struct rtl_session *s) { return s->instruments; }
bool session_sweeps(const struct rtl_session *s) { return s->sweeps; }

/* rtl_session_tick_on_fd's descriptor became readable: the tick is due */
static volatile sig_atomic_t tick_fd_ready;

/* Every 20 ms of the loop: the fired probes of every process go (a sweep
 * cut short goes on at the loop's next turn); and the caller's tick when
 * due. */
static void sweep_all(struct rtl_session *s, uint64_t *last)
{
	uint64_t now = os_now_ns();
	if (s->sweeps && (s->sweep_more || sweep_due(last, now))) {
		s->sweep_more = false;
		for (size_t i = 0; i < s->nprocs; i++)
			s->sweep_more |= sweep_proc(s->procs[i]);
	}
	if (span_def_has_time(&s->span))
		span_tick(s->procs, s->nprocs, now - s->t0);
	if (s->tick_fn && (now - s->last_tick >= s->tick_ns || tick_fd_ready)) {
		tick_fd_ready = 0;
		s->last_tick = now;
		s->tick_fn(s, s->tick_ctx);
	}
}

int rtl_session_on_tick(rtl_session *s, double seconds, void (*fn)(rtl_session *s, void *ctx), void *ctx)
{
	if (!(seconds >= 0.05) || !fn)
		return -RTL_ERR_BAD_OPTION;
	s->tick_fn = fn;
	s->tick_ctx = ctx;
	s->tick_ns = (uint64_t)(seconds * 1e9);
	s->last_tick = os_now_ns();
	return 0;
}

struct live_counts {
	struct rtl_live_count **out;
	size_t n, cap;
	double *excl, *incl;      /* the process's timers now (timers_live) */
	size_t ntimers;
};

static bool live_count(struct proc *p, struct module *m, size_t k, void *ctx)
{
	struct live_counts *lc = ctx;
	const struct func_state *fs = &m->fs[k];
	uint64_t instrs = 0;
	for (uint32_t b = 0; b < fs->nblocks; b++) {
		const struct block_rec *br = &p->blocks[fs->block0 + b];
		if (br->counter)
			instrs += proc_read_counter(p, br->counter) * br->ninstrs;
	}
	if (rtl_grow(lc->out, &lc->cap, lc->n + 1, sizeof(**lc->out)))
		return false;
	const rtl_function *f = rtl_binary_function(m->bin, k);
	size_t t = fs->timer >= TA_WORDS ? (fs->timer - TA_WORDS) / sizeof(struct ta_timer) : 0;
	bool timed = t && t < lc->ntimers;   /* timer 0 takes what did not fit */
	(*lc->out)[lc->n++] = (struct rtl_live_count){ p->pid, m->path, f->name, f->addr,
						       fs->entry_counter ? proc_read_counter(p, fs->entry_counter) : 0,
						       instrs, timed ? lc->excl[t] : 0, timed ? lc->incl[t] : 0 };
	return true;
}

size_t rtl_session_live(rtl_session *s, struct rtl_live_count **out)
{
	struct live_counts lc = { out, 0, 0, NULL, NULL, 0 };
	*out = NULL;
	bool ok = true;
	for (size_t i = 0; i < s->nprocs && ok; i++) {
		timers_live(s->procs[i], &lc.excl, &lc.incl, &lc.ntimers);
		proc_counters_freeze(s->procs[i]);
		ok = each_relocated(s->procs[i], live_count, &lc);
		proc_counters_thaw(s->procs[i]);
		free(lc.excl);
		free(lc.incl);
	}
	return lc.n;
}

static bool live_push(struct rtl_live_point **out, size_t *n, size_t *cap, struct rtl_live_point pt)
{
	if (rtl_grow(out, cap, *n + 1, sizeof(**out)))
		return false;
	(*out)[(*n)++] = pt;
	return true;
}

/* Thread TID's numbered timers, the first N of its timer words T (read
 * while it may run: each word once). */
static bool live_thread_timers(struct proc *p, pid_t tid, const volatile struct ta_timer *t, size_t n, double hz,
			       struct rtl_live_point **out, size_t *np, size_t *cap)
{
	for (uint32_t id = 1; id <= RTL_MAX_TIMER_ID && id < n; id++) {
		uint64_t calls = t[id].calls;
		if (calls && !live_push(out, np, cap, (struct rtl_live_point){
				     p->pid, NULL, NULL, RTL_POINT_ENTRY, RTL_PRIM_TIMER_START, id, tid, calls,
				     (double)(int64_t)t[id].inclusive / hz }))
			return false;
	}
	return true;
}

/* P's numbered timers, per thread: the threads that ended, then the live
 * ones' areas. */
static bool live_timers(struct proc *p, struct rtl_live_point **out, size_t *n, size_t *cap)
{
	double hz = timers_tsc_hz(p->s);
	bool ok = true;
	for (size_t i = 0; i < p->ntimes && ok; i++)   /* threads that ended */
		ok = live_thread_timers(p, p->times[i].tid, p->times[i].t, p->times[i].n, hz, out, n, cap);
	for (size_t i = 0; p->areas.addr && i < p->nthreads && ok; i++) {
		const struct thread *th = &p->threads[i];
		if (th->area > 0)
			ok = live_thread_timers(p, th->tid,
						(const volatile struct ta_timer *)(thread_area_local(&p->areas,
												  (unsigned)th->area) +
										   TA_WORDS),
						RTL_MAX_TIMER_ID + 1, hz, out, n, cap);
	}
	return ok;
}

double rtl_session_tsc_hz(rtl_session *s)
{
	return timers_tsc_hz(s);
}

struct live_ctx {
	struct proc *p;
	const struct arcs *arcs;
	bool keyed;
	const struct module *m;
	const rtl_function *f;
	struct rtl_live_point **out;
	size_t *n, *cap;
	bool ok;
};

static void live_point(const struct point_rec *pr, void *ctx);

/* Function K of M's snippets with ids, its old copies' too. */
static bool live_function(struct proc *p, struct module *m, size_t k, void *ctx)
{
	struct live_ctx *lc = ctx;
	const struct func_state *fs = &m->fs[k];
	lc->m = m;
	lc->f = rtl_binary_function(m->bin, k);
	for (uint32_t q = 0; q < fs->npoints && lc->ok; q++)
		live_point(&p->points[fs->point0 + q], lc);
	if (patch_has_retired(p))
		patch_each_retired_point(p, (size_t)(m - p->mods), k, live_point, lc);
	return lc->ok;
}

/* Point record PR of a function, if a snippet of its own: its count, or
 * its key's counts. */
static void live_point(const struct point_rec *pr, void *ctx)
{
	struct live_ctx *c = ctx;
	struct rtl_live_point pt = { c->p->pid, c->m->path, c->f->name, pr->kind, pr->op, pr->id, 0, 0, 0 };
	if (!pr->id || !c->ok)
		return;
	if (pr->op == RTL_PRIM_COUNT_BY) {
		const struct arc_entry *e;
		size_t ne = c->keyed ? arcs_of_site(c->p, c->arcs, pr, &e) : 0;
		for (size_t x = 0; x < ne && c->ok; x++) {
			pt.key = arc_key_value(e[x].key);
			pt.value = e[x].count;
			c->ok = live_push(c->out, c->n, c->cap, pt);
		}
		return;
	}
	pt.value = proc_read_counter(c->p, pr->counter);
	c->ok = live_push(c->out, c->n, c->cap, pt);
}

size_t rtl_session_live_points(rtl_session *s, struct rtl_live_point **out)
{
	size_t n = 0, cap = 0;
	*out = NULL;
	for (size_t i = 0; i < s->nprocs; i++) {
		struct proc *p = s->procs[i];
		struct arcs arcs = { 0 };
		bool keyed = false;
		for (size_t k = 0; k < p->npoints && !keyed; k++)
			keyed = p->points[k].op == RTL_PRIM_COUNT_BY;
		if (keyed && arcs_collect(p, &arcs)) {   /* the tables: only where a key is counted */
			arcs_free(&arcs);
			return n;
		}
		struct live_ctx lc = { p, &arcs, keyed, NULL, NULL, out, &n, &cap, true };
		proc_counters_freeze(p);
		bool ok = each_relocated(p, live_function, &lc) && live_timers(p, out, &n, &cap);
		proc_counters_thaw(p);
		arcs_free(&arcs);
		if (!ok)
			return n;
	}
	return n;
}

static void wake(int sig)
{
	(void)sig;
}

static void fd_ready(int sig)
{
	(void)sig;
	tick_fd_ready = 1;
}

int rtl_session_tick_on_fd(rtl_session *s, int fd)
{
	(void)s;
	/* no SA_RESTART: the loop's wait wakes */
	struct sigaction sa = { .sa_handler = fd_ready };
	sigemptyset(&sa.sa_mask);
	int flags = fcntl(fd, F_GETFL);
	if (flags < 0 || sigaction(SIGIO, &sa, NULL) || fcntl(fd, F_SETOWN, getpid()) ||
	    fcntl(fd, F_SETFL, flags | O_ASYNC))
		return -errno;
	return 0;
}

/* A SIGALRM every 50 ms wakes the loop's wait (run_traced: to see its
 * deadline; sweeping: to sweep in a run without traps); OLD_* get back
 * what was there. */
static void start_ticks(struct sigaction *old_sa, struct itimerval *old_tick, long us)
{
	struct sigaction sa = { .sa_handler = wake };
	sigemptyset(&sa.sa_mask);
	sigaction(SIGALRM, &sa, old_sa);
	struct itimerval tick = { { 0, us }, { 0, us } };
	setitimer(ITIMER_REAL, &tick, old_tick);
}

static void stop_ticks(const struct sigaction *old_sa, const struct itimerval *old_tick)
{
	setitimer(ITIMER_REAL, old_tick, NULL);
	sigaction(SIGALRM, old_sa, NULL);
}

void session_defer_stop(struct rtl_session *s, const struct os_stop *st)
{
	if (s->ndeferred == s->capdeferred) {
		size_t cap = s->capdeferred ? 2 * s->capdeferred : 16;
		struct os_stop *n = realloc(s->deferred, cap * sizeof(*n));
		if (!n) {
			rtl_warn("tid %d: a stop was lost (out of memory)", (int)st->tid);
			return;
		}
		s->deferred = n;
		s->capdeferred = cap;
	}
	s->deferred[s->ndeferred++] = *st;
}

bool session_stop_deferred(const struct rtl_session *s, pid_t tid)
{
	for (size_t i = 0; i < s->ndeferred; i++)
		if (s->deferred[i].tid == tid)
			return true;
	return false;
}

bool session_in_event(const struct rtl_session *s, pid_t tid)
{
	for (size_t i = 0; i < s->ndeferred; i++)
		if (s->deferred[i].tid == tid && s->deferred[i].kind >= OS_EVENT_CLONE &&
		    s->deferred[i].kind <= OS_EVENT_SECCOMP)
			return true;
	return false;
}

/* The oldest deferred stop, if any. */
static bool take_deferred(struct rtl_session *s, struct os_stop *st)
{
	if (!s->ndeferred)   /* then a task's end met by a wait for it alone (after its events) */
		return os_take_ended(st);
	*st = s->deferred[0];
	memmove(s->deferred, s->deferred + 1, --s->ndeferred * sizeof(*s->deferred));
	return true;
}

/* Keeps BIN (opened from PATH, whose file ST was, or NULL if it could
 * not be) in the cache. */
static rtl_binary *cache_binary(struct rtl_session *s, const char *path, const struct stat *st,
				rtl_binary *bin)
{
	void *nb = realloc(s->bins, (s->nbins + 1) * sizeof(*s->bins));
	if (!nb) {
		rtl_binary_close(bin);
		return NULL;
	}
	s->bins = nb;
	s->bins[s->nbins].path = strdup(path);
	s->bins[s->nbins].bin = bin;
	s->bins[s->nbins++].id = file_id_of(st);
	s->stats.modules++;
	return bin;
}

/* NOW: the binary of the file at PATH now (a process maps or execs what
 * the path names when it loads it, which reticle learns of just after);
 * else the one last opened from PATH, opened if none was. */
static rtl_binary *binary_of(struct rtl_session *s, const char *path, bool now)
{
	struct stat st = { 0 };
	bool known = now && !stat(path, &st);
	struct file_id id = file_id_of(&st);
	for (size_t i = s->nbins; i-- > 0;)   /* the latest first */
		if (!strcmp(s->bins[i].path, path) && (!known || file_id_same(&s->bins[i].id, &id)))
			return s->bins[i].bin;
	if (!now)
		stat(path, &st);
	rtl_binary *bin = NULL;
	int err = warm_open_binary(session_warm_dir(s), path, &bin);
	if (err)
		rtl_warn("%s: %s", path, rtl_strerror(err));
	return cache_binary(s, path, &st, bin);
}

rtl_binary *session_binary(struct rtl_session *s, const char *path)
{
	return binary_of(s, path, true);
}

rtl_binary *session_binary_seen(struct rtl_session *s, const char *path)
{
	return binary_of(s, path, false);
}

int rtl_session_create(const struct rtl_session_opts *opts, rtl_session **out)
{
	struct rtl_session *s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->cpus_known = !os_cpus_get(0, &s->cpus);
	if (opts->ncollectors == 0) {
		free(s);
		return -RTL_ERR_BAD_OPTION;
	}
	s->colls = malloc(opts->ncollectors * sizeof(*s->colls));
	s->output = opts->output ? strdup(opts->output) : NULL;
	const char *warm = opts->sz >= offsetof(struct rtl_session_opts, warm_cache) + sizeof(opts->warm_cache)
			   ? opts->warm_cache : NULL;
	s->warm_dir = warm ? strdup(warm) : NULL;
	uint64_t max = opts->sz >= offsetof(struct rtl_session_opts, warm_cache_max) + sizeof(opts->warm_cache_max)
		       ? opts->warm_cache_max : 0;
	s->warm_max = max ? max : 2ull << 30;
	const char *const *meta = opts->sz >= offsetof(struct rtl_session_opts, meta) + sizeof(opts->meta)
				  ? opts->meta : NULL;
	size_t nmeta = 0;
	while (meta && meta[nmeta] && meta[nmeta + 1])
		nmeta += 2;
	s->meta = calloc(nmeta + 1, sizeof(char *));
	for (size_t i = 0; s->meta && i < nmeta; i++)
		if (!(s->meta[i] = strdup(meta[i]))) {
			rtl_session_destroy(s);
			return -ENOMEM;
		}
	if (!s->colls || !s->meta || (opts->output && !s->output) || (warm && !s->warm_dir)) {
		rtl_session_destroy(s);
		return -ENOMEM;
	}
	for (size_t i = 0; i < opts->ncollectors; i++) {
		s->colls[i] = opts->collectors[i];
		if (s->colls[i] == &collector_sample)
			s->sampling = true;
		else
			s->instruments = true;
		s->shimming |= s->colls[i] == &collector_shim;
	}
	if (s->sampling && s->shimming) {   /* both write the sampled stacks */
		rtl_session_destroy(s);
		return -RTL_ERR_BAD_OPTION;
	}
	s->ncolls = opts->ncollectors;
	/* only cover asks "ran or not" of the counters it shares with bbcount
	 * and fcount; RETICLE_COVER_KEEP=1 keeps its probes counting */
	const char *keep = getenv("RETICLE_COVER_KEEP");
	s->sweeps = s->ncolls == 1 && s->colls[0] == &collector_cover && !(keep && atoi(keep));
	if (opts->sz >= offsetof(struct rtl_session_opts, sample_stack) + sizeof(opts->sample_stack))
		s->sample_opts = (struct sampler_opts){ opts->sample_event, opts->sample_freq, opts->sample_stack,
							 false };
	if (opts->sz >= offsetof(struct rtl_session_opts, shim_period) + sizeof(opts->shim_period))
		s->shim_period = opts->shim_period;
	if (!s->shim_period)
		s->shim_period = 1000;
	bool bbv = false, memtrace = false;
	for (size_t i = 0; i < opts->ncollectors; i++) {
		bbv |= !strcmp(opts->collectors[i]->name, "bbv");
		memtrace |= !strcmp(opts->collectors[i]->name, "memtrace");
	}
	int aslr = opts->sz >= offsetof(struct rtl_session_opts, aslr) + sizeof(opts->aslr) ? opts->aslr
											   : RTL_ASLR_DEFAULT;
	s->no_aslr = aslr == RTL_ASLR_OFF || (aslr == RTL_ASLR_DEFAULT && (bbv || memtrace));
	if (bbv && opts->sz >= offsetof(struct rtl_session_opts, bbv_path) + sizeof(opts->bbv_path)) {
		s->bbv_interval = opts->bbv_interval ? opts->bbv_interval : 100000000;
		s->bbv_path = opts->bbv_path ? strdup(opts->bbv_path) : NULL;
	}
	if (opts->sz >= offsetof(struct rtl_session_opts, memtrace_trace) + sizeof(opts->memtrace_trace) &&
	    opts->memtrace_trace)
		s->trace_path = strdup(opts->memtrace_trace);
	/* RETICLE_MEMTRACE_CHAIN=0 as well (to compare) */
	const char *chain = getenv("RETICLE_MEMTRACE_CHAIN");
	s->mem_chain = !(opts->sz >= offsetof(struct rtl_session_opts, memtrace_no_chain) +
					 sizeof(opts->memtrace_no_chain) && opts->memtrace_no_chain) &&
		       !(chain && !strcmp(chain, "0"));
	if (opts->sz >= offsetof(struct rtl_session_opts, memtrace_off) + sizeof(opts->memtrace_off) &&
	    opts->memtrace_on && opts->memtrace_off && !s->bbv_interval) {
		s->sample_on = opts->memtrace_on;
		s->sample_off = opts->memtrace_off;
	}
	if (opts->sz >= offsetof(struct rtl_session_opts, dynamic_probes) + sizeof(opts->dynamic_probes))
		s->dynamic = opts->dynamic_probes;
	if (opts->sz >= offsetof(struct rtl_session_opts, memtrace_interval) + sizeof(opts->memtrace_interval) &&
	    opts->memtrace_npoints && opts->memtrace_interval && !s->bbv_interval && !s->sample_on) {
		s->points = malloc(opts->memtrace_npoints * sizeof(*s->points));
		s->weights = malloc(opts->memtrace_npoints * sizeof(*s->weights));
		if (!s->points || !s->weights) {
			rtl_session_destroy(s);
			return -ENOMEM;
		}
		memcpy(s->points, opts->memtrace_points, opts->memtrace_npoints * sizeof(*s->points));
		memcpy(s->weights, opts->memtrace_weights, opts->memtrace_npoints * sizeof(*s->weights));
		s->clusters = malloc(opts->memtrace_npoints * sizeof(*s->clusters));
		if (!s->clusters) {
			rtl_session_destroy(s);
			return -ENOMEM;
		}
		bool given = opts->sz >= offsetof(struct rtl_session_opts, memtrace_clusters) +
					       sizeof(opts->memtrace_clusters) && opts->memtrace_clusters;
		for (size_t i = 0; i < opts->memtrace_npoints; i++)
			s->clusters[i] = given ? opts->memtrace_clusters[i] : (uint32_t)i;
		s->npoints = opts->memtrace_npoints;
		s->point_interval = opts->memtrace_interval;
	}
	if (opts->sz >= offsetof(struct rtl_session_opts, memtrace_warmup) + sizeof(opts->memtrace_warmup))
		s->warmup = opts->memtrace_warmup;
	if (opts->sz >= offsetof(struct rtl_session_opts, memtrace_warmup_lower) + sizeof(opts->memtrace_warmup_lower))
		s->warmup_lower = opts->memtrace_warmup_lower;
	int cache_err = session_parse_caches(s, opts);
	if (!cache_err)
		cache_err = session_parse_span(s, opts);
	if (cache_err) {
		rtl_session_destroy(s);
		return cache_err;
	}
	if (!s->instruments) {   /* nothing is relocated: nothing to remember */
		free(s->warm_dir);
		s->warm_dir = NULL;
	}
	probe_set_init(&s->probes, s->colls, s->ncolls);
	if (s->sweeps)
		probe_set_sweeps(&s->probes);
	if (s->probes.timers && opts->sz >= offsetof(struct rtl_session_opts, time_all_calls) +
					     sizeof(opts->time_all_calls) && opts->time_all_calls)
		probe_set_time_all(&s->probes);
	/* fcount writes entry counts only: cc1's 271,000 block records (11 MB
	 * of fresh pages) cost a warm gcc -c 5 to 12% of its time */
	s->probes.structure = !(s->ncolls == 1 && s->colls[0] == &collector_fcount);
	s->t0 = os_now_ns();
	s->tsc0 = os_tsc();
	*out = s;
	return 0;
}

struct disposal {
	void (*fn)(void *arg);
	void *arg;
};

static void dispose(void *ctx, void *item)
{
	(void)ctx;
	struct disposal *d = item;
	d->fn(d->arg);
}

static void disposer_starts(void *ctx)
{
	struct rtl_session *s = ctx;
	if (s->cpus_known)
		os_cpus_set(0, &s->cpus);
}

/* cc1's 45,000 function states and its code cache took 3.5 ms to give
 * back, while gcc waited to be told of its end. */
void session_dispose(struct rtl_session *s, void (*fn)(void *arg), void *arg)
{
	enum { DEPTH = 64 };
	if (!s->disposer.items && rtl_fifo_init(&s->disposer, sizeof(struct disposal), DEPTH, dispose,
						 disposer_starts, s)) {
		fn(arg);
		return;
	}
	rtl_fifo_put(&s->disposer, &(struct disposal){ fn, arg });
}

void rtl_session_destroy(rtl_session *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->nprocs; i++) {
		size_t kept;
		if (!s->attached)   /* a process reticle attached to is not its to end */
			kill(s->procs[i]->pid, SIGKILL);
		else if (s->traced && attach_detach(s->procs[i], &kept))   /* attached, never run: held */
			rtl_warn("pid %d: not left quite as it was (see above)", (int)s->procs[i]->pid);
		proc_free(s->procs[i]);
	}
	sampler_stop(s->sampler, NULL);
	shim_stop(s->shim, NULL);
	/* the processes' leftovers given back, their caches written (they
	 * read the binaries, closed below) */
	rtl_fifo_destroy(&s->disposer);
	armed_saver_free(s->armed);   /* the files it has yet to write */
	bool bins_free = ahead_free(s->ahead);   /* it reads the binaries */
	patch_unw_templates_free(s->patch_env.unw_templates);
	for (size_t i = 0; i < s->nbins; i++) {
		if (bins_free)
			rtl_binary_close(s->bins[i].bin);
		free(s->bins[i].path);
	}
	for (size_t i = 0; i < s->nprofiles; i++)
		free(s->profiles[i]);
	free(s->profiles);
	free(s->bins);
	free(s->procs);
	free(s->early);
	free(s->stopped);
	free(s->deferred);
	free(s->caches);
	span_def_free(&s->span);
	free(s->bbv_path);
	free(s->trace_path);
	free(s->points);
	free(s->weights);
	free(s->clusters);
	rtl_profile_close(s->profile);   /* not committed: nothing is left */
	free(s->profile_path);
	free(s->main_command);
	free(s->output);
	debug_free(s);
	free(s->warm_dir);
	for (size_t i = 0; i < s->nwarm_aged; i++)
		free(s->warm_aged[i]);
	free(s->warm_aged);
	for (size_t i = 0; s->meta && s->meta[i]; i++)
		free(s->meta[i]);
	free(s->meta);
	placement_free(s->placement);
	if (bins_free) {   /* else a copying thread left to finish reads the plans: kept */
		free(s->colls);
		free(s);
	}
}

size_t rtl_session_profile_count(const rtl_session *s) { return s->nprofiles; }
pid_t rtl_session_pid(const rtl_session *s) { return s->main_pid; }
const char *rtl_session_profile_path(const rtl_session *s, size_t i) { return s->profiles[i]; }
void rtl_session_stats(const rtl_session *s, struct rtl_session_stats *st) { *st = s->stats; }

/* The session's profile, created when the first image ends: OUTPUT, or
 * reticle.PID.db for the first process's pid. */
static rtl_profile *session_profile(struct rtl_session *s)
{
	if (s->profile || s->profile_failed)
		return s->profile;
	char buf[64];
	snprintf(buf, sizeof(buf), "reticle.%d.db", (int)s->main_pid);
	s->profile_path = strdup(s->output ? s->output : buf);
	int err = s->profile_path ? rtl_profile_create(s->profile_path, &s->profile) : -ENOMEM;
	if (err) {
		rtl_log(0, "%s: profile not written: %s", s->profile_path ? s->profile_path : buf,
			rtl_strerror(err));
		s->profile_failed = true;
		s->stats.profiles_failed++;
	}
	return s->profile;
}

/* Writes the session's facts and commits its profile (at the end). */
static int __attribute__((format(printf, 4, 5))) meta_f(rtl_profile *prof, int err, const char *key,
							 const char *fmt, ...);

static void commit_profile(struct rtl_session *s)
{
	ahead_stop(s->ahead);   /* no process is left to call what it would copy */
	span_check_started(&s->span);
	if (s->npoints && s->points_reached < s->npoints)
		rtl_log(0, "--sample simpoint: the run began %zu of the %zu points (the last at interval %llu of "
			"%llu instructions): they come from another program, input or --interval, and the "
			"estimate misses the others", s->points_reached, s->npoints,
			(unsigned long long)s->points[s->npoints - 1], (unsigned long long)s->point_interval);
	if (!s->profile)
		return;
	int err = s->profile_failed ? -RTL_ERR_STORE
		  : session_write_meta(s, s->profile, s->main_pid, s->main_command, s->main_status);
	if (!err && s->sweeps)
		err = meta_f(s->profile, 0, "cover_probes_removed", "%llu", (unsigned long long)s->swept);
	if (!err && s->sweeps)
		err = meta_f(s->profile, 0, "cover_copies_given_up", "%llu", (unsigned long long)s->given_up);
	if (!err && s->attached && !s->main_ended)   /* none to tell: it runs on */
		err = rtl_profile_set_meta(s->profile, "exit_status", "none (running on, detached)");
	if (!err)
		err = rtl_profile_commit(s->profile);
	if (!err) {
		s->profiles = malloc(sizeof(*s->profiles));
		if (s->profiles && (s->profiles[0] = strdup(s->profile_path)))
			s->nprofiles = 1;
	} else {
		rtl_log(0, "%s: profile not written: %s", s->profile_path, rtl_strerror(err));
		s->stats.profiles_failed++;
	}
	rtl_profile_close(s->profile);
	s->profile = NULL;
}

/* Meta KEY of PROF as printf's FMT makes it, unless ERR: the first error. */
static int __attribute__((format(printf, 4, 5))) meta_f(rtl_profile *prof, int err, const char *key,
							 const char *fmt, ...)
{
	char buf[64];
	va_list ap;
	if (err)
		return err;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	return rtl_profile_set_meta(prof, key, buf);
}

static void meta_failed(struct rtl_session *s, int err, const char *what)
{
	if (err && !s->profile_failed) {
		rtl_log(0, "%s: cannot write %s: %s", s->profile_path, what, rtl_strerror(err));
		s->profile_failed = true;
	}
}

/* What the sampler did, for the report: its event, rate, and fidelity. */
static void write_sample_meta(struct rtl_session *s, const struct sampler_stats *st)
{
	rtl_profile *prof = session_profile(s);
	if (!prof)
		return;
	int err = meta_f(prof, 0, "sample_event", "%s", s->sample_opts.event ? s->sample_opts.event : "cpu-clock");
	err = meta_f(prof, err, "sample_freq", "%u", s->sample_opts.freq ? s->sample_opts.freq : 1000);
	err = meta_f(prof, err, "sample_count", "%llu", (unsigned long long)st->samples);
	err = meta_f(prof, err, "sample_lost", "%llu", (unsigned long long)st->lost);
	err = meta_f(prof, err, "sample_truncated", "%llu", (unsigned long long)st->truncated);
	err = meta_f(prof, err, "sample_period_mean", "%.0f", st->period_mean);
	err = meta_f(prof, err, "sample_period_cv", "%.4f", st->period_cv);
	err = meta_f(prof, err, "sample_kernel", "%d", st->kernel ? 1 : 0);
	meta_failed(s, err, "the sampler's facts");
}

/* What the observer did: its period, samples kept by DTE, their spread. */
static void write_shim_meta(struct rtl_session *s, const struct shim_stats *st)
{
	rtl_profile *prof = session_profile(s);
	if (!prof)
		return;
	double hz = timers_tsc_hz(s);
	int err = meta_f(prof, 0, "sample_event", "shim");
	err = meta_f(prof, err, "sample_freq", "%.0f", st->gap_mean > 0 ? hz / st->gap_mean : 0);
	err = meta_f(prof, err, "sample_count", "%llu", (unsigned long long)st->kept);
	err = meta_f(prof, err, "shim_period_cycles", "%u", st->period);
	err = meta_f(prof, err, "shim_reads", "%llu", (unsigned long long)st->taken);
	err = meta_f(prof, err, "shim_kept", "%llu", (unsigned long long)st->kept);
	err = meta_f(prof, err, "shim_read_cycles", "%.1f", st->read_cycles);
	err = meta_f(prof, err, "shim_gap_mean_cycles", "%.0f", st->gap_mean);
	err = meta_f(prof, err, "shim_gap_cv", "%.4f", st->gap_cv);
	err = meta_f(prof, err, "shim_gap_p10_p50_p90", "%.0f %.0f %.0f", st->gap_p10, st->gap_p50, st->gap_p90);
	err = meta_f(prof, err, "shim_stalls", "%llu", (unsigned long long)st->stalls);
	err = meta_f(prof, err, "shim_stalled_share", "%.4f", st->stalled_share);
	meta_failed(s, err, "the observer's facts");
}

static char *read_cmdline(pid_t pid)
{
	char path[64], buf[4096];
	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return NULL;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	for (size_t i = 0; i + 1 < n; i++)
		if (!buf[i])
			buf[i] = ' ';
	buf[n] = 0;
	return strdup(buf);
}

/* P joins the session's process tree: a child of image PARENT (0 for the
 * first), made by KIND ("launch", "fork" or "exec"). */
static int add_proc(struct rtl_session *s, struct proc *p, int64_t parent, const char *kind)
{
	struct proc **np = realloc(s->procs, (s->nprocs + 1) * sizeof(*np));
	if (!np)
		return -ENOMEM;
	s->procs = np;
	s->procs[s->nprocs++] = p;
	p->image = ++s->images;
	p->parent_image = parent;
	p->kind = kind;
	p->start_ns = os_now_ns() - s->t0;
	s->stats.processes = s->images;
	if (!p->command)
		p->command = read_cmdline(p->pid);
	return 0;
}

/* Process PID is in a group-stop by SIG, or (SIG 0) no longer. */
static void mark_stopped(struct rtl_session *s, pid_t pid, int sig)
{
	for (size_t i = 0; i < s->nstopped; i++)
		if (s->stopped[i].pid == pid) {
			if (sig)
				s->stopped[i].sig = sig;
			else
				s->stopped[i] = s->stopped[--s->nstopped];
			return;
		}
	struct stopped_proc *ns = sig ? realloc(s->stopped, (s->nstopped + 1) * sizeof(*ns)) : NULL;
	if (ns) {
		s->stopped = ns;
		s->stopped[s->nstopped++] = (struct stopped_proc){ pid, sig };
	}
}

static void follow_job_stop(struct rtl_session *s);

static int stop_signal_of(const struct rtl_session *s, pid_t pid)
{
	for (size_t i = 0; i < s->nstopped; i++)
		if (s->stopped[i].pid == pid)
			return s->stopped[i].sig;
	return 0;
}

struct text_snapshot;
static void snapshot_free(struct text_snapshot *t);

static void remove_proc(struct rtl_session *s, struct proc *p)
{
	snapshot_free(p->vfork_text);   /* a parent that ended in its vfork */
	mark_stopped(s, p->pid, 0);
	for (size_t i = 0; i < s->nprocs; i++)
		if (s->procs[i] == p) {
			s->procs[i] = s->procs[--s->nprocs];
			break;
		}
	proc_free(p);
}

/* Checks that PROGRAM can be run as execvp would run it: it exists, is
 * executable, and is an x86-64 ELF, a '#!' script (the kernel hands it to
 * its interpreter) or another file, which execvp hands to /bin/sh. */
static int check_program(struct rtl_session *s, const char *prog)
{
	char found[PATH_MAX];
	if (os_find_program(prog, found, sizeof(found)))
		return -ENOENT;
	struct stat st;
	if (stat(found, &st))
		return -errno;
	if (S_ISDIR(st.st_mode))
		return -EISDIR;
	if (access(found, X_OK))
		return -errno;
	FILE *f = fopen(found, "rb");
	char magic[4] = { 0 };
	if (!f)
		return -errno;
	size_t n = fread(magic, 1, sizeof(magic), f);
	fclose(f);
	if (n < 4 || memcmp(magic, "\177ELF", 4))
		return 0;   /* a script, with '#!' or for /bin/sh */
	rtl_binary *bin;
	int err = warm_open_binary(session_warm_dir(s), found, &bin);
	if (err)
		return err;
	/* kept under the name /proc/PID/exe will give, so it is read once */
	char *real = realpath(found, NULL);
	if (real && !stat(real, &st))
		cache_binary(s, real, &st, bin);   /* closes it if it cannot keep it */
	else
		rtl_binary_close(bin);
	free(real);
	return 0;
}

int rtl_session_launch(rtl_session *s, char *const argv[])
{
	pid_t pid;
	int err = check_program(s, argv[0]);
	if (err)
		return err;
	if (s->shimming && !s->shim) {   /* before the first thread gets its area */
		char why[512];
		if ((err = shim_start(s->shim_period, &s->shim, why, sizeof(why)))) {
			rtl_log(0, "shim: %s", why);
			return -RTL_ERR_BAD_OPTION;
		}
	}
	unsigned flags = (s->instruments && placement_possible() ? OS_LAUNCH_WATCH_AFFINITY : 0) |
			 (s->no_aslr ? OS_LAUNCH_NO_ASLR : 0);
	if ((err = os_launch(argv, &pid, flags)))
		return err;
	s->aslr_meta = os_randomizes(pid) ? "on" : "off";
	/* nothing relocated (sample alone): no traps to share a CPU with, no
	 * copies to make ahead */
	s->placement = s->instruments ? placement_new(pid) : NULL;
	/* copies made ahead need a CPU of their own: with one, they would compete */
	if (s->placement && placement_all_cpus(s->placement) && !s->ahead && !s->probes.memory && !s->dynamic)
		s->ahead = ahead_new(placement_all_cpus(s->placement), &s->probes);
	struct proc *p = proc_new(s, pid);
	if (!p) {
		kill(pid, SIGKILL);
		return -ENOMEM;
	}
	if ((err = add_proc(s, p, 0, "launch")) || (err = proc_setup_image(p, pid))) {
		kill(pid, SIGKILL);
		remove_proc(s, p);
		return err;
	}
	if (s->sampling) {
		char why[512];
		if ((err = sampler_start(&s->sample_opts, pid, &s->sampler, why, sizeof(why)))) {
			rtl_log(0, "sample: %s", why);
			kill(pid, SIGKILL);
			remove_proc(s, p);
			return err == -ENOENT ? -RTL_ERR_BAD_OPTION : -RTL_ERR_NO_SAMPLING;
		}
	}
	s->main_pid = pid;
	s->main_command = p->command ? strdup(p->command) : NULL;
	return 0;
}

static struct proc *proc_of(struct rtl_session *s, pid_t tid)
{
	for (size_t i = 0; i < s->nprocs; i++)
		if (proc_thread(s->procs[i], tid))
			return s->procs[i];
	return NULL;
}

struct proc *session_proc(struct rtl_session *s, pid_t tid)
{
	for (size_t i = 0; i < s->nprocs; i++)
		if (s->procs[i]->pid == tid)
			return s->procs[i];
	return proc_of(s, tid);
}

static void resume(struct proc *p, pid_t tid, int sig)
{
	struct thread *t = p ? proc_thread(p, tid) : NULL;
	if (t && t->pending_sig && !sig) {
		sig = t->pending_sig;
		t->pending_sig = 0;
	}
	if (p)
		p->resumes++;
	os_resume(tid, sig);
	if (p && p->s->detaching)
		os_interrupt(tid);   /* held at its next stop */
	/* a group-stop passed over during an inferior call: stop again */
	if (os_take_missed_stop(tid)) {
		rtl_debug("tid %d: group-stop met during an inferior call: interrupted", (int)tid);
		os_interrupt(tid);
	}
}

/* Waits for thread TID of P to stop after it was seized or interrupted
 * (*ST: the stop; OS_OTHER when the wait failed): how it is held. A signal
 * met there is delivered when it resumes; an event met on the way (a
 * trap, a clone) is deferred for the loop. */
static enum hold_how await_stop(struct rtl_session *s, struct proc *p, pid_t tid, struct os_stop *st)
{
	st->kind = OS_OTHER;
	if (os_wait_tid(tid, st) || st->kind == OS_EXITED || st->kind == OS_SIGNALED)
		return HOLD_GONE;
	struct thread *t = proc_thread(p, tid);
	switch (st->kind) {
	case OS_OTHER:
		return HOLD_STOPPED;
	case OS_SIGNAL:
		if (t)
			t->pending_sig = st->sig;
		return HOLD_STOPPED;
	case OS_GROUP_STOP:
		return HOLD_GROUP_STOP;
	default:
		session_defer_stop(s, st);
		return HOLD_IN_EVENT;
	}
}

bool session_can_hold(const struct proc *p)
{
	for (size_t i = 0; i < p->nthreads; i++)
		if (os_tgid(p->threads[i].tid) != p->pid)
			return false;
	return true;
}

size_t session_hold(struct rtl_session *s, struct proc *p, struct hold **out)
{
	struct hold *h = calloc(p->nthreads ? p->nthreads : 1, sizeof(*h));
	*out = h;
	if (!h)
		return 0;
	size_t n = p->nthreads;
	for (size_t i = 0; i < n; i++) {
		h[i].tid = p->threads[i].tid;
		if (session_stop_deferred(s, h[i].tid))
			h[i].how = HOLD_IN_EVENT;   /* stopped already, its event the loop's */
		else if (p->threads[i].exited || os_interrupt(h[i].tid))
			h[i].how = HOLD_GONE;   /* (a zombie main thread: a wait for it waited for ever) */
	}
	for (size_t i = 0; i < n; i++) {
		struct os_stop st;
		if (h[i].how != HOLD_STOPPED)
			continue;
		h[i].how = await_stop(s, p, h[i].tid, &st);
		if (st.kind == OS_EXITED || st.kind == OS_SIGNALED)
			session_defer_stop(s, &st);   /* its end is the loop's */
	}
	return n;
}

void session_unhold(struct rtl_session *s, struct proc *p, struct hold *h, size_t n, uint64_t ticks)
{
	(void)s;
	for (size_t i = 0; i < n; i++) {
		if (h[i].how == HOLD_GONE || !proc_thread(p, h[i].tid))
			continue;
		timers_pause(p, h[i].tid, ticks);
		if (h[i].how == HOLD_STOPPED)
			resume(p, h[i].tid, 0);
		else if (h[i].how == HOLD_GROUP_STOP)
			os_listen(h[i].tid);
	}
	free(h);
}

/* The first stop of a new task: it may have been seen already. */
static void await_new_task(struct rtl_session *s, pid_t tid, struct os_stop *st)
{
	for (size_t i = 0; i < s->nearly; i++)
		if (s->early[i].tid == tid) {
			*st = s->early[i].st;
			s->early[i] = s->early[--s->nearly];
			return;
		}
	for (size_t i = 0; i < s->ndeferred; i++)
		if (s->deferred[i].tid == tid) {
			*st = s->deferred[i];
			memmove(s->deferred + i, s->deferred + i + 1,
				(--s->ndeferred - i) * sizeof(*s->deferred));
			return;
		}
	/* a second at most: a task that has not stopped by then is followed
	 * as it runs, its first stop (if it comes) the loop's. CPython's test
	 * suite under cover once waited for ever here for a thread that ran
	 * (its first stop taken somewhere, not known where) */
	if (os_wait_tid_until(tid, st, os_now_ns() + 1000000000ull) == -ETIMEDOUT) {
		rtl_warn("tid %d: no first stop within a second: followed as it runs", (int)tid);
		*st = (struct os_stop){ .tid = tid, .kind = OS_OTHER };
	}
}

static void finish_proc(struct rtl_session *s, struct proc *p)
{
	uint64_t began = os_now_ns();
	s->swept += p->sweep_removed;
	s->given_up += p->copies_given_up;
	rtl_profile *prof = session_profile(s);
	int err = prof ? proc_write_profile(p, prof, os_now_ns() - s->t0) : 0;
	rtl_debug("pid %d: written into the profile", (int)p->pid);
	warm_save(p);
	rtl_debug("pid %d: warm-start cache written", (int)p->pid);
	if (err && !s->profile_failed) {
		/* rows are missing: the commit would fail; say why now */
		rtl_log(0, "pid %d: cannot write into the profile: %s", (int)p->pid, rtl_strerror(err));
		s->profile_failed = true;
	}
	/* the grace the processes left running get after the program's end
	 * (time_to_release) is theirs: the time reticle spent here, the
	 * program's own rows among them, held them in traps and is not
	 * counted (a calltime profile of a million call paths took 3.5 s,
	 * and a child ending just after its parent was let go mid-exit) */
	if (s->main_ended)
		s->main_end_ns += os_now_ns() - began;
}

static void on_new_task(struct rtl_session *s, struct proc *p, struct os_stop *st)
{
	pid_t child = (pid_t)st->msg;
	uint64_t flags = 0;
	if (child <= 0) {
		/* no child's id: its parent was killed at the event (its group
		 * exiting), and the child, if any, with it. A wait for "pid 0"
		 * takes any task's stop (the main thread's, which then waited
		 * for ever: run.torture.exit_race hung once in a few hundred) */
		rtl_debug("tid %d: a clone event without a child", (int)st->tid);
		resume(p, st->tid, 0);
		return;
	}
	/* a parent that could not be read (its group exiting) made a thread
	 * of its own group, or a process of its own */
	if (st->left)
		flags = st->clone_flags;
	else if (os_clone_flags(st->tid, &flags) && os_tgid(child) == p->pid)
		flags = CLONE_VM | CLONE_THREAD;
	bool shares_memory = st->kind == OS_EVENT_VFORK || (flags & CLONE_VM);
	struct os_stop first = { .tid = child, .kind = OS_OTHER };

	await_new_task(s, child, &first);
	placement_new_task(s->placement, child, shares_memory);
	/* a process (fork, vfork, posix_spawn's clone), not a thread: the
	 * child starts where its parent stands after the edge */
	if (st->kind != OS_EVENT_CLONE || !(flags & CLONE_THREAD))
		span_event(p, SPAN_FORK, 0);
	if (shares_memory) {
		proc_add_thread(p, child);
		timers_new_thread(p, child);
		/* a vfork child runs alone while its parent waits */
		if (st->kind != OS_EVENT_VFORK)
			patch_go_multithreaded(p);
	} else {
		struct proc *c = proc_fork(p, child);
		if (c && timers_fork(p, c, st->tid))
			rtl_warn("pid %d: no thread areas: its functions are not timed", (int)child);
		if (c && memtrace_fork(p, c))
			rtl_warn("pid %d: its memory accesses are not traced", (int)child);
		if (!c || add_proc(s, c, p->image, "fork")) {
			rtl_log(0, "cannot follow child %d; it runs without reticle", (int)child);
			if (c)
				remove_proc(s, c);
			os_detach(child);
			resume(p, st->tid, 0);
			return;
		}
	}
	/* a thread born into a stopped process starts in its group-stop */
	if (first.kind == OS_GROUP_STOP)
		os_listen(child);
	else
		resume(NULL, child, 0);
	if (s->detaching)
		os_interrupt(child);   /* held too before the session ends */
	resume(p, st->tid, 0);
}

/* exec replaces the image: the old one's profile is written, and the new
 * one is set up like a launch. A vfork child that execs leaves its parent's
 * address space and becomes a process of its own. */
static void on_exec(struct rtl_session *s, struct proc *p, struct os_stop *st)
{
	pid_t pid = st->tid;
	int64_t parent = p->image;
	unsigned exec_gen = p->exec_gen;
	const char *kind = pid == p->pid ? "exec" : "fork";   /* a vfork child's exec */
	int span_state = p->span.state;
	if (pid == p->pid) {
		p->status = -1;
		finish_proc(s, p);
		remove_proc(s, p);
	} else {
		proc_remove_thread(p, pid);
		proc_remove_thread(p, (pid_t)st->msg);
	}
	struct proc *q = proc_new(s, pid);
	if (q) {   /* the sampler counts the execs of a pid likewise */
		q->exec_gen = pid == p->pid ? exec_gen + 1 : 1;
		span_proc_start(q, span_state, true);
		/* attached: the new program is left as it was too (its patches
		 * logged, proc_setup_image gives it original returns) */
		q->attached = s->attached;
	}
	struct os_stop other = { .kind = OS_OTHER };
	int sig = 0, err = !q ? -ENOMEM : add_proc(s, q, parent, kind);
	if (!err && !(err = os_leave_syscall(pid, q->mem, &sig, &other)))
		err = proc_setup_image(q, pid);
	if (other.kind != OS_OTHER) {
		/* killed meanwhile: its exit is the loop's to see */
		session_defer_stop(s, &other);
		return;
	}
	if (err)
		rtl_log(0, "pid %d: the new program runs without instrumentation (%s)", (int)pid,
			rtl_strerror(err));
	resume(q, pid, sig);
}

/* A clone with CLONE_UNTRACED was made a followed one (RC 1): its child
 * runs the copies, whose traps would kill it untraced. LeakSanitizer
 * makes its tracer thread so, which then cannot attach to the program's
 * threads (reticle traces them): it fails as under gdb or strace. */
static void untraced_clone(struct rtl_session *s, pid_t tid, int rc)
{
	if (rc < 0)
		rtl_warn("tid %d: a clone with CLONE_UNTRACED could not be made a followed one (%s): "
			 "its child may die of a trap", (int)tid, rtl_strerror(rc));
	else if (rc > 0 && !s->untraced_said) {
		s->untraced_said = true;
		rtl_warn("tid %d asked for a thread hidden from tracers (CLONE_UNTRACED): reticle follows it; "
			 "a leak checker that attaches to its process (LeakSanitizer) fails as under gdb or strace "
			 "(ASAN_OPTIONS=detect_leaks=0 turns it off)", (int)tid);
	}
}

static void on_process_exit(struct rtl_session *s, struct proc *p, struct os_stop *st)
{
	placement_task_exit(s->placement, st->tid);
	if (st->tid != p->pid) {
		proc_remove_thread(p, st->tid);
		return;
	}
	p->status = st->kind == OS_EXITED ? st->code : 128 + st->sig;
	if (p->pid == s->main_pid) {
		s->main_status = p->status;
		s->main_ended = true;
		s->main_end_ns = os_now_ns();
		if (st->kind == OS_SIGNALED)
			rtl_log(0, "%s (pid %d) killed by signal %d (%s)", p->command ? p->command : "target",
				(int)p->pid, st->sig, strsignal(st->sig));
		/* reticle's int3s are served, never delivered: a SIGTRAP that
		 * kills is the program's own, or one it raised on reading
		 * reticle's entry patches as code (valgrind's JIT translates
		 * functions of its tool's own text for the guest) */
		if (st->kind == OS_SIGNALED && st->sig == SIGTRAP)
			rtl_warn("if it translates or checks its own machine code (valgrind, an emulator), "
				 "it met reticle's entry patches there: --modules can leave that module out");
	}
	finish_proc(s, p);
	remove_proc(s, p);
	if (s->nstopped)
		follow_job_stop(s);   /* the last one running is gone */
}

/* A fault (or an abort) about to be delivered to the target: says where it
 * happened (an original function or a copy) and which return addresses are
 * on the stack; RETICLE_DEBUG_DETACH_ON_FAULT leaves the target for a
 * debugger. */
static void report_fault(struct proc *p, const struct os_stop *st)
{
	char where[512];
	uint64_t pc = 0, sp, words[16];
	os_get_pc(st->tid, &pc);
	proc_describe_pc(p, pc, where, sizeof(where));
	rtl_info("pid %d: %s at %s", (int)st->tid, strsignal(st->sig), where);
	if (st->fault) {   /* what it touched, in the process's map */
		char line[512];
		if (os_map_line(p->pid, st->addr, line, sizeof(line)))
			snprintf(line, sizeof(line), "not mapped");
		rtl_info("pid %d: the address touched: %#llx (%s)", (int)st->tid, (unsigned long long)st->addr, line);
	}
	if (getenv("RETICLE_DEBUG_FAULT_BYTES")) {   /* the copy's code before the fault, for objdump */
		const char *names[OS_NREGS];
		uint64_t v[OS_NREGS];
		if (!os_get_named_regs(st->tid, names, v))
			for (size_t i = 0; i < OS_NREGS; i += 4)
				rtl_info("  %s %#llx  %s %#llx  %s %#llx  %s %#llx", names[i], (unsigned long long)v[i],
					 names[i + 1], (unsigned long long)v[i + 1], names[i + 2],
					 (unsigned long long)v[i + 2], names[i + 3], (unsigned long long)v[i + 3]);
		uint8_t code[160];
		char hex[3 * sizeof(code) + 1];
		if (!os_mem_read(p->mem, pc - 128, code, sizeof(code))) {
			for (size_t i = 0; i < sizeof(code); i++)
				sprintf(hex + 3 * i, "%02x ", code[i]);
			rtl_info("code from %#llx: %s", (unsigned long long)(pc - 128), hex);
		}
		if (!os_get_sp(st->tid, &sp) && !os_mem_read(p->mem, sp - 64, code, 160)) {
			for (size_t i = 0; i < 20; i++)
				sprintf(hex + 17 * i, "%016llx ", (unsigned long long)((uint64_t *)code)[i]);
			rtl_info("stack from sp-64 (%#llx): %s", (unsigned long long)sp, hex);
		}
	}
	if (!os_get_sp(st->tid, &sp) && !os_mem_read(p->mem, sp, words, sizeof(words)))
		for (int i = 0; i < 16; i++) {
			proc_describe_pc(p, words[i], where, sizeof(where));
			if (!strstr(where, "outside"))
				rtl_info("  [sp+%d] %#llx: %s", i * 8, (unsigned long long)words[i], where);
		}
	if (getenv("RETICLE_DEBUG_DETACH_ON_FAULT") && st->sig != SIGFPE) {
		rtl_log(0, "pid %d left stopped for a debugger (gdb -p %d)", (int)st->tid, (int)st->tid);
		os_detach_stopped(st->tid);
		for (;;)
			pause();
	}
}

/* After reticle stopped along with its target and was continued: a target
 * process still stopped is continued too, unless a SIGCONT is already on
 * its way (the shell's `fg` sends one to the whole process group). */
static void continue_stopped(struct rtl_session *s)
{
	for (size_t i = 0; i < s->nstopped; i++)
		if (!os_sigcont_pending(s->stopped[i].pid))
			kill(s->stopped[i].pid, SIGCONT);
}

/* reticle stops with its job as a shell sees a job stop: once every target
 * process in reticle's process group is stopped (a pipeline's processes
 * each run their own SIGTSTP handler first), by a signal reticle was sent
 * too (the terminal's Ctrl-Z reaches the whole group). Its shell then
 * takes the terminal back; `fg` or `bg` continues reticle and the job. */
static void follow_job_stop(struct rtl_session *s)
{
	pid_t pgrp = getpgrp();
	int sig = 0;
	for (size_t i = 0; i < s->nprocs; i++) {
		pid_t pid = s->procs[i]->pid;
		if (getpgid(pid) != pgrp)
			continue;   /* a job of its own, e.g. under a shell target */
		int by = stop_signal_of(s, pid);
		if (!by)
			return;     /* still running */
		if (!sig && os_jobctl_shared(by))
			sig = by;
	}
	if (!sig)
		return;
	rtl_debug("the job stopped by signal %d: reticle stops too", sig);
	os_jobctl_stop_self(sig);
	rtl_debug("reticle continued");
	continue_stopped(s);
}

/* A thread entered a group-stop: it is left in it (PTRACE_LISTEN) until a
 * SIGCONT wakes it, without reticle. */
static void on_group_stop(struct rtl_session *s, struct proc *p, const struct os_stop *st)
{
	os_listen(st->tid);
	mark_stopped(s, p->pid, st->sig);
	follow_job_stop(s);
}

/* The bytes of a process's executable segments, kept aside. */
struct text_snapshot {
	size_t n, cap;
	struct { uint64_t at; size_t len; uint8_t *bytes; } *v;
};

static void snapshot_free(struct text_snapshot *t)
{
	for (size_t i = 0; t && i < t->n; i++)
		free(t->v[i].bytes);
	if (t)
		free(t->v);
	free(t);
}

/* Writes T back into P's text, and frees it. */
static void snapshot_restore(struct proc *p, struct text_snapshot *t)
{
	for (size_t i = 0; i < t->n; i++)
		os_mem_write(p->mem, t->v[i].at, t->v[i].bytes, t->v[i].len);
	snapshot_free(t);
}

/* P's executable segments as their files have them (reticle's entry
 * jumps, int3s and return-point patches gone), the process's bytes kept
 * in KEEP first when KEEP is not NULL. */
static void text_to_files(struct proc *p, struct text_snapshot *keep)
{
	for (size_t i = 0; i < p->nmods; i++) {
		struct module *mm = &p->mods[i];
		if (mm->unloaded || rtl_binary_has_textrel(mm->bin))
			continue;
		for (size_t k = 0; k < rtl_binary_segment_count(mm->bin); k++) {
			const rtl_segment *sg = rtl_binary_segment(mm->bin, k);
			uint8_t *buf = (sg->flags & PF_X) && sg->filesz ? malloc(sg->filesz) : NULL;
			uint8_t *old = buf && keep ? malloc(sg->filesz) : NULL;
			if (old && !os_mem_read(p->mem, sg->vaddr + mm->bias, old, sg->filesz) &&
			    !rtl_grow(&keep->v, &keep->cap, keep->n + 1, sizeof(*keep->v))) {
				keep->v[keep->n].at = sg->vaddr + mm->bias;
				keep->v[keep->n].len = sg->filesz;
				keep->v[keep->n++].bytes = old;
				old = NULL;
			}
			free(old);
			if (buf && !rtl_binary_read(mm->bin, sg->vaddr, buf, sg->filesz))
				os_mem_write(p->mem, sg->vaddr + mm->bias, buf, sg->filesz);
			free(buf);
		}
	}
}

/* A process calls ptrace(): PTRACE_TRACEME (a debugger's or a tracer's
 * child asking to be traced by its parent) fails while reticle traces it,
 * so reticle lets it go: its text back to the file's (entries, return
 * points; the copies stay mapped for the frames that return into them),
 * its threads detached at the call, which then succeeds; it runs on
 * uninstrumented (gdb under reticle debugs its program natively). Any
 * other request runs as it is: the original first byte for one step. */
static bool ptrace_hook(struct rtl_session *s, struct proc *p, pid_t tid, uint64_t pc)
{
	struct func_state *fs = proc_entry_at(p, pc - 1, NULL, NULL);
	const char *names[OS_NREGS];
	uint64_t regs[OS_NREGS];
	if (!fs || fs->status != FS_HOOK || os_get_named_regs(tid, names, regs))
		return false;
	os_set_pc(tid, pc - 1);
	if (regs[5] /* rdi: the request */ != 0 /* PTRACE_TRACEME */) {
		int sig;
		proc_step_over(p, tid, pc - 1, fs->orig, &sig);
		return true;
	}
	if (os_tgid(tid) != p->pid) {
		/* a vfork child, in its parent's memory until it execs: the text
		 * goes back to the files' while it runs, the parent's
		 * instrumented text back when the parent goes on (VFORK_DONE) */
		struct text_snapshot *snap = p->vfork_text ? NULL : calloc(1, sizeof(*snap));
		if (snap) {
			text_to_files(p, snap);
			p->vfork_text = snap;
		}
		rtl_warn("pid %d asks to be traced by its parent (PTRACE_TRACEME): it runs on without reticle",
			 (int)tid);
		os_detach(tid);
		proc_remove_thread(p, tid);
		return true;
	}
	text_to_files(p, NULL);
	rtl_warn("pid %d asks to be traced by its parent (PTRACE_TRACEME): it runs on without reticle",
		 (int)p->pid);
	p->status = RTL_PROCESS_RUNNING;
	finish_proc(s, p);
	for (size_t i = 0; i < p->nthreads; i++)
		os_detach(p->threads[i].tid);
	remove_proc(s, p);
	return true;
}

static void dispatch(struct rtl_session *s, struct os_stop *st)
{
	struct proc *p = proc_of(s, st->tid);
	if (!p) {
		if (st->kind != OS_EXITED && st->kind != OS_SIGNALED) {
			void *ne = realloc(s->early, (s->nearly + 1) * sizeof(*s->early));
			if (ne) {
				s->early = ne;
				s->early[s->nearly++] = (struct early_stop){ st->tid, *st };
			}
		}
		/* A thread born as its process exits (Go starts threads to the
		 * end) may never have its clone event reported: the cloning
		 * thread dies first. Held at its exit, it would keep the
		 * process, and reticle's wait, from ever ending (run.go.static
		 * hung so). It goes on now; a clone event that does come finds
		 * this stop and resumes it once more, harmlessly. */
		if (st->kind == OS_EVENT_EXIT)
			os_resume(st->tid, 0);
		return;
	}
	if (s->detaching && (st->kind == OS_OTHER || st->kind == OS_GROUP_STOP)) {
		struct thread *t = proc_thread(p, st->tid);
		if (os_sigtrap_pending(st->tid)) {
			/* it met an int3 just as the interrupt came: the kernel
			 * reports the interrupt before that SIGTRAP, which must not
			 * reach the program once detached; served first, then held */
			os_resume(st->tid, 0);
			return;
		}
		t->held = true;   /* its interrupt: it stays stopped until detached */
		t->group_stopped = st->kind == OS_GROUP_STOP;
		return;
	}
	uint64_t pc = st->pc;
	if (st->kind == OS_BREAKPOINT && !pc)
		os_get_pc(st->tid, &pc);
	rtl_debug("tid %d: stop kind %d sig %d pc %#llx", (int)st->tid, st->kind, st->sig,
		  (unsigned long long)pc);
	switch (st->kind) {
	case OS_BREAKPOINT: {
		if (s->debugger && debug_trap(s, p, st->tid, pc)) {
			resume(p, st->tid, 0);
			break;
		}
		if (p->patch && p->patch->ncall_traps) {
			uint64_t trapped = os_tsc();
			if (call_trap(p, st->tid, pc)) {   /* the collectors' time is not the program's */
				timers_pause(p, st->tid, os_tsc() - trapped);
				resume(p, st->tid, 0);
				break;
			}
		}
		if (ptrace_hook(s, p, st->tid, pc)) {
			if (proc_of(s, st->tid))   /* not let go */
				resume(p, st->tid, 0);
			break;
		}
		uint64_t trapped = os_tsc();
		placement_trap(s->placement, st->tid, p->nthreads > 1);
		if ((p->mt && (memtrace_trap(p, st->tid) || memtrace_window_trap(p, st->tid))) ||
		    (p->bbv && bbv_trap(p, st->tid, pc))) {
			timers_pause(p, st->tid, os_tsc() - trapped);
			resume(p, st->tid, 0);
		} else if (engine_breakpoint(p, st->tid, pc)) {
			sigtrap_repair(p, st->tid);
			unwind_flush(p, st->tid);
			/* reticle's work is not the program's time */
			timers_pause(p, st->tid, os_tsc() - trapped);
			resume(p, st->tid, 0);
		} else {
			/* the program's own int3 (SBCL's error traps, a debugger's):
			 * its handler is remembered as for a SIGTRAP sent to it */
			sigtrap_remember(p, st->tid);
			resume(p, st->tid, SIGTRAP);
		}
		break;
	}
	case OS_GROUP_STOP:
		on_group_stop(s, p, st);
		break;
	case OS_OTHER:
		/* PTRACE_EVENT_STOP with SIGTRAP: e.g. the end of a group-stop */
		mark_stopped(s, p->pid, 0);
		resume(p, st->tid, 0);
		break;
	case OS_SIGNAL:
		if (st->sig == SIGCONT)
			mark_stopped(s, p->pid, 0);
		if (st->sig == SIGTRAP)
			sigtrap_remember(p, st->tid);
		else
			sigtrap_remember_once(p, st->tid);
		if (st->sig == SIGSEGV || st->sig == SIGBUS || st->sig == SIGILL || st->sig == SIGFPE || st->sig == SIGABRT) {
			if (s->debugger)
				debug_fault(s, p, st->tid, st->sig);
			report_fault(p, st);
		}
		if (p->mt && st->sig != SIGTRAP)
			memtrace_signal(p, st->tid);
		span_event(p, SPAN_SIGNAL, st->sig);
		if (st->sig != SIGTRAP)
			sigpc_to_original(p, st);
		resume(p, st->tid, st->sig);
		break;
	case OS_EVENT_CLONE: case OS_EVENT_FORK: case OS_EVENT_VFORK:
		on_new_task(s, p, st);
		break;
	case OS_EVENT_EXEC:
		on_exec(s, p, st);
		break;
	case OS_EVENT_SECCOMP:
		if (os_seccomp_syscall(st->tid) == SYS_sched_getaffinity)   /* it sees its CPUs, not the pin */
			placement_affinity_read(s->placement);
		else
			untraced_clone(s, st->tid, os_clone_traced(st->tid));   /* a clone (os_launch's filter) */
		resume(p, st->tid, 0);
		break;
	case OS_EVENT_VFORK_DONE:
		if (p->vfork_text) {   /* the parent's instrumented text again */
			snapshot_restore(p, p->vfork_text);
			p->vfork_text = NULL;
		}
		resume(p, st->tid, 0);
		break;
	case OS_EXITED: case OS_SIGNALED:
		on_process_exit(s, p, st);
		break;
	case OS_EVENT_EXIT: {
		/* the last look at the process's memory */
		struct thread *t = proc_thread(p, st->tid);
		if (t)
			t->exited = true;
		if (p->nthreads <= 1)
			p->exiting = true;   /* nothing to sweep for any more */
		lazy_bind_plt(p);
		timers_check_gs(p, st->tid);
		timers_thread_exit(p, st->tid);
		resume(p, st->tid, 0);
		break;
	}
	default:
		resume(p, st->tid, 0);
		break;
	}
}

/* Whether the int3 just before PC is one reticle put at a function entry
 * of TID's process (see os_wait). */
static bool our_breakpoint(void *ctx, pid_t tid, uint64_t pc)
{
	struct proc *p = proc_of(ctx, tid);
	return p && lazy_is_entry_trap(p, pc - 1);
}

/* The first stop of thread TID just seized, in P. */
static void first_stop(struct rtl_session *s, struct proc *p, pid_t tid)
{
	struct os_stop st;
	struct thread *t = proc_thread(p, tid);
	switch (await_stop(s, p, tid, &st)) {
	case HOLD_GONE:
		proc_remove_thread(p, tid);
		break;
	case HOLD_GROUP_STOP:
		t->group_stopped = true;   /* left in it (os_listen) */
		break;
	case HOLD_IN_EVENT:
		t->held = true;   /* its event the loop's, which resumes it */
		break;
	default:
		break;
	}
}

/* Stops every thread of PID (seized one by one; those created meanwhile
 * are found on the next look at its task list) into P. */
static int seize_all(struct rtl_session *s, struct proc *p, pid_t pid)
{
	for (bool fresh = true; fresh;) {
		pid_t *tids;
		size_t n;
		int err = os_list_threads(pid, &tids, &n);
		if (err)
			return err;
		fresh = false;
		for (size_t i = 0; i < n && !err; i++) {
			if (proc_thread(p, tids[i]))
				continue;
			int e = os_attach_thread(tids[i]);
			if (e == -ESRCH)
				continue;   /* ended meanwhile */
			if (e == -EPERM && tids[i] != pid)
				continue;   /* auto-attached already, as the clone of a seized thread */
			if (e) {
				err = e;
				break;
			}
			if ((err = proc_add_thread(p, tids[i])))
				break;
			first_stop(s, p, tids[i]);
			fresh = true;
		}
		free(tids);
		if (err)
			return err;
	}
	return 0;
}

/* "TracerPid:" and "State:" of /proc/PID/status: -EBUSY when another
 * tracer (a debugger) has it, -RTL_ERR_STOPPED when it is stopped. */
static int check_attachable(pid_t pid)
{
	char path[64], line[256];
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return errno == ENOENT ? -ESRCH : -errno;
	int err = 0;
	long tracer = 0;
	char state = 0;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "TracerPid: %ld", &tracer) == 1 && tracer)
			err = -EBUSY;
		sscanf(line, "State: %c", &state);
	}
	fclose(f);
	if (!err && (state == 'T' || state == 't'))
		err = -RTL_ERR_TARGET_STOPPED;
	if (!err && (state == 'Z' || state == 'X'))
		err = -ESRCH;
	return err;
}

/* TID of P, stopped in a clone or fork event (deferred for the loop),
 * finishes that system call and stops right after it: inferior calls can
 * go through it then. The event stays deferred, with the clone flags read
 * now (they are read from the call's registers). Not a vfork's (its
 * parent would wait for the child, stopped). */
static int leave_event(struct rtl_session *s, struct proc *p, pid_t tid)
{
	struct os_stop *ev = NULL;
	for (size_t i = 0; i < s->ndeferred && !ev; i++)
		if (s->deferred[i].tid == tid &&
		    (s->deferred[i].kind == OS_EVENT_CLONE || s->deferred[i].kind == OS_EVENT_FORK))
			ev = &s->deferred[i];
	if (!ev || ev->left)
		return ev ? 0 : -EINVAL;
	enum os_stop_kind kind = ev->kind;   /* ev may move with the list */
	uint64_t flags;
	int sig, err = os_clone_flags(tid, &flags);
	if (err)
		return err;
	struct os_stop other;
	if ((err = os_leave_syscall(tid, p->mem, &sig, &other))) {
		if (other.kind != OS_OTHER)
			session_defer_stop(s, &other);   /* its end is the loop's */
		return err;
	}
	for (size_t i = 0; i < s->ndeferred; i++)   /* (the list may have moved) */
		if (s->deferred[i].tid == tid && s->deferred[i].kind == kind) {
			s->deferred[i].left = true;
			s->deferred[i].clone_flags = flags;
		}
	struct thread *t = proc_thread(p, tid);
	if (sig && t && !t->pending_sig)
		t->pending_sig = sig;
	rtl_debug("tid %d: out of its clone's system call, for reticle's own calls", (int)tid);
	return 0;
}

/* The thread of P that reticle's system calls in the target go through
 * while it sets up: MAIN unless its stop is inside an event (a clone of
 * a server making a thread per request): an inferior call from there
 * first gets the event's own end (the clone's child id read as the
 * call's result, a descriptor that is none), and the thread, its registers
 * put back, then takes itself for the child. Any thread stopped plainly
 * will do; when none is, MAIN leaves its clone's system call first. */
static pid_t plain_stopped(struct rtl_session *s, struct proc *p, pid_t main)
{
	const struct thread *t = proc_thread(p, main);
	if (t && !t->group_stopped && !session_in_event(s, main))
		return main;
	for (size_t i = 0; i < p->nthreads; i++)
		if (!p->threads[i].group_stopped && !session_in_event(s, p->threads[i].tid))
			return p->threads[i].tid;
	for (size_t i = 0; i < p->nthreads; i++)
		if (!p->threads[i].group_stopped && !leave_event(s, p, p->threads[i].tid))
			return p->threads[i].tid;
	return main;
}

/* Attaches to running PID with ptrace to instrument it. */
static int attach_traced(struct rtl_session *s, pid_t pid)
{
	if (s->probes.memory || s->bbv_interval || s->shimming || s->sampling)
		return -RTL_ERR_UNSUPPORTED;
	int err = check_attachable(pid);
	if (err)
		return err;
	struct proc *p = calloc(1, sizeof(*p));   /* its threads, until it can be opened */
	if (!p)
		return -ENOMEM;
	p->s = s;
	p->pid = pid;
	p->mem = -1;
	p->shm.fd = -1;
	p->areas.fd = -1;
	err = seize_all(s, p, pid);
	struct proc *q = err ? NULL : proc_new(s, pid);
	if (!err && !q)
		err = -ENOMEM;
	if (q) {   /* the seized threads, their stops' facts */
		free(q->threads);
		q->threads = p->threads;
		q->nthreads = p->nthreads;
		p->threads = NULL;
		p->nthreads = 0;
	}
	if (!err && !(err = add_proc(s, q, 0, "attach")) && (err = attach_setup_image(q, plain_stopped(s, q, pid)))) {
		size_t kept;
		attach_detach(q, &kept);   /* what was armed is undone */
		remove_proc(s, q);
		q = NULL;
	} else if (err) {
		struct proc *h = q ? q : p;
		for (size_t i = 0; i < h->nthreads; i++)
			os_detach_sig(h->threads[i].tid, h->threads[i].pending_sig);
		if (q)
			remove_proc(s, q);
		q = NULL;
	}
	free(p->threads);
	free(p);
	if (err)
		return err;
	/* the deferred events of seize_all belong to threads of Q */
	for (size_t i = 0; i < q->nthreads; i++)
		q->threads[i].held = false;
	s->traced = true;
	return 0;
}

int rtl_session_attach(rtl_session *s, pid_t pid, double duration)
{
	if (s->nprocs)
		return -RTL_ERR_UNSUPPORTED;
	if (kill(pid, 0) && errno == ESRCH)
		return -ESRCH;
	if (s->instruments) {
		int err = attach_traced(s, pid);
		if (err)
			return err;
		s->attached = true;
		s->duration = duration;
		s->main_pid = pid;
		s->main_command = s->procs[0]->command ? strdup(s->procs[0]->command) : NULL;
		return 0;
	}
	if (s->shimming || !s->sampling)
		return -RTL_ERR_UNSUPPORTED;
	struct proc *p = proc_new(s, pid);
	if (!p)
		return -EPERM;
	int err = add_proc(s, p, 0, "attach");
	char why[512];
	s->sample_opts.attach = true;
	if (!err && (err = sampler_start(&s->sample_opts, pid, &s->sampler, why, sizeof(why)))) {
		rtl_log(0, "sample: %s", why);
		err = err == -ENOENT ? -RTL_ERR_BAD_OPTION : -RTL_ERR_NO_SAMPLING;
	}
	if (err) {
		remove_proc(s, p);
		return err;
	}
	s->attached = true;
	s->duration = duration;
	s->main_pid = pid;
	s->main_command = p->command ? strdup(p->command) : NULL;
	return 0;
}

void rtl_session_stop(rtl_session *s)
{
	s->stop = 1;
}

/* The sampled images no process of the engine's wrote: what an attached
 * process forked or exec'd, a vfork child before its exec (the engine
 * counts it in its parent). Each is an image of its own under PARENT (0:
 * none known), made of the sampler's view alone, so that no sample taken
 * is missing from the profile. */
static void write_unfollowed(struct rtl_session *s, int64_t parent)
{
	struct sample_tree t;
	pid_t pid;
	unsigned gen;
	rtl_profile *prof = s->sampler ? session_profile(s) : NULL;
	while (prof && sampler_take_any(s->sampler, &pid, &gen, &t)) {
		struct proc c = { .s = s, .pid = pid, .exec_gen = gen, .image = ++s->images, .mem = -1 };
		rtl_profile_process row = { c.image, parent, pid, gen ? "exec" : "fork", "(sampled only)", 0,
					    0, os_now_ns() - s->t0, 0, 0 };
		int err = rtl_profile_add_process(prof, &row);
		if (!err)
			err = samples_write_tree(&c, prof, &t);
		else
			sample_tree_free(&t);
		free(c.memo);
		if (err && !s->profile_failed) {
			rtl_log(0, "pid %d: cannot write into the profile: %s", (int)pid, rtl_strerror(err));
			s->profile_failed = true;
		}
	}
	s->stats.processes = s->images;
}

/* Every process image written: what no process of the engine's wrote
 * (under PARENT), then the sampler stopped and its facts. */
static void finish_sampling(struct rtl_session *s, int64_t parent)
{
	struct sampler_stats st;
	write_unfollowed(s, parent);
	sampler_stop(s->sampler, &st);
	s->sampler = NULL;
	write_sample_meta(s, &st);
}

/* An attached run: the sampler's reader does the work; this waits. */
static int run_attached(struct rtl_session *s, int *status)
{
	uint64_t end = s->duration > 0 ? os_now_ns() + (uint64_t)(s->duration * 1e9) : UINT64_MAX;
	struct proc *p = s->procs[0];
	while (!s->stop && os_now_ns() < end && !os_task_ended(p->pid))
		usleep(20000);
	finish_proc(s, p);
	int64_t parent = p->image;
	remove_proc(s, p);
	finish_sampling(s, parent);
	commit_profile(s);
	*status = 0;   /* not our child: its status is its parent's to know */
	return 0;
}

/* One event of the loop, dispatched: -EINTR to go on (also when a signal
 * of reticle's woke the wait, with INTR), 0 when no thread is left, or an
 * error. */
static int step(struct rtl_session *s, bool intr)
{
	struct os_stop st;
	int err = take_deferred(s, &st) ? 0 : intr ? os_wait_intr(&st, our_breakpoint, s)
						   : os_wait(&st, our_breakpoint, s);
	if (err == -ECHILD)
		return 0;
	if (err)
		return err;
	dispatch(s, &st);
	return -EINTR;
}

/* Detaching: every thread is interrupted, and held once its interrupt
 * stop comes (dispatch). */
static void begin_detach(struct rtl_session *s)
{
	s->detaching = true;
	rtl_debug("detaching: every thread interrupted");
	for (size_t i = 0; i < s->nprocs; i++)
		for (size_t k = 0; k < s->procs[i]->nthreads; k++)
			if (!s->procs[i]->threads[k].held)
				os_interrupt(s->procs[i]->threads[k].tid);
}

static bool all_held(const struct rtl_session *s)
{
	for (size_t i = 0; i < s->nprocs; i++)
		for (size_t k = 0; k < s->procs[i]->nthreads; k++) {
			const struct thread *t = &s->procs[i]->threads[k];
			/* (a thread gone without its end reported counts as held: a
			 * process killed while reticle set up its new program after
			 * an exec stayed listed, and the session waited for ever
			 * once CPython's test_subprocess had ended) */
			if (!t->held && !t->exited && os_tgid(t->tid) >= 0)
				return false;
		}
	return true;
}

/* A traced attached run: the event loop of a launch until the deadline or
 * rtl_session_stop (a SIGALRM every 50 ms wakes its wait to look), then
 * every process is written into the profile and left as it was. */
static int run_traced(struct rtl_session *s, int *status)
{
	struct sigaction old_sa;
	struct itimerval old_tick;
	start_ticks(&old_sa, &old_tick, s->sweeps ? 20000 : 50000);
	uint64_t last_sweep = os_now_ns(), end = s->duration > 0 ? os_now_ns() + (uint64_t)(s->duration * 1e9) : UINT64_MAX;
	struct proc *first = s->procs[0];
	if (s->debugger)   /* every thread is held: the debugger's first look */
		debug_start(s, first, first->pid);
	for (size_t k = 0; k < first->nthreads; k++) {
		struct thread *t = &first->threads[k];
		if (session_stop_deferred(s, t->tid))
			continue;   /* its event first (the loop resumes it) */
		if (t->group_stopped)
			os_listen(t->tid);
		else
			resume(first, t->tid, 0);
		t->group_stopped = false;
	}
	/* what ran in earlier attaches, placed now that the threads run on:
	 * only functions no thread has entered yet are left to relocate */
	warm_attach(first);
	int err = 0;
	while (s->nprocs) {
		sweep_all(s, &last_sweep);
		if (!s->detaching && (s->stop || os_now_ns() >= end))
			begin_detach(s);
		if ((s->detaching && all_held(s)) || (err = step(s, true)) != -EINTR)
			break;
	}
	err = err == -EINTR ? 0 : err;
	stop_ticks(&old_sa, &old_tick);
	while (s->nprocs) {
		struct proc *p = s->procs[0];
		size_t kept;
		p->status = RTL_PROCESS_RUNNING;
		attach_leave(p);  /* threads out of the copies first: snippets finished */
		finish_proc(s, p);
		if (attach_detach(p, &kept))
			rtl_warn("pid %d: not left quite as it was (see above)", (int)p->pid);
		else
			rtl_debug("pid %d: detached", (int)p->pid);
		remove_proc(s, p);
	}
	if (session_warm_dir(s))
		warm_prune(session_warm_dir(s), session_warm_max(s));
	commit_profile(s);
	*status = 0;   /* not our child: its status is its parent's to know */
	return err;
}

/* Processes still running when the program has ended: a daemon it
 * started (gpg's gpg-agent, in a session of its own) or a background job
 * (sh -c 'cmd &'). The program itself has returned; waiting for them would
 * hold the user's prompt, for ever for a daemon. A daemon is let go at
 * once, any process after GRACE_NS (a job about to end ends in it; the
 * time reticle spends writing profiles meanwhile is not counted). True
 * when every thread of them is to be interrupted and held: they are let
 * go (release_all) once held. Processes that cannot be let go (their
 * copies trap into reticle) are waited for, as before, with a word. */
enum { GRACE_NS = 1000000000 };

static bool time_to_release(struct rtl_session *s)
{
	if (!s->main_ended || !s->nprocs || s->releasing || s->detaching || s->debugger)
		return false;
	bool daemons = true;
	pid_t own = getsid(0);
	for (size_t i = 0; i < s->nprocs; i++) {
		const char *why;
		if (!release_possible(s->procs[i], &why)) {
			/* not for the processes that end in the grace, as the
			 * others do (multiprocessing's forkserver and resource
			 * tracker, reading their pipe's end under memtrace) */
			bool daemon = getsid(s->procs[i]->pid) != own;
			if (!daemon && os_now_ns() - s->main_end_ns < GRACE_NS)
				return false;
			if (!s->said_waiting)
				rtl_warn("waiting for %zu process%s the program left running (pid %d: %s): %s",
					 s->nprocs, s->nprocs == 1 ? "" : "es", (int)s->procs[i]->pid,
					 s->procs[i]->command ? s->procs[i]->command : "?", why);
			s->said_waiting = true;
			return false;
		}
		daemons &= getsid(s->procs[i]->pid) != own;
	}
	return daemons || os_now_ns() - s->main_end_ns >= GRACE_NS;
}

/* Every remaining process, held: written into the profile as it is now
 * (running on), and let go. */
static void release_all(struct rtl_session *s)
{
	while (s->nprocs) {
		struct proc *p = s->procs[0];
		rtl_warn("pid %d (%s) still runs after the program ended: let go, its profile holds what it "
			 "ran until now", (int)p->pid, p->command ? p->command : "?");
		p->status = RTL_PROCESS_RUNNING;
		p->runs_on = true;
		finish_proc(s, p);
		if (release_launched(p))
			rtl_warn("pid %d: not let go cleanly (see above)", (int)p->pid);
		remove_proc(s, p);
	}
}

int rtl_session_run(rtl_session *s, int *status)
{
	if (!s->nprocs)
		return -ESRCH;
	if (s->traced)
		return run_traced(s, status);
	if (s->attached)
		return run_attached(s, status);
	os_jobctl_begin();
	struct sigaction old_sa;
	struct itimerval old_tick;
	uint64_t last_sweep = os_now_ns();
	bool ticking = s->sweeps || s->tick_fn || span_def_has_time(&s->span);
	if (ticking)
		start_ticks(&old_sa, &old_tick, s->sweeps ? 20000 : 50000);
	if (s->debugger && s->nprocs)
		debug_start(s, s->procs[0], s->main_pid);
	os_resume(s->main_pid, 0);
	int err = 0;
	while (s->nprocs) {
		sweep_all(s, &last_sweep);
		/* the program has ended: its waits wake to look at what is left */
		if (s->main_ended && !ticking) {
			start_ticks(&old_sa, &old_tick, 100000);
			ticking = true;
		}
		if (time_to_release(s)) {
			s->releasing = true;
			begin_detach(s);
		}
		if (s->releasing && all_held(s)) {
			release_all(s);
			break;
		}
		if ((err = step(s, ticking)) != -EINTR)
			break;
	}
	err = err == -EINTR ? 0 : err;
	if (ticking)
		stop_ticks(&old_sa, &old_tick);
	os_jobctl_end();
	/* once a session, not per process: a run of hundreds of processes
	 * read the cache directory hundreds of times */
	if (session_warm_dir(s))
		warm_prune(session_warm_dir(s), session_warm_max(s));
	placement_free(s->placement);   /* every CPU back to reticle */
	s->placement = NULL;
	if (s->sampler)
		finish_sampling(s, 0);
	if (s->shim) {
		struct shim_stats st;
		shim_stop(s->shim, &st);
		s->shim = NULL;
		write_shim_meta(s, &st);
	}
	commit_profile(s);
	*status = s->main_status;
	return err;
}
