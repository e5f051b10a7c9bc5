/* Profile store: one SQLite file per measured session, every process image
 * of it inside (a tree of processes, each with its modules and functions).
 *
 * Writing: rtl_profile_create() opens a temporary file beside PATH inside one
 * transaction; rtl_profile_commit() ends the transaction and renames it to
 * PATH, so a reader never sees a half-written profile; rtl_profile_close()
 * without commit deletes the temporary file. Reading: rtl_profile_open().
 * The rtl_profile is owned by the caller and freed by rtl_profile_close();
 * it is not safe to use from several threads at once. Ids passed to the
 * write functions must come from the same profile (-ENOENT otherwise).
 * Rows reach the file in groups, some only at commit: an error writing
 * them is returned by a later write or by the commit, which then fails.
 * The schema is documented in docs/profile-schema.md. */
#ifndef RETICLE_PROFILE_H
#define RETICLE_PROFILE_H

#include <reticle/api.h>

#include <stddef.h>
#include <stdint.h>

typedef struct rtl_profile rtl_profile;

RTL_API int rtl_profile_create(const char *path, rtl_profile **out);
RTL_API int rtl_profile_open(const char *path, rtl_profile **out);   /* read-only */
RTL_API int rtl_profile_commit(rtl_profile *p);
RTL_API void rtl_profile_close(rtl_profile *p);

/* Free-form facts about the run: "command", "pid", "exit_status",
 * "collectors", "start_time", ... */
RTL_API int rtl_profile_set_meta(rtl_profile *p, const char *key, const char *value);
/* The key "schema_version" is the store's own and cannot be set.
 * Returns a string owned by P (valid until the next call) or NULL. */
RTL_API const char *rtl_profile_get_meta(rtl_profile *p, const char *key);

/* A process image of the session (a process between two exec calls). ID
 * is the caller's (1 for the first image; unique); PARENT the image that
 * forked it or that it replaced by exec (KIND "fork" or "exec"), 0 for the
 * first ("launch"). EXIT_STATUS as a shell reports it, -1 when the image
 * was replaced by exec, RTL_PROCESS_RUNNING when it still ran as the
 * session ended (detached, or let go: a daemon the program left). Times in ns since the session started. Writing a
 * process first writes the rows still held in memory for earlier ones. */
enum { RTL_PROCESS_RUNNING = -2 };
typedef struct rtl_profile_process {
	int64_t id, parent;
	int pid;
	const char *kind;
	const char *command;
	int exit_status;
	uint64_t start_ns, end_ns;
	/* read side only: sums over the image's functions */
	uint64_t calls, instrs;
} rtl_profile_process;

RTL_API int rtl_profile_add_process(rtl_profile *p, const rtl_profile_process *proc);

/* A module: the executable or a shared object, with its run-time load bias,
 * of process image PROCESS (rtl_profile_add_module: of image 1). */
RTL_API int rtl_profile_add_module(rtl_profile *p, const char *path, uint64_t load_bias, int64_t *id);
RTL_API int rtl_profile_add_process_module(rtl_profile *p, int64_t process, const char *path,
				   uint64_t load_bias, int64_t *id);

/* Which counts a function row carries. */
enum { RTL_HAVE_CALLS = 1, RTL_HAVE_INSTRS = 2 };

/* A function (link-time ADDR within MODULE). INSTRUMENTED is 0 when the
 * relocator skipped it; REASON says why (NULL otherwise). */
RTL_API int rtl_profile_add_function(rtl_profile *p, int64_t module, const char *name,
			     uint64_t addr, uint64_t size, int instrumented,
			     const char *reason, int64_t *id);
/* Sets the counts named by HAVE and keeps the others, so fcount and
 * bbcount may each set their own count on the same row. */
RTL_API int rtl_profile_set_function_counts(rtl_profile *p, int64_t function, unsigned have,
				    uint64_t calls, uint64_t instrs);

/* A basic block of FUNCTION: link-time address, instructions in it,
 * executions. Adding the same (FUNCTION, ADDR) again adds COUNT. */
RTL_API int rtl_profile_add_block(rtl_profile *p, int64_t function, uint64_t addr,
			  uint32_t ninstrs, uint64_t count);

/* A call arc: the call instruction at link-time SITE in CALLER called
 * CALLEE (a function id, possibly of another module) COUNT times. Two
 * collectors may both know an arc (bbcount from the call's block, callgraph
 * from its own counter): adding the same (CALLER, SITE, CALLEE) again keeps
 * the larger count. */
RTL_API int rtl_profile_add_call(rtl_profile *p, int64_t caller, uint64_t site,
			 int64_t callee, uint64_t count);

/* A conditional branch at link-time SITE in FUNCTION: times it jumped and
 * times it fell through. Adding the same (FUNCTION, SITE) again adds both. */
RTL_API int rtl_profile_add_branch(rtl_profile *p, int64_t function, uint64_t site, uint64_t taken,
			   uint64_t not_taken);

