/* An image's sampled stacks into the profile: the sampler's tree of
 * program counters becomes a tree of functions per thread (the calls of
 * one function merged), each node with the samples taken exactly there.
 * A counter outside every function of the image's modules (JIT code, the
 * vdso) is "[unknown]", a sample taken in the kernel "[kernel]". */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <reticle/profile.h>
#include "engine/engine.h"
#include "os/linux/os.h"
#include "probe/plan.h"
#include "sample/sample.h"
#include "util/array.h"
#include "util/log.h"

struct fctx {
	uint32_t parent;          /* UINT32_MAX at a root */
	int tid;
	int64_t function;
	uint64_t samples;
	double weight;
};

struct writer {
	struct proc *p;
	rtl_profile *prof;
	struct fctx *c;
	size_t n, cap;
	uint32_t *index;
	size_t index_size;
	int64_t unknown, kernel, vdso;  /* pseudo functions' rows, -1 before */
	/* files the engine does not know (sample alone): rows by binary and
	 * function index */
	const struct sample_tree *t;
	struct { const char *path; rtl_binary *bin; int64_t module; } *files;
	size_t nfiles, capfiles;
	struct { rtl_binary *bin; size_t index; int64_t id; } *rows;
	size_t nrows, caprows;
};

static uint64_t key_hash(uint32_t parent, int tid, int64_t function)
{
	uint64_t h = ((uint64_t)function * 0x9e3779b97f4a7c15ull) ^ ((uint64_t)parent << 20) ^ (uint64_t)tid;
	return h ^ (h >> 31);
}

static int grow_index(struct writer *w)
{
	size_t size = w->index_size ? w->index_size * 2 : 256;
	uint32_t *ix = malloc(size * sizeof(*ix));
	if (!ix)
		return -ENOMEM;
	memset(ix, 0xff, size * sizeof(*ix));
	for (size_t i = 0; i < w->n; i++) {
		size_t h = key_hash(w->c[i].parent, w->c[i].tid, w->c[i].function) & (size - 1);
		while (ix[h] != UINT32_MAX)
			h = (h + 1) & (size - 1);
		ix[h] = (uint32_t)i;
	}
	free(w->index);
	w->index = ix;
	w->index_size = size;
	return 0;
}

static uint32_t ctx_of(struct writer *w, uint32_t parent, int tid, int64_t function)
{
	if ((w->n + 1) * 2 > w->index_size && grow_index(w))
		return UINT32_MAX;
	size_t mask = w->index_size - 1, h = key_hash(parent, tid, function) & mask;
	for (; w->index[h] != UINT32_MAX; h = (h + 1) & mask) {
		const struct fctx *c = &w->c[w->index[h]];
		if (c->parent == parent && c->tid == tid && c->function == function)
			return w->index[h];
	}
	if (rtl_grow(&w->c, &w->cap, w->n + 1, sizeof(*w->c)))
		return UINT32_MAX;
	w->c[w->n] = (struct fctx){ parent, tid, function, 0, 0 };
	w->index[h] = (uint32_t)w->n;
	return (uint32_t)w->n++;
}

static int pseudo(struct writer *w, const char *name, int64_t *id)
{
	int64_t mod;
	if (*id >= 0)
		return 0;
	int err = rtl_profile_add_process_module(w->prof, w->p->image, name, 0, &mod);
	return err ? err : rtl_profile_add_function(w->prof, mod, name, 0, 0, 0, "no function of a file", id);
}

/* The row of the function at PC in a file the sampler saw mapped, or 1
 * when there is none. */
static int mapped_function(struct writer *w, uint64_t pc, int64_t *id)
{
	const struct sample_map *m = NULL;
	for (size_t i = 0; i < w->t->nmaps && !m; i++)
		if (pc >= w->t->maps[i].start && pc < w->t->maps[i].end)
			m = &w->t->maps[i];
	if (m && m->path[0] == '[') {   /* [vdso] */
		int64_t *slot = &w->vdso;
		int err = pseudo(w, m->path, slot);
		*id = *slot;
		return err;
	}
	rtl_binary *bin = m ? session_binary_seen(w->p->s, m->path) : NULL;
	const rtl_function *f = bin ? rtl_binary_find_function(bin, pc - m->bias) : NULL;
	if (!f)
		return 1;
	size_t index = (size_t)(f - rtl_binary_function(bin, 0));
	for (size_t i = 0; i < w->nrows; i++)
		if (w->rows[i].bin == bin && w->rows[i].index == index) {
			*id = w->rows[i].id;
			return 0;
		}
	size_t k = 0;
	while (k < w->nfiles && w->files[k].bin != bin)
		k++;
	int err = 0;
	if (k == w->nfiles) {
		if (rtl_grow(&w->files, &w->capfiles, w->nfiles + 1, sizeof(*w->files)))
			return -ENOMEM;
		w->files[k].bin = bin;
		w->files[k].path = m->path;
		if ((err = rtl_profile_add_process_module(w->prof, w->p->image, m->path, m->bias, &w->files[k].module)))
			return err;
		w->nfiles++;
	}
	if (rtl_grow(&w->rows, &w->caprows, w->nrows + 1, sizeof(*w->rows)) ||
	    (err = rtl_profile_add_function(w->prof, w->files[k].module, f->name, f->addr, f->size, 0,
					    "sampled only", id)))
		return err ? err : -ENOMEM;
	w->rows[w->nrows++] = (typeof(*w->rows)){ bin, index, *id };
	return 0;
}

