/* The calling-context tree for the exporters (cct.h). Contexts come by id,
 * so a caller's before its callees': each one is merged into the node of
 * its merged caller and function (and thread), found by hashing. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "report/cct.h"
#include "util/array.h"

struct load {
	struct cct *t;
	int by_thread;
	/* context id -> node, for the callers of later contexts (ids ascend) */
	uint64_t *ids;
	size_t *node;
	size_t nids, capids, capnode;
	struct pid_of { int64_t image; int pid; } *pids;
	size_t npids, cappids;
	double weight_unit;       /* seconds per unit of a sample's weight */
};

static uint64_t mix(uint64_t h)
{
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	return h;
}

static uint64_t key_hash(size_t parent, int64_t function, int pid, int tid)
{
	return mix((uint64_t)parent * 0x9e3779b97f4a7c15ull ^ mix((uint64_t)function) ^
		   ((uint64_t)(uint32_t)pid << 32 | (uint32_t)tid) * 0xc2b2ae3d27d4eb4full);
}

static int regrow(struct cct *t)
{
	size_t size = t->index_size ? 2 * t->index_size : 1024;
	size_t *index = malloc(size * sizeof(*index));
	if (!index)
		return -ENOMEM;
	for (size_t i = 0; i < size; i++)
		index[i] = CCT_NONE;
	for (size_t i = 0; i < t->count; i++) {
		const struct cct_node *n = &t->n[i];
		size_t h = key_hash(n->parent, n->function, n->pid, n->tid) & (size - 1);
		while (index[h] != CCT_NONE)
			h = (h + 1) & (size - 1);
		index[h] = i;
	}
	free(t->index);
	t->index = index;
	t->index_size = size;
	return 0;
}

/* The node of (PARENT, FUNCTION, PID, TID), made if new: its index, or CCT_NONE. */
static size_t node_of(struct cct *t, size_t parent, int64_t function, int pid, int tid)
{
	if ((t->count + 1) * 2 > t->index_size && regrow(t))
		return CCT_NONE;
	size_t mask = t->index_size - 1, h = key_hash(parent, function, pid, tid) & mask;
	for (; t->index[h] != CCT_NONE; h = (h + 1) & mask) {
		const struct cct_node *n = &t->n[t->index[h]];
		if (n->parent == parent && n->function == function && n->pid == pid && n->tid == tid)
			return t->index[h];
	}
	if (rtl_grow(&t->n, &t->cap, t->count + 1, sizeof(*t->n)))
		return CCT_NONE;
	size_t i = t->count++;
	t->n[i] = (struct cct_node){ function, parent, CCT_NONE, CCT_NONE, CCT_NONE, pid, tid, 0, 0, 0 };
	t->index[h] = i;
	/* siblings in order of first call */
	size_t *last = parent == CCT_NONE ? &t->last_root : &t->n[parent].last_child;
	size_t *link = *last == CCT_NONE ? (parent == CCT_NONE ? &t->root : &t->n[parent].child)
					 : &t->n[*last].sibling;
	*link = i;
	*last = i;
	return i;
}

static int pid_row(const rtl_profile_process *proc, void *user)
{
	struct load *l = user;
	if (rtl_grow(&l->pids, &l->cappids, l->npids + 1, sizeof(*l->pids)))
		return -ENOMEM;
	l->pids[l->npids++] = (struct pid_of){ proc->id, proc->pid };
	return 0;
}

static int pid_of(const struct load *l, int64_t image)
{
	for (size_t i = 0; i < l->npids; i++)
		if (l->pids[i].image == image)
			return l->pids[i].pid;
	return 0;
}