/* Reading: function rows with their module, sorted by the report's order. */
typedef struct rtl_profile_function {
	int64_t id;
	const char *module;   /* module path */
	const char *name;
	uint64_t addr, size;
	unsigned have;        /* RTL_HAVE_* bits */
	uint64_t calls, instrs;
	int instrumented;
	/* Added by the store (after the fields above, so callers that only
	 * know the first ones keep working). */
	int64_t module_id;
	const char *reason;   /* why not instrumented, or NULL */
} rtl_profile_function;

/* Calls FN for every function that has a non-zero count (or every function
 * when ALL is set), in descending order of instrs, then calls. Stops and
 * returns FN's value when it is non-zero. */
RTL_API int rtl_profile_foreach_function(rtl_profile *p, int all,
				 int (*fn)(const rtl_profile_function *f, void *user),
				 void *user);

/* ---- More of the read side. Strings passed to callbacks are owned by P
 * and valid only during the callback. Every foreach stops and returns FN's
 * value when it is non-zero; it returns 0 or a negative error otherwise. */

/* The schema version this build writes and the newest it reads. */
#define RTL_PROFILE_SCHEMA_VERSION 2

/* Functions of any order, by module then address (exporters that need a
 * stable order use this one). */
RTL_API int rtl_profile_foreach_function_by_addr(rtl_profile *p, int all,
					 int (*fn)(const rtl_profile_function *f, void *user),
					 void *user);

/* Every (key, value) pair of the meta table, by key. */
RTL_API int rtl_profile_foreach_meta(rtl_profile *p,
			     int (*fn)(const char *key, const char *value, void *user),
			     void *user);

typedef struct rtl_profile_module {
	int64_t id;
	const char *path;
	uint64_t load_bias;
	int64_t process;      /* its process image; 0 in a merged view */
} rtl_profile_module;

RTL_API int rtl_profile_foreach_module(rtl_profile *p,
			       int (*fn)(const rtl_profile_module *m, void *user),
			       void *user);

typedef struct rtl_profile_block {
	int64_t function;
	uint64_t addr;
	uint32_t ninstrs;
	uint64_t count;
} rtl_profile_block;

/* Blocks of FUNCTION (or of every function when FUNCTION < 0), by function
 * then address. */
RTL_API int rtl_profile_foreach_block(rtl_profile *p, int64_t function,
			      int (*fn)(const rtl_profile_block *b, void *user),
			      void *user);

typedef struct rtl_profile_call {
	int64_t caller;
	uint64_t site;
	int64_t callee;
	uint64_t count;
} rtl_profile_call;

/* Call sites, by caller, site, then callee. */
RTL_API int rtl_profile_foreach_call(rtl_profile *p,
			     int (*fn)(const rtl_profile_call *c, void *user),
			     void *user);

typedef struct rtl_profile_branch {
	int64_t function;
	uint64_t site;
	uint64_t taken, not_taken;
} rtl_profile_branch;

/* Conditional branches (the edges collector), by function then site; none
 * in a profile written without it. */
RTL_API int rtl_profile_foreach_branch(rtl_profile *p,
			       int (*fn)(const rtl_profile_branch *b, void *user),
			       void *user);

/* A function's timer in one thread (the calltime collector): calls, and
 * seconds inclusive and exclusive of the timed functions it called. */
RTL_API int rtl_profile_add_time(rtl_profile *p, int64_t function, int tid, uint64_t calls, double inclusive,
			 double exclusive);
typedef struct rtl_profile_time {
	int64_t function;
	int tid;
	uint64_t calls;
	double inclusive, exclusive;
} rtl_profile_time;
/* Function times, by function then thread; none in a profile written
 * without calltime. */
RTL_API int rtl_profile_foreach_time(rtl_profile *p, int (*fn)(const rtl_profile_time *t, void *user), void *user);

/* A node of a thread's calling-context tree (the calltime collector): the
 * path of timed calls from the thread's start to a call of FUNCTION. ID is
 * unique in the profile (the engine's rtl_context_view.id), PARENT the
 * caller's context (0: a root; a context of the shared timer, beyond the
 * last timed function, is not written, and its callees' PARENT names no
 * row). Adding the same ID again adds the counts. */
typedef struct rtl_profile_context {
	uint64_t id, parent;
	int64_t function;
	int tid;
	uint64_t calls;
	double inclusive, exclusive;   /* seconds; exclusive of the timed calls it made */
} rtl_profile_context;
RTL_API int rtl_profile_add_context(rtl_profile *p, const rtl_profile_context *c);
/* Contexts by id (a caller's before its callees'); none in a profile
 * written without calltime. */
RTL_API int rtl_profile_foreach_context(rtl_profile *p, int (*fn)(const rtl_profile_context *c, void *user),
				void *user);

/* A node of a thread's tree of sampled call stacks (the sample collector):
 * the path of calls from the thread's start to FUNCTION, and the samples
 * taken with exactly that stack (none taken deeper). ID is unique in the
 * profile, PARENT the caller's node (0: a root, the thread's outermost
 * frame). WEIGHT is the sum of the samples' periods: nanoseconds of the
 * clock events (meta sample_event), else events. Adding the same ID again
 * adds both. */
