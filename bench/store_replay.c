/* Profile store write cost on a real profile: reads IN.db (e.g. from
 * `reticle run -c fcount,bbcount`) and writes it again to OUT.db through
 * the API in the engine's order (src/engine/finish.c: all modules and
 * functions, then per function fcount's counts, bbcount's blocks, call
 * sites, metrics (bbcount's rep iterations) and instruction count). Ids come out as in IN.db, so both files
 * dump the same rows; under callgrind it gives the write cost of a real
 * profile's mix of rows: valgrind --tool=callgrind
 * --toggle-collect=write_profile counts the writing alone.
 *
 *   bench_store_replay IN.db OUT.db */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <reticle/error.h>
#include <reticle/profile.h>

/* Everything IN.db holds, strings copied (the read side's are transient). */
struct rows {
	rtl_profile_module *mods;
	rtl_profile_function *fns;
	rtl_profile_block *blocks;
	rtl_profile_call *calls;
	rtl_profile_metric *metrics;     /* names copied */
	char **meta;                 /* key, value, key, value, ... */
	rtl_profile_process *procs;
	size_t nmods, nfns, nblocks, ncalls, nmeta, nprocs, nmetrics;
};

static void *grow(void *v, size_t n, size_t size)
{
	if (n & (n - 1))
		return v;            /* room left: capacities are powers of two */
	v = realloc(v, (n ? 2 * n : 1) * size);
	if (!v)
		exit(3);
	return v;
}

static char *dup(const char *s)
{
	return s ? strdup(s) : NULL;
}

static int read_meta(const char *key, const char *value, void *user)
{
	struct rows *r = user;

	if (!strcmp(key, "schema_version"))
		return 0;            /* the store's own */
	r->meta = grow(r->meta, r->nmeta, 2 * sizeof(*r->meta));
	r->meta[2 * r->nmeta] = dup(key);
	r->meta[2 * r->nmeta++ + 1] = dup(value);
	return 0;
}

static int read_process(const rtl_profile_process *pr, void *user)
{
	struct rows *r = user;

	r->procs = grow(r->procs, r->nprocs, sizeof(*pr));
	r->procs[r->nprocs] = *pr;
	r->procs[r->nprocs].kind = dup(pr->kind);
	r->procs[r->nprocs++].command = dup(pr->command);
	return 0;
}

static int read_module(const rtl_profile_module *m, void *user)
{
	struct rows *r = user;

	r->mods = grow(r->mods, r->nmods, sizeof(*m));
	r->mods[r->nmods] = *m;
	r->mods[r->nmods++].path = dup(m->path);
	return 0;
}

static int read_function(const rtl_profile_function *f, void *user)
{
	struct rows *r = user;
	rtl_profile_function *c;

	r->fns = grow(r->fns, r->nfns, sizeof(*f));
	c = &r->fns[r->nfns++];
	*c = *f;
	c->name = dup(f->name);
	c->reason = dup(f->reason);
	return 0;
}

static int read_block(const rtl_profile_block *b, void *user)
{
	struct rows *r = user;

	r->blocks = grow(r->blocks, r->nblocks, sizeof(*b));
	r->blocks[r->nblocks++] = *b;
	return 0;
}

static int read_call(const rtl_profile_call *c, void *user)
{
	struct rows *r = user;

	r->calls = grow(r->calls, r->ncalls, sizeof(*c));
	r->calls[r->ncalls++] = *c;
	return 0;
}

static int read_metric(const rtl_profile_metric *m, void *user)
{
	struct rows *r = user;

	r->metrics = grow(r->metrics, r->nmetrics, sizeof(*m));
	r->metrics[r->nmetrics] = *m;
	r->metrics[r->nmetrics++].name = dup(m->name);
	return 0;
}

static int by_function(const void *a, const void *b)
{
	const rtl_profile_metric *x = a, *y = b;

	if (x->function != y->function)
		return (x->function > y->function) - (x->function < y->function);
	return (x->site > y->site) - (x->site < y->site);
}

static int by_id(const void *a, const void *b)
{
	const rtl_profile_function *x = a, *y = b;

	return (x->id > y->id) - (x->id < y->id);
}

