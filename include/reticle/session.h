/* A measurement session: launch a program under reticle, follow every thread
 * and process it creates, and write one profile per process image.
 *
 * rtl_session_create() returns a session owned by the caller, freed with
 * rtl_session_destroy(). Options are passed in a struct whose first field is
 * its size, so it can grow without breaking callers. */
#ifndef RETICLE_SESSION_H
#define RETICLE_SESSION_H

#include <reticle/api.h>

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <reticle/collector.h>

typedef struct rtl_session rtl_session;

struct rtl_session_opts {
	size_t sz;               /* sizeof(struct rtl_session_opts) */
	/* Profile of the first process. Later images (fork children, exec)
	 * get OUTPUT with ".PID" (and ".N" after an exec) before the suffix. */
	const char *output;
	const struct rtl_collector *const *collectors;
	size_t ncollectors;
	/* Directory of the warm-start cache (created when missing), or NULL for
	 * none. For each binary it lists the functions that ran in recent runs:
	 * they are relocated in one batch when the program reaches its entry
	 * point rather than one trap each, and the list is updated at the end. */
	const char *warm_cache;
	/* Bytes the warm-start cache may hold (its least recently used files
	 * go beyond), 0 for the default, 2 GiB. */
	uint64_t warm_cache_max;
	/* More of the profile's meta: key, value, key, value, ..., NULL (or
	 * NULL for none); reticle run adds mpi_rank and mpi_size there. */
	const char *const *meta;
	/* The sample collector's event (NULL: cpu-clock), samples per second
	 * of a running thread (0: 1000) and bytes of user stack copied per
	 * sample for unwinding (0: 16384). */
	const char *sample_event;
	unsigned sample_freq;
	unsigned sample_stack;
	/* The shim collector's mean period between the observer's reads of a
	 * thread's signal, in TSC cycles (0: 1000). */
	unsigned shim_period;
	/* The memtrace collector's cache configurations (reticle/cachesim.h
	 * specs, as `reticle cachesim --cache` takes them); none: cachegrind's
	 * model with a 32 KiB L1 and an 8 MiB last level. */
	const char *const *caches;
	size_t ncaches;
	/* The bbv collector's interval in instructions (0: 100,000,000) and
	 * the file of the first process's basic-block vectors (exp-bbv's
	 * format; other processes' get .PID after it); NULL: none written. */
	uint64_t bbv_interval;
	const char *bbv_path;
	/* The memtrace collector writes the first process's data accesses to
	 * this file as a Dinero din trace instead of simulating caches (other
	 * processes' get .PID after it); NULL: simulated. */
	const char *memtrace_trace;
	/* The memtrace collector traces MEMTRACE_ON instructions of each
	 * thread out of every MEMTRACE_ON + MEMTRACE_OFF (periodic sampling;
	 * 0: everything). Not with the bbv collector (one countdown). */
	uint64_t memtrace_on, memtrace_off;
	/* SimPoint-guided sampling: the memtrace collector traces only
	 * intervals MEMTRACE_POINTS (0-based, ascending) of MEMTRACE_INTERVAL
	 * instructions each, and writes each configuration's miss ratio
	 * estimated from them, weighted by MEMTRACE_WEIGHTS (reticle
	 * simpoint's output). Not with periodic sampling or bbv. */
	const uint64_t *memtrace_points;
	const double *memtrace_weights;
	size_t memtrace_npoints;
	uint64_t memtrace_interval;
	/* Copies may be made again while the program runs, with other probes
	 * (rtl_session_reinstrument): each starts with a 5-byte nop that
	 * becomes the jump to its successor, and none is made ahead. */
	bool dynamic_probes;
	/* The run's context (docs/contexts.md). Scope: only the functions of
	 * the modules that match a glob of MODULES (the file's path or name)
	 * and whose names match a glob of FUNCTIONS are measured (NULL-ended
	 * lists; NULL: all). Span: counts are taken from edge FROM to edge TO
	 * of each process, each "SECONDS" after the session began ("5s",
	 * "300ms"; TO "+SECONDS": after FROM), "call:NAME" (the first call of
	 * function NAME: exact in the calling thread), "fork", "exec",
	 * "dlopen", "signal" or "signal:N" (the process's first such event);
	 * NULL: the process's start, its end. A span counts only: not with
	 * collectors that time or trace (sample, shim, calltime, memtrace,
	 * bbv, plug-ins with timers): -RTL_ERR_BAD_OPTION, as for a bad edge. */
	const char *const *modules;
	const char *const *functions;
	const char *from, *to;
	/* The memtrace collector gives every access a record of its own
	 * (its static analysis off: accesses chained within blocks share
	 * the record before them; the stream is the same). */
	bool memtrace_no_chain;
	/* Address randomization of a launched program and what it starts:
	 * RTL_ASLR_DEFAULT turns it off with the memtrace or bbv collector
	 * (their results follow addresses, which the cache sets and the
	 * program's own pointer hashing see, and instruction counts, which
	 * a later sampled run must meet: runs repeat), and leaves it as the
	 * system has it otherwise. Meta 'aslr': "on" or "off". */
	int aslr;
	/* The SimPoint cluster of each of MEMTRACE_POINTS (NULL: each point
	 * its own). Points of one cluster share its weight (MEMTRACE_WEIGHTS
	 * holds each one's part) and are its stratum in the estimate's
	 * confidence interval, which a cluster of one point leaves unknown. */
	const uint32_t *memtrace_clusters;
	/* With sampling (periodic or SimPoint), the last MEMTRACE_WARMUP
	 * instructions before each traced window are traced too, into the
	 * caches but not into the estimate, so that a window starts with
	 * caches as they would be (0: none; each starts with what the last
	 * window left). */
	uint64_t memtrace_warmup;
	/* And the MEMTRACE_WARMUP_LOWER instructions before those warm the
	 * levels below the first only (rtl_cachesim_warm_lower): a long
	 * warm-up for large caches at about one first level's cost. */
	uint64_t memtrace_warmup_lower;
	/* The function timers of leaves (functions that call nothing) time
	 * every call. Without, once a thread has made 256 calls of a leaf,
	 * about one call in 16 of it is timed and the others' time is
	 * estimated, per calling context, from the timed ones (calls stay
	 * exact): two clock reads of about 9 ns each are most of a timer's
	 * cost, and leaves make most calls (70% of sqlite3's). */
	bool time_all_calls;
};
enum { RTL_ASLR_DEFAULT, RTL_ASLR_ON, RTL_ASLR_OFF };