typedef struct rtl_profile_sample {
	uint64_t id, parent;
	int64_t function;
	int tid;
	uint64_t samples;
	double weight;
} rtl_profile_sample;
RTL_API int rtl_profile_add_sample(rtl_profile *p, const rtl_profile_sample *c);
/* What one unit of rtl_profile_sample.weight is: 1e-9 (nanoseconds) for
 * the clock events and shim's samples, 1 for events (page faults...),
 * whose weights are counts, not time. */
RTL_API double rtl_profile_sample_unit(rtl_profile *p);
/* Sampled stacks by id (a caller's before its callees'); none in a profile
 * written without the sample collector. */
RTL_API int rtl_profile_foreach_sample(rtl_profile *p, int (*fn)(const rtl_profile_sample *c, void *user),
				       void *user);

/* A run of a thread's own signal (reticle/signal.h, the shim collector):
 * VALUE from START_NS to END_NS (ns since the session started) in thread
 * TID of image PROCESS, as the observer first and last saw it. */
typedef struct rtl_profile_signal_run {
	int64_t process;
	int tid;
	uint64_t value;
	uint64_t start_ns, end_ns;
} rtl_profile_signal_run;
RTL_API int rtl_profile_add_signal_run(rtl_profile *p, const rtl_profile_signal_run *r);
/* Runs by image, thread, then start (of the selected image only, when one
 * is); none in a profile without them. */
RTL_API int rtl_profile_foreach_signal_run(rtl_profile *p,
					   int (*fn)(const rtl_profile_signal_run *r, void *user), void *user);

/* A collector's own measure, for collectors whose results have no table of
 * their own (plug-ins: reticle run --collector): the value NAME of
 * FUNCTION at link-time SITE (the function's address when the value is
 * the function's). Adding the same (FUNCTION, NAME, SITE) again adds
 * VALUE. Reports show the sum per function and name. */
RTL_API int rtl_profile_add_metric(rtl_profile *p, int64_t function, const char *name, uint64_t site,
			   double value);
typedef struct rtl_profile_metric {
	int64_t function;
	const char *name;
	uint64_t site;
	double value;
} rtl_profile_metric;
/* Metrics by name, function, then site; none in a profile without them. */
RTL_API int rtl_profile_foreach_metric(rtl_profile *p, int (*fn)(const rtl_profile_metric *m, void *user),
			       void *user);

/* Sums over all functions. HAVE has a bit when at least one function
 * carries that count. */
typedef struct rtl_profile_totals {
	unsigned have;
	uint64_t calls, instrs;
	uint64_t functions;        /* rows in the function table */
	uint64_t counted;          /* functions with a non-zero count */
	uint64_t uninstrumented;   /* functions the relocator skipped */
	uint64_t modules, blocks, call_sites;
	uint64_t processes;        /* process images in the current scope */
} rtl_profile_totals;

RTL_API int rtl_profile_get_totals(rtl_profile *p, rtl_profile_totals *t);

/* Process images by id, with their sums (a profile of schema 1, or one
 * written without processes, reads as one image made from its meta). */
RTL_API int rtl_profile_foreach_process(rtl_profile *p,
				int (*fn)(const rtl_profile_process *proc, void *user),
				void *user);

/* Reader: what every other read sees. PROCESS 0 (the default) merges all
 * images: a function, block or call site of the same module path and
 * address is one row with the counts added (ids are the lowest of the
 * merged rows). PROCESS > 0 keeps one image. -ENOENT for an unknown id. */
RTL_API int rtl_profile_select_process(rtl_profile *p, int64_t process);

/* Merges the profiles INPUTS (N of them) into a new profile OUT: every
 * process image of each becomes one of OUT's, marked with its rank (the
 * input's meta mpi_rank, else its index in INPUTS); OUT's meta is the
 * first input's (without mpi_rank) and merged_profiles. PROGRESS (or NULL)
 * is called after each input; its non-zero return stops the merge. 0, or
 * an input's error (as rtl_profile_open's) and no OUT. */
RTL_API int rtl_profile_merge(const char *out, const char *const *inputs, size_t n,
			      int (*progress)(size_t i, void *user), void *user);

/* Counts per rank (a merged profile, reticle merge): per function (module
 * path and link-time address) and rank, its calls and instructions, by
 * module, address, then rank. None in a profile without ranks. */
typedef struct rtl_profile_rank_count {
	const char *module, *name;
	uint64_t addr;
	int64_t rank;
	unsigned have;        /* RTL_HAVE_* */
	uint64_t calls, instrs;
} rtl_profile_rank_count;
RTL_API int rtl_profile_foreach_rank_count(rtl_profile *p,
					   int (*fn)(const rtl_profile_rank_count *r, void *user), void *user);
RTL_API int64_t rtl_profile_selected_process(const rtl_profile *p);

#endif
