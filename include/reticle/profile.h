/* Profile store: one SQLite file per measured process image.
 *
 * Writing: rtl_profile_create() opens a temporary file beside PATH inside one
 * transaction; rtl_profile_commit() ends the transaction and renames it to
 * PATH, so a reader never sees a half-written profile; rtl_profile_close()
 * without commit deletes the temporary file. Reading: rtl_profile_open().
 * The rtl_profile is owned by the caller and freed by rtl_profile_close().
 * The schema is documented in docs/profile-schema.md. */
#ifndef RETICLE_PROFILE_H
#define RETICLE_PROFILE_H

#include <stddef.h>
#include <stdint.h>

typedef struct rtl_profile rtl_profile;

int rtl_profile_create(const char *path, rtl_profile **out);
int rtl_profile_open(const char *path, rtl_profile **out);   /* read-only */
int rtl_profile_commit(rtl_profile *p);
void rtl_profile_close(rtl_profile *p);

/* Free-form facts about the run: "command", "pid", "exit_status",
 * "collectors", "start_time", ... */
int rtl_profile_set_meta(rtl_profile *p, const char *key, const char *value);
/* Returns a string owned by P (valid until the next call) or NULL. */
const char *rtl_profile_get_meta(rtl_profile *p, const char *key);

/* A module: the executable or a shared object, with its run-time load bias. */
int rtl_profile_add_module(rtl_profile *p, const char *path, uint64_t load_bias, int64_t *id);

/* Which counts a function row carries. */
enum { RTL_HAVE_CALLS = 1, RTL_HAVE_INSTRS = 2 };

/* A function (link-time ADDR within MODULE). INSTRUMENTED is 0 when the
 * relocator skipped it; REASON says why (NULL otherwise). */
int rtl_profile_add_function(rtl_profile *p, int64_t module, const char *name,
			     uint64_t addr, uint64_t size, int instrumented,
			     const char *reason, int64_t *id);
int rtl_profile_set_function_counts(rtl_profile *p, int64_t function, unsigned have,
				    uint64_t calls, uint64_t instrs);

/* A basic block of FUNCTION: link-time address, instructions in it, executions. */
int rtl_profile_add_block(rtl_profile *p, int64_t function, uint64_t addr,
			  uint32_t ninstrs, uint64_t count);

/* A direct call site: the call instruction at link-time SITE in CALLER,
 * executed COUNT times, to CALLEE (a function id, possibly of another module). */
int rtl_profile_add_call(rtl_profile *p, int64_t caller, uint64_t site,
			 int64_t callee, uint64_t count);

/* Reading: function rows with their module, sorted by the report's order. */
typedef struct rtl_profile_function {
	int64_t id;
	const char *module;   /* module path */
	const char *name;
	uint64_t addr, size;
	unsigned have;        /* RTL_HAVE_* bits */
	uint64_t calls, instrs;
	int instrumented;
} rtl_profile_function;

/* Calls FN for every function that has a non-zero count (or every function
 * when ALL is set), in descending order of instrs, then calls. Stops and
 * returns FN's value when it is non-zero. */
int rtl_profile_foreach_function(rtl_profile *p, int all,
				 int (*fn)(const rtl_profile_function *f, void *user),
				 void *user);

#endif
