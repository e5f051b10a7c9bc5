/* Tracer and tracee on one CPU while a program starts.
 *
 * Each first call of a function is a round trip between the program and
 * reticle through ptrace. When the two run on different CPUs, each leg is a
 * cross-CPU wakeup, and the first ptrace request after a stop waits for the
 * stopped thread to leave its CPU (wait_task_inactive): on a virtual
 * machine the round trip then costs 5 to 10 times more than when the two
 * take turns on one CPU (BENCHMARKS.md). rr runs its tracees on one CPU for
 * the same reason. So the task that is taking a burst of traps and
 * reticle's event loop share one CPU; after a quiet spell (no trap for
 * QUIET) a watchdog thread gives both their CPUs back. Only one task at a
 * time, and not a thread of a multithreaded process: two tasks trapping at
 * once (parallel children) are left where the scheduler puts them, since
 * pinning would serialise them. A forked child does not keep its parent's
 * pin; a task that sets its own affinity is left alone. RETICLE_PIN=0
 * turns it off.
 *
 * The program must not see the pin: a runtime sizes its thread pools by
 * the CPUs sched_getaffinity gives (Go's GOMAXPROCS, OpenMP, the JVM,
 * nproc), once, early, in the very burst that is pinned. So a launched
 * program stops before each sched_getaffinity (a seccomp filter's trace,
 * os_launch), and the pin is undone before the call goes on. */
#include <pthread.h>
#include <stdlib.h>
#include <time.h>
#include "engine/engine.h"
#include "os/linux/os.h"
#include "util/thread.h"

enum { QUIET_NS = 30 * 1000 * 1000, BURST_NS = 2 * 1000 * 1000, WATCH_NS = 10 * 1000 * 1000 };

struct placement {
	pthread_mutex_t lock;
	pthread_cond_t wake;
	pthread_t watchdog;
	bool watching, stop;
	bool active;              /* several CPUs: pinning allowed */
	struct os_cpus all;       /* reticle's CPUs at launch, the program's too */
	int cpu;
	pid_t pinned;             /* the task sharing reticle's CPU, 0 if none */
	pid_t self;               /* reticle's event loop */
	pid_t last_tid;           /* the task of the last trap */
	uint64_t last_trap;       /* its time, monotonic ns */
	uint64_t contended;       /* last time two tasks trapped within BURST */
};

static uint64_t now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* With the lock held, from the event loop while TASK is stopped. */
static void pin(struct placement *pl, pid_t task)
{
	struct os_cpus cur, one;
	/* where the scheduler put the program: reticle moves there, so that
	 * sessions side by side keep to different CPUs */
	int cpu = os_task_cpu(task);
	if (cpu < 0)
		cpu = os_cpu_current();
	if (cpu < 0 || os_cpus_get(task, &cur) || !os_cpus_equal(&cur, &pl->all))
		return;   /* the program chose its own CPUs */
	os_cpus_one(&one, cpu);
	if (os_cpus_set(task, &one))
		return;
	os_cpus_set(pl->self, &one);
	pl->cpu = cpu;
	pl->pinned = task;
}

/* TID back on all CPUs, if it still has the pin (it may have set its own). */
static void release(struct placement *pl, pid_t tid)
{
	struct os_cpus cur, one;
	os_cpus_one(&one, pl->cpu);
	if (tid > 0 && !os_cpus_get(tid, &cur) && os_cpus_equal(&cur, &one))
		os_cpus_set(tid, &pl->all);
}

/* With the lock held. */
static void unpin(struct placement *pl)
{
	release(pl, pl->pinned);
	os_cpus_set(pl->self, &pl->all);
	pl->pinned = 0;
}

static void *watch(void *arg)
{
	struct placement *pl = arg;
	pthread_mutex_lock(&pl->lock);
	while (!pl->stop) {
		uint64_t at = now_ns() + WATCH_NS;
		struct timespec ts = { (time_t)(at / 1000000000u), (long)(at % 1000000000u) };
		pthread_cond_timedwait(&pl->wake, &pl->lock, &ts);
		if (pl->pinned && now_ns() - pl->last_trap > QUIET_NS)
			unpin(pl);
	}
	pthread_mutex_unlock(&pl->lock);
	return NULL;
}

