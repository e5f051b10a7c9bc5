/* Blocks whose run follows from their successors' runs, for coverage whose
 * probes are swept once fired (cover alone): a block that always goes on
 * to a successor inside the function, each of which it dominates, ran
 * exactly when one of them ran, so it needs no probe of its own. This is
 * the safe half of coverage by dominators: post-dominators would also let
 * a block vouch for those after it, but a function may never return (exit,
 * longjmp, an exception), and then they did not run.
 *
 * Dominators over the function's blocks (Cooper, Harvey and Kennedy's
 * iterative algorithm), under a root above every place where the function
 * can be entered other than by its edges: its entry, its indirect-jump
 * targets (tables, computed gotos, labels held in data) and any block no
 * edge reaches (landing pads, which the unwinder enters). A block qualifies
 * only when it holds no call (the callee may not come back) and no system
 * call (exit), and ends by a direct jump or branch inside the function, or
 * falls into the next block. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "isa/x86_64/cfg.h"

#define UNDEF X86_NO_BLOCK   /* no block, no dominator yet */

struct doms {
	size_t nb;                /* blocks; the root above them is block NB */
	uint32_t (*succ)[2];      /* successors inside the function, UNDEF for none */
	bool *leaves;             /* the block may leave the function or stop */
	bool *root;
	uint32_t *pred0, *preds;  /* predecessors: preds[pred0[b] .. pred0[b + 1]) */
	uint32_t *order;          /* blocks in postorder (the root last) */
	uint32_t *po;             /* block -> its place in ORDER */
	uint32_t *idom;
};

/* syscall, sysenter, int N: the process may end there (exit_group) */
bool x86_system_call(const struct x86_analysis *a, const struct x86_insn *in)
{
	const uint8_t *c = a->env->code + (in->addr - a->env->addr) + in->prefix_len;
	size_t left = in->len - in->prefix_len;
	if (left > 1 && (c[0] & 0xf0) == 0x40) {   /* REX */
		c++;
		left--;
	}
	return (left >= 2 && c[0] == 0x0f && (c[1] == 0x05 || c[1] == 0x34)) || (left >= 2 && c[0] == 0xcd);
}

static uint32_t intersect(const struct doms *d, uint32_t x, uint32_t y)
{
	while (x != y) {
		while (d->po[x] < d->po[y])
			x = d->idom[x];
		while (d->po[y] < d->po[x])
			y = d->idom[y];
	}
	return x;
}

/* Postorder from the root: its children are the roots, then every block
 * not reached yet (which becomes a root). False when out of memory. */
static bool postorder(struct doms *d)
{
	size_t nb = d->nb, n = 0, top = 0;
	bool *seen = calloc(nb + 1, sizeof(*seen));
	struct frame { uint32_t b, next; } *stack = malloc((nb + 1) * sizeof(*stack));
	bool ok = seen && stack;
	if (!ok)
		goto out;
	for (int pass = 0; pass < 2; pass++)
		for (size_t r = 0; r < nb; r++) {
			if (seen[r] || (pass == 0 && !d->root[r]))
				continue;
			d->root[r] = true;
			seen[r] = true;
			stack[top++] = (struct frame){ (uint32_t)r, 0 };
			while (top) {
				struct frame *f = &stack[top - 1];
				if (f->next < 2) {
					uint32_t s = d->succ[f->b][f->next++];
					if (s != UNDEF && !seen[s]) {
						seen[s] = true;
						stack[top++] = (struct frame){ s, 0 };
					}
					continue;
				}
				d->po[f->b] = (uint32_t)n;
				d->order[n++] = f->b;
				top--;
			}
		}
	d->po[nb] = (uint32_t)n;
	d->order[n] = (uint32_t)nb;
out:
	free(seen);
	free(stack);
	return ok;
}

static void dominators(struct doms *d)
{
	size_t nb = d->nb;
	for (size_t b = 0; b <= nb; b++)
		d->idom[b] = UNDEF;
	d->idom[nb] = (uint32_t)nb;
	for (bool changed = true; changed;) {
		changed = false;
		for (size_t k = nb; k-- > 0;) {   /* reverse postorder, the root excluded */
			uint32_t b = d->order[k], nd = d->root[b] ? (uint32_t)nb : UNDEF;
			for (uint32_t j = d->pred0[b]; j < d->pred0[b + 1]; j++) {
				uint32_t p = d->preds[j];
				if (d->idom[p] != UNDEF)
					nd = nd == UNDEF ? p : intersect(d, p, nd);
			}
			if (nd != d->idom[b]) {
				d->idom[b] = nd;
				changed = true;
			}
		}
	}
}