static int read_rows(const char *path, struct rows *r)
{
	rtl_profile *p;
	int err = rtl_profile_open(path, &p);

	if (err)
		return err;
	/* a profile of one process image (several would read merged) */
	if (!(err = rtl_profile_foreach_meta(p, read_meta, r)) &&
	    !(err = rtl_profile_foreach_process(p, read_process, r)) &&
	    !(err = rtl_profile_foreach_module(p, read_module, r)) &&
	    !(err = rtl_profile_foreach_function_by_addr(p, 1, read_function, r)) &&
	    !(err = rtl_profile_foreach_block(p, -1, read_block, r)))
		err = rtl_profile_foreach_call(p, read_call, r);
	if (!err)
		err = rtl_profile_foreach_metric(p, read_metric, r);
	rtl_profile_close(p);
	qsort(r->fns, r->nfns, sizeof(*r->fns), by_id);
	qsort(r->metrics, r->nmetrics, sizeof(*r->metrics), by_function);
	return err;
}

/* Blocks and calls are sorted by function, so each function's are a run. */
static int write_rows(rtl_profile *p, const struct rows *r)
{
	size_t b = 0, c = 0, m = 0;
	int64_t id;
	int err = 0;

	for (size_t i = 0; i < r->nmeta && !err; i++)
		err = rtl_profile_set_meta(p, r->meta[2 * i], r->meta[2 * i + 1]);
	for (size_t i = 0; i < r->nprocs && !err; i++)
		err = rtl_profile_add_process(p, &r->procs[i]);
	for (size_t i = 0; i < r->nmods && !err; i++)
		if (!(err = rtl_profile_add_process_module(p, r->mods[i].process, r->mods[i].path,
							   r->mods[i].load_bias, &id)) &&
		    id != r->mods[i].id)
			return -RTL_ERR_STORE;
	for (size_t i = 0; i < r->nfns && !err; i++) {
		const rtl_profile_function *f = &r->fns[i];

		if (!(err = rtl_profile_add_function(p, f->module_id, f->name, f->addr, f->size,
						     f->instrumented, f->reason, &id)) && id != f->id)
			return -RTL_ERR_STORE;
	}
	for (size_t i = 0; i < r->nfns && !err; i++) {
		const rtl_profile_function *f = &r->fns[i];

		if (f->have & RTL_HAVE_CALLS)
			err = rtl_profile_set_function_counts(p, f->id, RTL_HAVE_CALLS, f->calls, 0);
		for (; b < r->nblocks && r->blocks[b].function == f->id && !err; b++)
			err = rtl_profile_add_block(p, f->id, r->blocks[b].addr, r->blocks[b].ninstrs,
						    r->blocks[b].count);
		for (; c < r->ncalls && r->calls[c].caller == f->id && !err; c++)
			err = rtl_profile_add_call(p, f->id, r->calls[c].site, r->calls[c].callee,
						   r->calls[c].count);
		for (; m < r->nmetrics && r->metrics[m].function == f->id && !err; m++)
			err = rtl_profile_add_metric(p, f->id, r->metrics[m].name, r->metrics[m].site,
						     r->metrics[m].value);
		if (!err && (f->have & RTL_HAVE_INSTRS))
			err = rtl_profile_set_function_counts(p, f->id, RTL_HAVE_INSTRS, 0, f->instrs);
	}
	return err;
}

/* From create to close: what the engine's proc_write_profile costs. */
__attribute__((noinline)) int write_profile(const char *path, const struct rows *r)
{
	rtl_profile *p;
	int err = rtl_profile_create(path, &p);

	if (err)
		return err;
	if (!(err = write_rows(p, r)))
		err = rtl_profile_commit(p);
	rtl_profile_close(p);
	return err;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	struct rows r = { 0 };
	double t0, t1;
	int err;

	if (argc != 3) {
		fprintf(stderr, "usage: bench_store_replay IN.db OUT.db\n");
		return 2;
	}
	if ((err = read_rows(argv[1], &r))) {
		fprintf(stderr, "bench_store_replay: %s: %s\n", argv[1], rtl_strerror(err));
		return 1;
	}
	t0 = now();
	err = write_profile(argv[2], &r);
	t1 = now();
	if (err) {
		fprintf(stderr, "bench_store_replay: %s: %s\n", argv[2], rtl_strerror(err));
		return 1;
	}
	printf("wrote %zu modules, %zu functions, %zu blocks, %zu call sites in %.2f ms\n",
	       r.nmods, r.nfns, r.nblocks, r.ncalls, (t1 - t0) * 1e3);
	return 0;
}