/* The profile row of the function at run-time PC. */
static int function_of(struct writer *w, uint64_t pc, int64_t *id)
{
	if (pc == SAMPLE_PC_KERNEL)
		return pseudo(w, "[kernel]", &w->kernel) ? -ENOMEM : (*id = w->kernel, 0);
	struct module *m;
	const rtl_function *f = proc_function_at(w->p, pc, &m);
	if (!f) {
		int err = mapped_function(w, pc, id);
		if (err <= 0)
			return err;
		err = pseudo(w, "[unknown]", &w->unknown);
		*id = w->unknown;
		return err;
	}
	struct func_state *fs = &m->fs[f - rtl_binary_function(m->bin, 0)];
	int err = finish_function_row(w->p, m, f, fs, w->prof,
				      session_instruments(w->p->s) ? "not relocated" : "sampled only");
	*id = fs->profile_id;
	return err;
}

/* W's paths into PROF as the image's samples rows: ids numbered in the
 * image (callers first), then W's memory freed. */
static int write_rows(struct writer *w, int err)
{
	uint64_t base = (uint64_t)w->p->image << 32;
	for (size_t k = 0; !err && k < w->n; k++) {
		const struct fctx *c = &w->c[k];
		rtl_profile_sample row = { base | (k + 1), c->parent == UINT32_MAX ? 0 : base | (c->parent + 1),
					   c->function, c->tid, c->samples, c->weight };
		err = rtl_profile_add_sample(w->prof, &row);
	}
	free(w->c);
	free(w->index);
	free(w->files);
	free(w->rows);
	return err;
}

int samples_write(struct proc *p, rtl_profile *prof)
{
	struct sampler *smp = session_sampler(p->s);
	if (!smp)
		return 0;
	struct sample_tree t;
	int err = sampler_take(smp, p->pid, p->exec_gen, &t);
	return err ? err : samples_write_tree(p, prof, &t);
}

int samples_write_tree(struct proc *p, rtl_profile *prof, struct sample_tree *tree)
{
	struct sample_tree t = *tree;
	int err = 0;
	struct writer w = { .p = p, .prof = prof, .unknown = -1, .kernel = -1, .vdso = -1, .t = &t };
	uint32_t *at = t.count ? malloc(t.count * sizeof(*at)) : NULL;
	if (t.count && !at)
		err = -ENOMEM;
	/* the same counter is met again and again: its row, by a small memo */
	enum { MEMO = 4096 };
	uint64_t *memo_pc = calloc(MEMO, sizeof(*memo_pc));
	int64_t *memo_id = calloc(MEMO, sizeof(*memo_id));
	if (!memo_pc || !memo_id)
		err = -ENOMEM;
	for (size_t i = 0; !err && i < t.count; i++) {
		const struct sample_node *n = &t.n[i];
		bool root = n->parent == UINT32_MAX;
		int64_t fid = -1;
		uint64_t pc = n->pc;
		size_t slot = (size_t)((pc * 0x9e3779b97f4a7c15ull) >> 52) & (MEMO - 1);
		if (root) {   /* a thread: no function, but samples with no frame at all */
			at[i] = UINT32_MAX;
			if (!n->self)
				continue;
			err = pseudo(&w, "[unknown]", &w.unknown);
			fid = w.unknown;
		} else if (memo_pc[slot] == pc && pc) {
			fid = memo_id[slot];
		} else if (!(err = function_of(&w, pc, &fid))) {
			memo_pc[slot] = pc;
			memo_id[slot] = fid;
		}
		uint32_t parent = root ? UINT32_MAX : at[n->parent];
		uint32_t c = err ? UINT32_MAX : ctx_of(&w, parent, n->tid, fid);
		if (c == UINT32_MAX) {
			err = err ? err : -ENOMEM;
			break;
		}
		w.c[c].samples += n->self;
		w.c[c].weight += (double)n->self_weight;
		if (!root)
			at[i] = c;
	}
	err = write_rows(&w, err);
	free(memo_pc);
	free(memo_id);
	free(at);
	sample_tree_free(tree);
	return err;
}

