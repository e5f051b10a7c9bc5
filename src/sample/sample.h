/* The sampler: statistical samples of every thread and process of a
 * session (perf_event, os/linux/perf_ring.h), each with its call stack
 * unwound from a copy of the user stack by the modules' call-frame
 * information (.eh_frame, .debug_frame; frame pointers where there is
 * none), code-cache addresses mapped back to the original instructions.
 *
 * A reader thread drains the ring while the program runs and folds each
 * stack into a tree of program counters per process image (a pid between
 * two execs: its generation counts the execs). The engine tells it where
 * each copy lies (sampler_copy_placed) and takes an image's tree when the
 * image ends (sampler_take): the process is stopped then, so every sample
 * it took is in the ring already. Internal to libreticle. */
#ifndef RETICLE_SAMPLE_H
#define RETICLE_SAMPLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct sampler;

struct sampler_opts {
	const char *event;        /* default cpu-clock */
	unsigned freq;            /* default 1000 */
	unsigned stack_bytes;     /* default 16384 */
	bool attach;              /* a running process: all its threads */
};

/* A node of an image's tree: the root of a thread (PC is its TID), or a
 * frame: the original run-time address of the sampled instruction (the
 * tree's leaves) or of a call (the return address less one). */
#define SAMPLE_PC_KERNEL UINT64_MAX   /* a sample taken in the kernel */
struct sample_node {
	uint32_t parent;          /* index; UINT32_MAX at a root */
	int tid;
	uint64_t pc;
	uint64_t self;            /* samples whose stack ends here */
	uint64_t self_weight;     /* their periods (ns for the clock events) */
};

/* A file mapped executable in the image, as the ring told (the engine
 * may not know it: with sample alone it does not follow the loader). */
struct sample_map {
	uint64_t start, end, bias;
	char *path;
};

struct sample_tree {
	struct sample_node *n;    /* parents before children */
	size_t count;
	struct sample_map *maps;  /* by start */
	size_t nmaps;
};

struct sampler_stats {
	uint64_t samples, lost, truncated;
	double period_mean, period_cv;   /* of the gaps between a thread's samples, ns */
	bool kernel;              /* kernel samples taken too */
};

/* Starts sampling PID (stopped at its first instruction) and everything
 * it creates. 0, or -err with WHY for the user. */
int sampler_start(const struct sampler_opts *o, pid_t pid, struct sampler **out, char *why, size_t len);
/* A copy of the function at original run-time ORIG_ENTRY placed at
 * [COPY, COPY+LEN) in image (PID, GEN); FROM/TO (N) its instruction map
 * and ROWS (NROWS) where its snippets move %rsp, copied. */
struct x86_sp_row;
void sampler_copy_placed(struct sampler *s, pid_t pid, unsigned gen, uint64_t copy, uint32_t len,
			 uint64_t orig_entry, const uint64_t *from, const uint64_t *to, uint32_t n,
			 const struct x86_sp_row *rows, uint32_t nrows);
/* The tree of image (PID, GEN), once every sample in the ring is read; the
 * image is forgotten. Free with sample_tree_free. */
int sampler_take(struct sampler *s, pid_t pid, unsigned gen, struct sample_tree *out);
void sample_tree_free(struct sample_tree *t);
/* Some image not taken yet that has samples (an attached process's
 * children): 1 and its tree, *PID and *GEN, or 0 when none is left. */
int sampler_take_any(struct sampler *s, pid_t *pid, unsigned *gen, struct sample_tree *out);
/* Stops the reader; STATS (or NULL) gets the totals. */
void sampler_stop(struct sampler *s, struct sampler_stats *stats);

/* ---- SHIM's observer (shim.c) ---- */
struct shim;
struct shim_count {
	pid_t tid;
	uint64_t value;           /* the signal: a copy's entry, 0 for none yet */
	uint64_t samples, cycles; /* kept samples, and the TSC cycles they stand for */
};
/* A run of a thread's own signal (reticle/signal.h), from the first read
 * that saw VALUE; a thread's runs in order. */