RTL_API int rtl_session_create(const struct rtl_session_opts *opts, rtl_session **out);
RTL_API void rtl_session_destroy(rtl_session *s);

/* Starts ARGV (argv[0] is searched in PATH) stopped at its first instruction.
 * Returns 0, -ENOENT, -EACCES, -RTL_ERR_NOT_ELF, -RTL_ERR_WRONG_ARCH, ... */
RTL_API int rtl_session_launch(rtl_session *s, char *const argv[]);

/* Measures the running process PID (every thread, and what they create)
 * instead of launching one. With the sample collector alone: no ptrace,
 * the process is not stopped, and the profile holds that image's samples
 * (not those of programs it execs meanwhile). With counting collectors
 * (fcount, bbcount, edges, callgraph, loops, cover, plug-ins without
 * timers): its threads are stopped and it is instrumented as a launched
 * one; when the session ends it is left as it was (patches undone, code
 * cache unmapped: docs/engine.md). rtl_session_run then measures for
 * DURATION seconds (0: until the process ends or rtl_session_stop; an
 * instrumented run takes SIGALRM, every 50 ms, for its own while it runs).
 * Returns 0, -ESRCH, -EPERM (not allowed to trace it), -EBUSY (traced
 * already), -RTL_ERR_TARGET_STOPPED, -RTL_ERR_UNSUPPORTED (a collector
 * that cannot attach), -RTL_ERR_BAD_OPTION, -RTL_ERR_NO_SAMPLING. */
RTL_API int rtl_session_attach(rtl_session *s, pid_t pid, double duration);

/* Runs the target to its end and writes the profile. *STATUS is the first
 * process's exit status as a shell reports it (128+signal when killed; 0
 * for an attached process). */
RTL_API int rtl_session_run(rtl_session *s, int *status);
/* Ends an attached run at the next check (20 ms): async-signal-safe. */
RTL_API void rtl_session_stop(rtl_session *s);

/* A live look at the counters while the session runs (reticle top): one
 * per relocated function of every process being measured. */