static bool dominates(const struct doms *d, uint32_t n, uint32_t s)
{
	for (uint32_t x = s; x != d->nb && x != UNDEF; x = d->idom[x])
		if (x == n)
			return true;
	return false;
}

int x86_cfg_implied_blocks(const struct x86_analysis *a, uint32_t (*via)[2])
{
	size_t nb = a->nblocks;
	struct doms d = { .nb = nb };
	d.succ = malloc(nb * sizeof(*d.succ));
	d.leaves = malloc(nb * sizeof(*d.leaves));
	d.root = calloc(nb, sizeof(*d.root));
	d.pred0 = calloc(nb + 2, sizeof(*d.pred0));
	d.preds = malloc((2 * nb + 1) * sizeof(*d.preds));
	d.order = malloc((nb + 1) * sizeof(*d.order));
	d.po = malloc((nb + 1) * sizeof(*d.po));
	d.idom = malloc((nb + 1) * sizeof(*d.idom));
	bool *foreign = calloc(nb, sizeof(*foreign));
	uint32_t *ind = NULL;
	size_t nind = 0;
	int err = -ENOMEM;
	memset(via, 0, nb * sizeof(*via));
	/* code outside enters the middle unseen (jumps back from functions
	 * that could not be read): none */
	bool table_out = false;   /* a jump table leads out (to a .cold part) */
	for (size_t t = 0; t < a->ntables; t++)
		for (size_t e = 0; e < a->tables[t].n; e++)
			table_out |= !cfg_inside(a, a->tables[t].targets[e]);
	if (!a->env->foreign_known || table_out) {
		err = 0;
		goto out;
	}
	if (!foreign || !d.succ || !d.leaves || !d.root || !d.pred0 || !d.preds || !d.order || !d.po || !d.idom ||
	    x86_cfg_indirect_targets(a, &ind, &nind))
		goto out;
	d.root[0] = true;
	for (size_t k = 0; k < nind; k++)
		d.root[a->block_of[ind[k]]] = true;
	for (size_t k = 0; k < a->env->nforeign; k++) {   /* roots, and probed: entered in the middle */
		long i = cfg_index_at(a, a->env->foreign[k]);
		if (i < 0 && cfg_inside(a, a->env->foreign[k])) {   /* inside an instruction */
			err = 0;
			goto out;
		}
		if (i >= 0)
			d.root[a->block_of[i]] = foreign[a->block_of[i]] = true;
	}
	for (size_t b = 0; b < nb; b++) {
		x86_cfg_block_succs(a, b, true, d.succ[b], &d.leaves[b]);
		for (int k = 0; k < 2; k++)
			if (d.succ[b][k] != UNDEF)
				d.pred0[d.succ[b][k] + 2]++;
	}
	for (size_t b = 0; b < nb; b++)   /* counts to starts, then filled */
		d.pred0[b + 2] += d.pred0[b + 1];
	for (size_t b = 0; b < nb; b++)
		for (int k = 0; k < 2; k++)
			if (d.succ[b][k] != UNDEF)
				d.preds[d.pred0[d.succ[b][k] + 1]++] = (uint32_t)b;
	if (!postorder(&d))
		goto out;
	dominators(&d);
	for (size_t b = 0; b < nb; b++) {
		uint32_t *s = d.succ[b];
		bool ok = !d.leaves[b] && !foreign[b] && s[0] != UNDEF;
		for (int k = 0; k < 2 && ok; k++)
			ok = s[k] == UNDEF || (s[k] != b && dominates(&d, (uint32_t)b, s[k]));
		size_t end = b + 1 < nb ? a->block_first[b + 1] : a->n;
		for (size_t i = a->block_first[b]; i < end && ok; i++)
			ok = a->insns[i].kind != X86_CALL && a->insns[i].kind != X86_ICALL && !x86_system_call(a, &a->insns[i]);
		if (ok) {
			via[b][0] = s[0] + 1;
			via[b][1] = s[1] == UNDEF ? 0 : s[1] + 1;
		}
	}
	err = 0;
out:
	free(foreign);
	free(ind);
	free(d.succ);
	free(d.leaves);
	free(d.root);
	free(d.pred0);
	free(d.preds);
	free(d.order);
	free(d.po);
	free(d.idom);
	return err;
}
