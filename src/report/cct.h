/* The calling-context tree of a profile (its contexts table, calltime),
 * loaded for the exporters that draw it: contexts of the same call path
 * merged, across the images of the scope and, unless asked to keep them
 * apart, across threads. Internal to src/report/. */
#ifndef RETICLE_REPORT_CCT_H
#define RETICLE_REPORT_CCT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "report/report_priv.h"

#define CCT_NONE ((size_t)-1)

struct cct_node {
	int64_t function;         /* profile id */
	size_t parent;            /* index, CCT_NONE at a root */
	size_t child, sibling;    /* first callee, next of the same caller (first call first) */
	size_t last_child;
	int pid, tid;             /* 0 when threads are merged */
	uint64_t calls;
	double inclusive, exclusive;   /* seconds */
};

struct cct {
	struct cct_node *n;       /* callers before callees */
	size_t count, cap;
	size_t root;              /* first root, then by sibling */
	struct rpt_rows rows;     /* functions, by id (rpt_rows_by_id) */
	/* the merge: open-addressing index of nodes by (parent, function, thread) */
	size_t *index;
	size_t index_size;
	size_t last_root;
	bool sampled;             /* from the sampled stacks: calls are samples */
};

/* Loads P's contexts (or its sampled stacks: O->samples, or no contexts): BY_THREAD keeps each thread's tree apart (roots per
 * process and thread); names demangled unless O (NULL: the defaults) says
 * not. -ENODATA when P has none. Free with cct_free. */
int cct_load(rtl_profile *p, int by_thread, const rtl_report_options *o, struct cct *t);
void cct_free(struct cct *t);
/* Calls FN(T, NODE, PATH, USER) for every node, callers first, depth
 * first, with PATH its functions' names joined by ';' (';' in a name
 * becomes ':'). Stops at FN's first non-zero return, which it returns. */
int cct_walk_paths(const struct cct *t, int (*fn)(const struct cct *t, size_t node, const char *path, void *user),
		   void *user);
/* Node I's function name into BUF when unnamed. */
const char *cct_name(const struct cct *t, size_t i, char buf[32]);
/* Node I's function's module basename. */
const char *cct_module(const struct cct *t, size_t i);

#endif