struct rtl_live_count {
	pid_t pid;
	const char *module;       /* valid until the callback returns */
	const char *name;         /* NULL when it has none */
	uint64_t addr;            /* link-time entry */
	uint64_t calls;           /* its entry counter (fcount, cover), 0 without */
	uint64_t instrs;          /* its blocks' counts times their instructions (bbcount), 0 without */
	/* seconds in it so far, summed over threads, its frames still open
	 * counted up to now (calltime): itself (exclusive) and with its callees
	 * (inclusive, counted once under recursion); 0 without */
	double self, total;
};
/* Every relocated function now, in *OUT (malloc'd, for free()): how many. */
RTL_API size_t rtl_session_live(rtl_session *s, struct rtl_live_count **out);
/* The snippets with ids of their own (reticle/probe.h) while the session
 * runs: one per counter (summed over a function's points of one kind),
 * per value of a RTL_PRIM_COUNT_BY key, and per numbered timer per thread
 * (live threads: inclusive time of the frames closed so far). */
struct rtl_live_point {
	pid_t pid;
	const char *module;       /* the function's (NULL for a timer); valid until the callback returns */
	const char *name;
	uint8_t kind, op;         /* enum rtl_point_kind, enum rtl_primitive (RTL_PRIM_TIMER_START: a timer) */
	uint32_t id;
	int64_t key;              /* RTL_PRIM_COUNT_BY's value; a timer's thread */
	uint64_t value;           /* count; a timer's calls */
	double seconds;           /* a timer's inclusive time */
};
/* Every such point now, in *OUT (malloc'd, for free()): how many. */
RTL_API size_t rtl_session_live_points(rtl_session *s, struct rtl_live_point **out);
/* Makes the copy of every relocated function for which WANT(module path,
 * name, link-time address, CTX) is true again, planned by the collectors
 * as they stand now (their probes added or removed), in every process of
 * the session; calls already in an old copy finish there, what the old
 * copies counted stays in the profile. A numbered timer the new copy
 * starts at its entry unconditionally (and whose latency nothing reads)
 * starts now on the frames of the function open on every thread's stack:
 * the threads are held while their stacks are walked, and those frames
 * return through the new copy. Needs dynamic_probes. Call it from an
 * on_tick callback. Returns how many copies were made, or -err. */
RTL_API long rtl_session_reinstrument(rtl_session *s,
				      bool (*want)(const char *module, const char *name, uint64_t addr, void *ctx),
				      void *ctx);
/* The TSC's ticks per second, as measured since the session began (the
 * unit of RTL_OPND_LATENCY). */
RTL_API double rtl_session_tsc_hz(rtl_session *s);
/* FN(S, CTX) is called from rtl_session_run about every SECONDS (0.05 at
 * least) while the program runs; the run takes SIGALRM for its own then. */
RTL_API int rtl_session_on_tick(rtl_session *s, double seconds, void (*fn)(rtl_session *s, void *ctx),
				void *ctx);
/* The tick also comes as soon as FD (a listening socket, a pipe: the
 * session takes its SIGIO) has something to read, not at the next
 * SECONDS: a request from another terminal is served at once. */
RTL_API int rtl_session_tick_on_fd(rtl_session *s, int fd);

/* The first process's pid, once launched (0 before). */
RTL_API pid_t rtl_session_pid(const rtl_session *s);

/* The profile written (one for the whole session, every process image in
 * it), once the session has ended: count 1, or 0 when none was written. */
RTL_API size_t rtl_session_profile_count(const rtl_session *s);
RTL_API const char *rtl_session_profile_path(const rtl_session *s, size_t i);

/* With memtrace --sample simpoint: how many points no process image of
 * the run reached (points of another program, input or interval size;
 * the estimate then misses them), once the session has ended. */
RTL_API size_t rtl_session_points_unreached(const rtl_session *s);

/* Engine statistics, for --stats and the benchmarks. */
struct rtl_session_stats {
	size_t functions_instrumented, functions_skipped, traps, modules;
	size_t functions_warm;   /* of functions_instrumented: from the warm-start list */
	double instrument_seconds;
	/* of functions_instrumented: copies saved by an earlier run and placed
	 * anew, not emitted; with RETICLE_VERIFY_COPIES=1, how many of them
	 * differed from a fresh copy (a bug in reticle) */
	size_t copies_restored, copies_differing;
	size_t profiles_failed;  /* 1 when the profile could not be written */
	size_t processes;        /* process images measured (the profile's tree) */
};
RTL_API void rtl_session_stats(const rtl_session *s, struct rtl_session_stats *st);

#endif
