/* The process tree of a profile: every image of the session under the one
 * that forked it or that it replaced by exec, with its pid, exit status,
 * wall time and counts. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <reticle/error.h>
#include "report/report_priv.h"
#include "util/array.h"

struct node {
	rtl_profile_process pr;
	size_t first_child, next_sibling;   /* indexes + 1; 0: none */
};

struct tree {
	struct node *v;
	size_t n, cap;
};

static int add_node(const rtl_profile_process *pr, void *user)
{
	struct tree *t = user;
	if (rtl_grow(&t->v, &t->cap, t->n + 1, sizeof(*t->v)))
		return -ENOMEM;
	struct node *n = &t->v[t->n];
	*n = (struct node){ .pr = *pr };
	n->pr.kind = strdup(pr->kind ? pr->kind : "?");
	n->pr.command = pr->command ? strdup(pr->command) : NULL;
	t->n++;
	return n->pr.kind && (!pr->command || n->pr.command) ? 0 : -ENOMEM;
}

static void free_tree(struct tree *t)
{
	for (size_t i = 0; i < t->n; i++) {
		free((char *)t->v[i].pr.kind);
		free((char *)t->v[i].pr.command);
	}
	free(t->v);
}

/* Index of the image with id ID, or n (rows are by id). */
static size_t find(const struct tree *t, int64_t id)
{
	size_t lo = 0, hi = t->n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (t->v[mid].pr.id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < t->n && t->v[lo].pr.id == id ? lo : t->n;
}

/* Children in id order: linked from the last one back. */
static void link_children(struct tree *t)
{
	for (size_t i = t->n; i-- > 0;) {
		size_t p = t->v[i].pr.parent ? find(t, t->v[i].pr.parent) : t->n;
		if (p < t->n && p != i) {
			t->v[i].next_sibling = t->v[p].first_child;
			t->v[p].first_child = i + 1;
		}
	}
}

struct printer {
	FILE *out;
	const struct tree *t;
	unsigned long limit, printed, left;
	unsigned have;
};

static void print_node(struct printer *pp, size_t i, int depth)
{
	const rtl_profile_process *pr = &pp->t->v[i].pr;
	if (pp->limit && pp->printed >= pp->limit) {
		pp->left++;
	} else {
		char status[16];
		if (pr->exit_status == RTL_PROCESS_RUNNING)
			snprintf(status, sizeof(status), "run");
		else if (pr->exit_status < 0)
			snprintf(status, sizeof(status), "exec");
		else
			snprintf(status, sizeof(status), "%d", pr->exit_status);
		fprintf(pp->out, "%5" PRId64 "  %7d  %4s  %8.3f", pr->id, pr->pid, status,
			(double)(pr->end_ns - pr->start_ns) / 1e9);
		if (pp->have & RTL_HAVE_CALLS)
			fprintf(pp->out, "  %12" PRIu64, pr->calls);
		if (pp->have & RTL_HAVE_INSTRS)
			fprintf(pp->out, "  %14" PRIu64, pr->instrs);
		fprintf(pp->out, "  %*s%s%s%s\n", 2 * depth, "", depth ? pr->kind : "",
			depth ? ": " : "", pr->command ? pr->command : "?");
		pp->printed++;
	}
	for (size_t c = pp->t->v[i].first_child; c; c = pp->t->v[c - 1].next_sibling)
		print_node(pp, c - 1, depth + 1);
}

int rpt_tree(rtl_profile *p, unsigned have, unsigned long limit, FILE *out)
{
	struct tree t = { 0 };
	int err = rtl_profile_foreach_process(p, add_node, &t);
	if (err)
		goto out;
	link_children(&t);
	struct printer pp = { out, &t, limit, 0, 0, have };
	fprintf(out, "%5s  %7s  %4s  %8s", "image", "pid", "exit", "time (s)");
	if (have & RTL_HAVE_CALLS)
		fprintf(out, "  %12s", "calls");
	if (have & RTL_HAVE_INSTRS)
		fprintf(out, "  %14s", "Ir");
	fputs("  command (forked or exec'd by the one above)\n", out);
	for (size_t i = 0; i < t.n; i++)
		if (!t.v[i].pr.parent || find(&t, t.v[i].pr.parent) == t.n)
			print_node(&pp, i, 0);
	if (pp.left)
		fprintf(out, "(%lu more process images: reticle report --tree)\n", pp.left);
	err = rpt_out_status(out);
out:
	free_tree(&t);
	return err;
}

static int which_counts(const rtl_profile_process *pr, void *user)
{
	unsigned *have = user;
	*have |= (pr->calls ? RTL_HAVE_CALLS : 0) | (pr->instrs ? RTL_HAVE_INSTRS : 0);
	return 0;
}

/* The columns come from the images' sums: the totals would build the
 * merged view of every image, a pass over all rows the tree does not need. */
int rtl_report_tree(rtl_profile *p, FILE *out)
{
	unsigned have = 0;
	int err = rtl_profile_foreach_process(p, which_counts, &have);
	return err ? err : rpt_tree(p, have, 0, out);
}

struct one {
	int64_t id;
	FILE *out;
};

static int print_one(const rtl_profile_process *pr, void *user)
{
	struct one *o = user;
	if (pr->id != o->id)
		return 0;
	fprintf(o->out, "%-13s %" PRId64 " (pid %d, %s", "process", pr->id, pr->pid,
		pr->kind ? pr->kind : "?");
	if (pr->parent)
		fprintf(o->out, " of %" PRId64, pr->parent);
	if (pr->exit_status >= 0)
		fprintf(o->out, ", exit status %d", pr->exit_status);
	else if (pr->exit_status == RTL_PROCESS_RUNNING)
		fputs(", still running when the session ended", o->out);
	else
		fputs(", replaced by exec", o->out);
	fprintf(o->out, "): %s\n", pr->command ? pr->command : "?");
	return 1;
}

int rpt_process_line(rtl_profile *p, int64_t id, FILE *out)
{
	struct one o = { id, out };
	int err = rtl_profile_foreach_process(p, print_one, &o);
	return err == 1 ? 0 : err;
}
