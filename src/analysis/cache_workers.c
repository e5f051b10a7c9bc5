/* The bank's engines shared out among threads (rtl_cachesim_set_threads).
 * Engines form independent groups: an engine with the engines whose
 * streams it reads (a lower level with the first levels above it; a split
 * L1's pair together; an inclusive level with the levels it invalidates,
 * which are its sources). Groups go to the threads heaviest first, each to
 * the least loaded, by an engine's expected cost per pushed access: a
 * first level sees every access, a lower one a few percent, and a lookup
 * costs about the depth of its stack. A push then runs every thread's
 * groups at once over the same chunk; the caller's thread is worker 0. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include "cache_bank.h"
#include "util/thread.h"

enum { MAX_WORKERS = 8 };

struct cs_workers {
	int n;
	pthread_t thread[MAX_WORKERS];
	pthread_mutex_t lock;
	pthread_cond_t go, done;
	/* the job: the chunk, its generation, and how many threads have
	 * finished it */
	rtl_cachesim *b;
	const rtl_access *a;
	size_t len;
	void (*run)(rtl_cachesim *b, const rtl_access *a, size_t n, int worker);
	uint64_t gen;
	int finished;
	int quit;
};

struct helper_arg {
	struct cs_workers *w;
	int id;
};

static int find(int *parent, int i)
{
	while (parent[i] != i)
		i = parent[i] = parent[parent[i]];
	return i;
}

static void join(int *parent, int i, int j)
{
	parent[find(parent, i)] = find(parent, j);
}

static int index_of(const rtl_cachesim *b, const struct cs_engine *e)
{
	for (int i = 0; i < b->neng; i++)
		if (b->eng[i] == e)
			return i;
	return -1;
}

/* Each engine's worker (0..N-1) in cs_engine.worker; returns how many
 * groups there are. */
static int share_out(rtl_cachesim *b, int n)
{
	int ne = b->neng, groups = 0;
	int *parent = malloc(ne * sizeof(*parent));
	double *cost = calloc(ne, sizeof(*cost)), load[MAX_WORKERS] = { 0 };
	if (!parent || !cost) {
		free(parent);
		free(cost);
		return 0;
	}
	for (int i = 0; i < ne; i++)
		parent[i] = i;
	for (int i = 0; i < ne; i++) {
		const struct cs_engine *e = b->eng[i];
		for (int s = 0; s < 2; s++)
			if (e->src[s])
				join(parent, i, index_of(b, e->src[s]->eng));
		if (e->pair >= 0)
			join(parent, i, e->pair);
		for (int c = 0; c < e->ncons; c++)
			for (int u = 0; u < 2; u++)
				if (e->cons[c]->upper[u])
					join(parent, i, index_of(b, e->cons[c]->upper[u]->eng));
	}
	for (int i = 0; i < ne; i++) {
		const struct cs_engine *e = b->eng[i];
		cost[find(parent, i)] += (e->src[0] ? 0.05 : 1.0) * (4.0 + e->A);
	}
	for (int i = 0; i < ne; i++)
		groups += find(parent, i) == i;
	/* heaviest group first, to the least loaded worker */
	for (;;) {
		int best = -1;
		for (int i = 0; i < ne; i++)
			if (find(parent, i) == i && cost[i] >= 0 && (best < 0 || cost[i] > cost[best]))
				best = i;
		if (best < 0)
			break;
		int w = 0;
		for (int k = 1; k < n; k++)
			if (load[k] < load[w])
				w = k;
		load[w] += cost[best];
		cost[best] = -1;
		b->eng[best]->worker = w;
	}
	for (int i = 0; i < ne; i++)
		b->eng[i]->worker = b->eng[find(parent, i)]->worker;
	free(parent);
	free(cost);
	return groups;
}

static void *helper(void *arg)
{
	struct helper_arg h = *(struct helper_arg *)arg;
	struct cs_workers *w = h.w;
	uint64_t seen = 0;
	free(arg);
	pthread_mutex_lock(&w->lock);
	for (;;) {
		while (w->gen == seen && !w->quit)
			pthread_cond_wait(&w->go, &w->lock);
		if (w->quit)
			break;
		seen = w->gen;
		pthread_mutex_unlock(&w->lock);
		w->run(w->b, w->a, w->len, h.id);
		pthread_mutex_lock(&w->lock);
		if (++w->finished == w->n - 1)
			pthread_cond_signal(&w->done);
	}
	pthread_mutex_unlock(&w->lock);
	return NULL;
}

struct cs_workers *cs_workers_start(rtl_cachesim *b, int threads)
{
	int n = threads < MAX_WORKERS ? threads : MAX_WORKERS;
	int groups = share_out(b, n);
	if (groups < 2) {
		for (int i = 0; i < b->neng; i++)
			b->eng[i]->worker = 0;
		return NULL;
	}
	if (n > groups)   /* (share_out gave no engine to the extra ones) */
		n = groups;
	struct cs_workers *w = calloc(1, sizeof(*w));
	if (!w)
		goto alone;
	pthread_mutex_init(&w->lock, NULL);
	pthread_cond_init(&w->go, NULL);
	pthread_cond_init(&w->done, NULL);
	w->n = 1;
	for (int k = 1; k < n; k++) {
		struct helper_arg *h = malloc(sizeof(*h));
		if (!h)
			break;
		*h = (struct helper_arg){ w, k };
		if (rtl_thread_start(&w->thread[k], helper, h)) {
			free(h);
			break;
		}
		w->n++;
	}
	if (w->n == n)
		return w;
	cs_workers_stop(w);
alone:   /* fewer threads than shared out for: every engine in the caller */
	for (int i = 0; i < b->neng; i++)
		b->eng[i]->worker = 0;
	return NULL;
}

void cs_workers_run(struct cs_workers *w, rtl_cachesim *b, const rtl_access *a, size_t n,
		    void (*run)(rtl_cachesim *b, const rtl_access *a, size_t n, int worker))
{
	pthread_mutex_lock(&w->lock);
	w->b = b;
	w->a = a;
	w->len = n;
	w->run = run;
	w->finished = 0;
	w->gen++;
	pthread_cond_broadcast(&w->go);
	pthread_mutex_unlock(&w->lock);
	run(b, a, n, 0);
	pthread_mutex_lock(&w->lock);
	while (w->finished < w->n - 1)
		pthread_cond_wait(&w->done, &w->lock);
	pthread_mutex_unlock(&w->lock);
}

void cs_workers_stop(struct cs_workers *w)
{
	if (!w)
		return;
	pthread_mutex_lock(&w->lock);
	w->quit = 1;
	pthread_cond_broadcast(&w->go);
	pthread_mutex_unlock(&w->lock);
	for (int k = 1; k < w->n; k++)
		pthread_join(w->thread[k], NULL);
	pthread_mutex_destroy(&w->lock);
	pthread_cond_destroy(&w->go);
	pthread_cond_destroy(&w->done);
	free(w);
}