/* ---- the shim collector's samples ---- */

struct entry_ref {
	uint64_t entry;           /* a copy's run-time address */
	uint32_t mod, fn;
};

static int by_entry_ref(const void *a, const void *b)
{
	const struct entry_ref *x = a, *y = b;
	return (x->entry > y->entry) - (x->entry < y->entry);
}

/* The copies of P by entry: what the signals name. */
static struct entry_ref *copies_by_entry(struct proc *p, size_t *n)
{
	struct entry_ref *v = NULL;
	size_t cap = 0;
	*n = 0;
	for (size_t i = 0; i < p->nmods; i++) {
		size_t nf = rtl_binary_function_count(p->mods[i].bin);
		for (size_t k = 0; k < nf; k++)
			if (p->mods[i].fs[k].status == FS_DONE && p->mods[i].fs[k].entry) {
				if (rtl_grow(&v, &cap, *n + 1, sizeof(*v))) {
					free(v);
					return NULL;
				}
				v[(*n)++] = (struct entry_ref){ p->mods[i].fs[k].entry, (uint32_t)i, (uint32_t)k };
			}
	}
	if (*n)
		qsort(v, *n, sizeof(*v), by_entry_ref);
	return v;
}

int shim_write(struct proc *p, rtl_profile *prof)
{
	struct shim *sh = session_shim(p->s);
	if (!sh)
		return 0;
	struct shim_counts sc;
	int err = shim_take(sh, p->pid, p->exec_gen, &sc);
	if (!prof || err || (!sc.n && !sc.nruns)) {
		shim_counts_free(&sc);
		return err;
	}
	size_t ncopies;
	struct entry_ref *copies = copies_by_entry(p, &ncopies);
	struct writer w = { .p = p, .prof = prof, .unknown = -1, .kernel = -1, .vdso = -1 };
	double hz = p->tsc_hz > 0 ? p->tsc_hz : 1e9;
	for (size_t i = 0; !err && i < sc.n; i++) {
		const struct shim_count *c = &sc.c[i];
		struct entry_ref key = { c->value, 0, 0 }, *at = ncopies ?
			bsearch(&key, copies, ncopies, sizeof(key), by_entry_ref) : NULL;
		struct entry_ref by_id;
		size_t k;
		for (size_t mi = 0; !at && mi < p->nmods; mi++)   /* the one-store form: its id */
			if (probe_signal_of(p->mods[mi].bin, c->value, &k)) {
				by_id = (struct entry_ref){ c->value, (uint32_t)mi, (uint32_t)k };
				at = &by_id;
			}
		int64_t fid;
		if (at) {
			struct module *m = &p->mods[at->mod];
			err = finish_function_row(p, m, rtl_binary_function(m->bin, at->fn), &m->fs[at->fn], prof,
						  "not relocated");
			fid = m->fs[at->fn].profile_id;
		} else {   /* no signal yet (the loader, code not relocated) */
			err = pseudo(&w, "[unknown]", &w.unknown);
			fid = w.unknown;
		}
		uint32_t x = err ? UINT32_MAX : ctx_of(&w, UINT32_MAX, c->tid, fid);
		if (x == UINT32_MAX) {
			err = err ? err : -ENOMEM;
			break;
		}
		w.c[x].samples += c->samples;
		w.c[x].weight += (double)c->cycles / hz * 1e9;
	}
	err = write_rows(&w, err);   /* one root per thread and function */
	/* the program's own signal: each run until the thread's next one, or
	 * until now, when the image ends */
	uint64_t tsc0 = session_tsc0(p->s), now = os_tsc();
	for (size_t i = 0; !err && i < sc.nruns; i++) {
		const struct shim_run *r = &sc.runs[i];
		uint64_t end = i + 1 < sc.nruns && sc.runs[i + 1].tid == r->tid ? sc.runs[i + 1].tsc : now;
		if (!r->value)
			continue;   /* no signal */
		rtl_profile_signal_run row = { p->image, r->tid, r->value,
					       (uint64_t)((double)(r->tsc - tsc0) / hz * 1e9),
					       (uint64_t)((double)(end - tsc0) / hz * 1e9) };
		err = rtl_profile_add_signal_run(prof, &row);
	}
	if (!err && sc.runs_dropped)
		rtl_warn("pid %d: %llu changes of the program's signal beyond 2^20 a thread are left out",
			 (int)p->pid, (unsigned long long)sc.runs_dropped);
	free(copies);
	shim_counts_free(&sc);
	return err;
}