struct shim_run {
	pid_t tid;
	uint64_t tsc, value;
};
struct shim_counts {
	struct shim_count *c;
	size_t n, cap;
	struct shim_run *runs;
	size_t nruns, capruns;
	uint64_t runs_dropped;    /* changes beyond a thread's first 2^20 */
};
struct shim_stats {
	unsigned period;          /* nominal, cycles */
	uint64_t taken, kept;     /* reads, and reads DTE kept */
	double read_cycles;       /* mean cost of one read (two TSC reads around it) */
	double gap_mean, gap_cv;  /* a thread's cycles between kept samples */
	double gap_p10, gap_p50, gap_p90;   /* their distribution (32-cycle buckets) */
	uint64_t stalls;          /* times the observer lost its CPU for over 10 periods */
	double stalled_share;     /* of its watching time */
};
/* Starts the observer, pinned to a CPU: PERIOD cycles between sweeps on
 * average. 0, or -err with WHY (one CPU only, a period too short). */
int shim_start(unsigned period, struct shim **out, char *why, size_t len);
/* Thread TID of image (PID, GEN) has its signal word at SIGNAL and the
 * program's own at USER (reticle's mapping of its area); unwatched when it
 * ends or its area is given to another thread. */
void shim_watch(struct shim *s, pid_t pid, unsigned gen, pid_t tid, volatile const uint64_t *signal,
		volatile const uint64_t *user);
void shim_unwatch(struct shim *s, pid_t tid);
/* The counts of image (PID, GEN), which is forgotten (its areas are about
 * to be unmapped). */
int shim_take(struct shim *s, pid_t pid, unsigned gen, struct shim_counts *out);
void shim_counts_free(struct shim_counts *c);
void shim_stop(struct shim *s, struct shim_stats *st);

/* ---- the unwinder (unwind.c) ---- */
struct unw_mods;   /* ELF files and their CFI, by path */
struct unw_mods *unw_mods_new(void);
/* The load bias of file PATH ("[vdso]": the vdso) mapped at START from
 * file offset PGOFF: the PT_LOAD segment that holds PGOFF gives its
 * link-time address. The file stays open for the unwinder. */
bool unw_load_bias(struct unw_mods *m, const char *path, uint64_t start, uint64_t pgoff, uint64_t *bias);
void unw_mods_free(struct unw_mods *m);

/* Where a frame's code is, for the unwinder: the file and its load bias,
 * and for code in a copy the original address (0 when not in a copy). */
struct unw_frame_env {
	/* the module mapped at PC: path and bias (run-time minus link-time),
	 * false when none */
	bool (*module_at)(void *user, uint64_t pc, const char **path, uint64_t *bias);
	/* the original address of PC when it lies in a copy (EXACT: PC is the
	 * sampled instruction, not a return address), else 0 */
	uint64_t (*original)(void *user, uint64_t pc, bool exact);
	void *user;
	/* how far below its value at the original instruction a snippet of
	 * the copy has moved %rsp at PC (a counter that keeps the flags pushes
	 * them below the red zone), 0 outside snippets; NULL: never */
	uint32_t (*sp_below)(void *user, uint64_t pc);
};

/* Unwinds from REGS (perf_ring's order) over STACK (LEN bytes from the
 * stack pointer). FRAMES[0] is the sampled PC, then each caller's call
 * (return address less one), original addresses; a sampled PC inside a
 * snippet that moved %rsp is unwound from %rsp as the original instruction
 * had it (ENV's sp_below). With CFAS, CFAS[I] is
 * frame I's canonical frame address (its caller's stack pointer after it
 * returns: its return address is at CFAS[I] - 8), 0 where the walk could
 * not step past it. Returns how many (at most MAX); *TRUNCATED when the
 * walk stopped before the outermost frame. */
size_t unw_stack(struct unw_mods *m, const struct unw_frame_env *env, const uint64_t *regs,
		 const uint8_t *stack, size_t len, uint64_t *frames, uint64_t *cfas, size_t max, bool *truncated);

#endif
