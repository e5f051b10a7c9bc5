/* gprof-style inclusive cost estimates (see callgraph.h for the model).
 * Tarjan's algorithm, iterative so that deep call chains cannot overflow
 * the stack, numbers components in completion order: every component
 * reachable from C is numbered before C, so one pass in that order sees
 * each callee component's inclusive cost before its callers need it. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "report/callgraph.h"

#define UNSET ((size_t)-1)

struct tarjan {
	const struct cg_graph *g;
	size_t *adj, *start;   /* arcs by caller: adj[start[v]..start[v+1]) */
	size_t *index, *low, *comp, *stack, *frames, *iter;
	unsigned char *on_stack;
	size_t next_index, sp, ncomp;
};

/* Arc indices grouped by caller (a counting sort); ITER is scratch. */
static void group_arcs(struct tarjan *t)
{
	const struct cg_graph *g = t->g;

	memset(t->start, 0, (g->n + 1) * sizeof(*t->start));
	for (size_t i = 0; i < g->narcs; i++)
		t->start[g->arcs[i].from + 1]++;
	for (size_t v = 0; v < g->n; v++)
		t->start[v + 1] += t->start[v];
	memcpy(t->iter, t->start, g->n * sizeof(*t->iter));
	for (size_t i = 0; i < g->narcs; i++)
		t->adj[t->iter[g->arcs[i].from]++] = i;
}

static void push(struct tarjan *t, size_t *depth, size_t v)
{
	t->frames[(*depth)++] = v;
	t->iter[v] = t->start[v];
	t->index[v] = t->low[v] = t->next_index++;
	t->stack[t->sp++] = v;
	t->on_stack[v] = 1;
}

static void close_component(struct tarjan *t, size_t v)
{
	size_t w;

	do {
		w = t->stack[--t->sp];
		t->on_stack[w] = 0;
		t->comp[w] = t->ncomp;
	} while (w != v);
	t->ncomp++;
}

static void visit(struct tarjan *t, size_t root)
{
	size_t depth = 0;

	push(t, &depth, root);
	while (depth) {
		size_t v = t->frames[depth - 1];

		if (t->iter[v] < t->start[v + 1]) {
			size_t w = t->g->arcs[t->adj[t->iter[v]++]].to;

			if (t->index[w] == UNSET)
				push(t, &depth, w);
			else if (t->on_stack[w] && t->index[w] < t->low[v])
				t->low[v] = t->index[w];
			continue;
		}
		if (t->low[v] == t->index[v])
			close_component(t, v);
		if (--depth && t->low[v] < t->low[t->frames[depth - 1]])
			t->low[t->frames[depth - 1]] = t->low[v];
	}
}

/* Entries into each component from outside it: per member, its known
 * entries minus those from inside the component, never less than the
 * arcs seen from outside (entries may be unknown, i.e. 0). */
static int outside_entries(const struct cg_graph *g, const size_t *comp, uint64_t *ext)
{
	uint64_t *in_arcs = calloc(g->n * 2 + 1, sizeof(*in_arcs));   /* [2v] inside, [2v+1] outside */

	if (!in_arcs)
		return -ENOMEM;
	for (size_t i = 0; i < g->narcs; i++) {
		const struct cg_arc *a = &g->arcs[i];

		in_arcs[2 * a->to + (comp[a->from] != comp[a->to])] += a->count;
	}
	for (size_t v = 0; v < g->n; v++) {
		uint64_t inside = in_arcs[2 * v], outside = in_arcs[2 * v + 1];
		uint64_t known = g->entries[v] > inside ? g->entries[v] - inside : 0;

		ext[comp[v]] += known > outside ? known : outside;
	}
	free(in_arcs);
	return 0;
}

/* Inclusive cost per component, callees first; sets each arc's cost. */
static void propagate(struct cg_graph *g, struct tarjan *t, uint64_t (*incl)[CG_MAX_EVENTS],
		      const uint64_t *ext)
{
	size_t *order = t->stack;   /* free again: nodes by component */
	size_t *pos = t->low;

	memset(pos, 0, (t->ncomp + 1) * sizeof(*pos));
	for (size_t v = 0; v < g->n; v++)
		pos[t->comp[v] + 1]++;
	for (size_t c = 0; c < t->ncomp; c++)
		pos[c + 1] += pos[c];
	memcpy(t->index, pos, t->ncomp * sizeof(*pos));
	for (size_t v = 0; v < g->n; v++)
		order[t->index[t->comp[v]]++] = v;
	memset(incl, 0, t->ncomp * sizeof(*incl));
	for (size_t v = 0; v < g->n; v++)
		for (int e = 0; e < g->nevents; e++)
			incl[t->comp[v]][e] += g->self[v][e];
	for (size_t c = 0; c < t->ncomp; c++)
		for (size_t k = pos[c]; k < pos[c + 1]; k++) {
			size_t v = order[k];

			for (size_t j = t->start[v]; j < t->start[v + 1]; j++) {
				struct cg_arc *a = &g->arcs[t->adj[j]];
				size_t d = t->comp[a->to];

				memset(a->cost, 0, sizeof(a->cost));
				if (d == c || !a->count || !ext[d])
					continue;
				for (int e = 0; e < g->nevents; e++) {
					a->cost[e] = (uint64_t)((unsigned __int128)incl[d][e] *
								a->count / ext[d]);
					incl[c][e] += a->cost[e];
				}
			}
		}
}

int cg_estimate(struct cg_graph *g)
{
	size_t n = g->n + 1;
	struct tarjan t = { .g = g };
	uint64_t (*incl)[CG_MAX_EVENTS] = calloc(n, sizeof(*incl));
	uint64_t *ext = calloc(n, sizeof(*ext));
	int err = -ENOMEM;

	t.adj = calloc(g->narcs + 1, sizeof(size_t));
	t.start = calloc(n, sizeof(size_t));
	t.index = calloc(n, sizeof(size_t));
	t.low = calloc(n, sizeof(size_t));
	t.comp = calloc(n, sizeof(size_t));
	t.stack = calloc(n, sizeof(size_t));
	t.frames = calloc(n, sizeof(size_t));
	t.iter = calloc(n, sizeof(size_t));
	t.on_stack = calloc(n, 1);
	if (!incl || !ext || !t.adj || !t.start || !t.index || !t.low || !t.comp ||
	    !t.stack || !t.frames || !t.iter || !t.on_stack)
		goto out;
	group_arcs(&t);
	memset(t.index, 0xff, n * sizeof(size_t));
	for (size_t v = 0; v < g->n; v++)
		if (t.index[v] == UNSET)
			visit(&t, v);
	if ((err = outside_entries(g, t.comp, ext)))
		goto out;
	propagate(g, &t, incl, ext);
out:
	free(incl);
	free(ext);
	free(t.adj);
	free(t.start);
	free(t.index);
	free(t.low);
	free(t.comp);
	free(t.stack);
	free(t.frames);
	free(t.iter);
	free(t.on_stack);
	return err;
}