/* RETICLE_PIN=0, or fewer than two CPUs: no pinning. */
static bool pin_allowed(struct os_cpus *all)
{
	const char *env = getenv("RETICLE_PIN");
	return !(env && *env == '0') && !os_cpus_get(0, all) && os_cpus_count(all) >= 2;
}

bool placement_possible(void)
{
	struct os_cpus all;
	return pin_allowed(&all);
}

void placement_affinity_read(struct placement *pl)
{
	if (!pl || !pl->active)
		return;
	pthread_mutex_lock(&pl->lock);
	if (pl->pinned)
		unpin(pl);
	pthread_mutex_unlock(&pl->lock);
}

struct placement *placement_new(pid_t task)
{
	struct placement *pl = calloc(1, sizeof(*pl));
	if (!pl)
		return NULL;
	pthread_mutex_init(&pl->lock, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&pl->wake, &ca);
	pthread_condattr_destroy(&ca);
	pl->self = os_gettid();
	if (!pin_allowed(&pl->all))
		return pl;
	pl->watching = !rtl_thread_start(&pl->watchdog, watch, pl);
	if (!pl->watching)
		return pl;
	pl->active = true;
	/* a launch starts with a burst: the loader's and libc's first calls */
	pthread_mutex_lock(&pl->lock);
	pin(pl, task);
	pl->last_tid = task;
	pl->last_trap = now_ns();
	pthread_mutex_unlock(&pl->lock);
	return pl;
}

void placement_trap(struct placement *pl, pid_t tid, bool threaded)
{
	if (!pl || !pl->active)
		return;
	pthread_mutex_lock(&pl->lock);
	uint64_t now = now_ns();
	bool burst = now - pl->last_trap < BURST_NS;
	if (burst && pl->last_tid != tid)
		pl->contended = now;   /* two tasks trapping at once */
	/* another task trapping (at once, or after the pinned one went
	 * quiet), or the pinned one now has threads */
	if (pl->pinned && (pl->pinned != tid || threaded))
		unpin(pl);
	if (!pl->pinned && !threaded && burst && pl->last_tid == tid &&
	    now - pl->contended > QUIET_NS)
		pin(pl, tid);
	pl->last_tid = tid;
	pl->last_trap = now;
	pthread_mutex_unlock(&pl->lock);
}

void placement_new_task(struct placement *pl, pid_t child, bool thread)
{
	if (!pl || !pl->active)
		return;
	pthread_mutex_lock(&pl->lock);
	release(pl, child);   /* a child does not keep its parent's pin */
	if (thread && pl->pinned)
		unpin(pl);         /* threads may run side by side */
	pthread_mutex_unlock(&pl->lock);
}

void placement_task_exit(struct placement *pl, pid_t tid)
{
	if (!pl || !pl->active)
		return;
	pthread_mutex_lock(&pl->lock);
	if (pl->pinned == tid) {   /* its tid may be reused: forget it */
		pl->pinned = 0;
		os_cpus_set(pl->self, &pl->all);
	}
	pthread_mutex_unlock(&pl->lock);
}

const struct os_cpus *placement_all_cpus(const struct placement *pl)
{
	return pl && os_cpus_count(&pl->all) > 1 ? &pl->all : NULL;
}

void placement_free(struct placement *pl)
{
	if (!pl)
		return;
	if (pl->watching) {
		pthread_mutex_lock(&pl->lock);
		pl->stop = true;
		if (pl->pinned)
			unpin(pl);
		pthread_cond_signal(&pl->wake);
		pthread_mutex_unlock(&pl->lock);
		pthread_join(pl->watchdog, NULL);
	}
	pthread_cond_destroy(&pl->wake);
	pthread_mutex_destroy(&pl->lock);
	free(pl);
}