/* The merged node of context ID (an earlier one), or CCT_NONE. */
static size_t node_of_id(const struct load *l, uint64_t id)
{
	size_t lo = 0, hi = l->nids;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (l->ids[mid] < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < l->nids && l->ids[lo] == id ? l->node[lo] : CCT_NONE;
}

static int add_context(const rtl_profile_context *c, void *user)
{
	struct load *l = user;
	struct cct *t = l->t;
	int pid = 0, tid = 0;
	if (l->by_thread) {
		pid = pid_of(l, (int64_t)(c->id >> 32));
		tid = c->tid;
	}
	/* a caller not written (the shared timer's) makes a root */
	size_t parent = c->parent ? node_of_id(l, c->parent) : CCT_NONE;
	size_t i = node_of(t, parent, c->function, pid, tid);
	if (i == CCT_NONE || rtl_grow(&l->ids, &l->capids, l->nids + 1, sizeof(*l->ids)) ||
	    rtl_grow(&l->node, &l->capnode, l->nids + 1, sizeof(*l->node)))
		return -ENOMEM;
	l->ids[l->nids] = c->id;
	l->node[l->nids++] = i;
	t->n[i].calls += c->calls;
	t->n[i].inclusive += c->inclusive;
	t->n[i].exclusive += c->exclusive;
	return 0;
}

/* A sampled stack's node: like a context, its samples as calls, their
 * periods as its exclusive time (inclusive is summed after the load). */
static int add_sample(const rtl_profile_sample *s, void *user)
{
	struct load *l = user;
	rtl_profile_context c = { s->id, s->parent, s->function, s->tid, s->samples, 0, s->weight * l->weight_unit };
	return add_context(&c, user);
}

static int any_context(const rtl_profile_context *c, void *user)
{
	(void)c;
	*(bool *)user = true;
	return 1;
}

int cct_load(rtl_profile *p, int by_thread, const rtl_report_options *o, struct cct *t)
{
	memset(t, 0, sizeof(*t));
	t->root = t->last_root = CCT_NONE;
	t->rows.demangle = !(o ? o : &rpt_default_options)->no_demangle;
	struct load l = { .t = t, .by_thread = by_thread };
	int err = by_thread ? rtl_profile_foreach_process(p, pid_row, &l) : 0;
	bool samples = o && o->samples, has_contexts = false;
	if (!err && !samples) {
		int rc = rtl_profile_foreach_context(p, any_context, &has_contexts);
		err = rc < 0 ? rc : 0;
		samples = !has_contexts;
	}
	if (!err && samples) {
		l.weight_unit = rtl_profile_sample_unit(p);
		t->sampled = true;
		err = rtl_profile_foreach_sample(p, add_sample, &l);
		for (size_t i = t->count; !err && i-- > 0;) {   /* callees after callers */
			t->n[i].inclusive += t->n[i].exclusive;
			if (t->n[i].parent != CCT_NONE)
				t->n[t->n[i].parent].inclusive += t->n[i].inclusive;
		}
	} else if (!err)
		err = rtl_profile_foreach_context(p, add_context, &l);
	if (!err && !t->count)
		err = -ENODATA;
	if (!err)
		err = rpt_rows_load(p, 1, 1, &t->rows);
	if (!err)
		rpt_rows_sort_by_id(&t->rows);
	free(l.ids);
	free(l.node);
	free(l.pids);
	free(t->index);
	t->index = NULL;
	if (err)
		cct_free(t);
	return err;
}

void cct_free(struct cct *t)
{
	free(t->n);
	free(t->index);
	rpt_rows_free(&t->rows);
	memset(t, 0, sizeof(*t));
}

int cct_walk_paths(const struct cct *t, int (*fn)(const struct cct *t, size_t node, const char *path, void *user),
		   void *user)
{
	char *path = NULL;
	size_t cap = 0, *len = NULL, lencap = 0, depth = 0;   /* len[d]: the path's length at depth d */
	int err = 0;
	for (size_t i = t->root; i != CCT_NONE && !err;) {
		size_t at = depth ? len[depth - 1] + 1 : 0;
		char buf[32];
		const char *name = cct_name(t, i, buf);
		size_t nl = strlen(name);
		if (rtl_grow(&path, &cap, at + nl + 1, 1) || rtl_grow(&len, &lencap, depth + 1, sizeof(*len))) {
			err = -ENOMEM;
			break;
		}
		if (depth)
			path[at - 1] = ';';
		for (size_t k = 0; k < nl; k++)
			path[at + k] = name[k] == ';' ? ':' : name[k];
		path[at + nl] = 0;
		len[depth] = at + nl;
		err = fn(t, i, path, user);
		if (t->n[i].child != CCT_NONE) {
			i = t->n[i].child;
			depth++;
			continue;
		}
		while (i != CCT_NONE && t->n[i].sibling == CCT_NONE) {
			i = t->n[i].parent;
			depth--;
		}
		if (i != CCT_NONE)
			i = t->n[i].sibling;
	}
	free(path);
	free(len);
	return err;
}

const char *cct_name(const struct cct *t, size_t i, char buf[32])
{
	const rtl_profile_function *f = rpt_rows_by_id(&t->rows, t->n[i].function);
	return f ? rpt_name(f, buf) : "?";
}

const char *cct_module(const struct cct *t, size_t i)
{
	const rtl_profile_function *f = rpt_rows_by_id(&t->rows, t->n[i].function);
	return f ? rpt_basename(f->module) : "?";
}
