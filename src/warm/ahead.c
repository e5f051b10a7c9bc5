/* Copies made ahead in a cold run: while the program runs between traps, a
 * helper thread makes the copies of the functions it is likely to call
 * next, so that a trap only places one (decoding, analysing and emitting
 * are nearly all of relocating, and the second CPU is idle while reticle
 * and the program take turns on the first).
 *
 * Such a copy depends on a binary's bytes only (prepare.c): the helper
 * works on the session's binaries (which live as long as the session),
 * never on a process, and keeps its results per binary and function; a
 * trap takes one with an atomic exchange. First come the callees that new
 * copies call (a copy's branches to functions still waiting for their first
 * call), then every function of the modules with no warm-start list, in
 * address order, up to a memory bound. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "isa/x86_64/relocate.h"
#include "os/linux/os.h"
#include "util/array.h"
#include "util/log.h"
#include "util/thread.h"
#include "warm/warm.h"

enum { MAX_BYTES = 32 << 20 };   /* made and not taken yet */

struct pre_fn {
	size_t len;
	void *blob;
};

/* slot values besides a result */
#define CLAIMED ((struct pre_fn *)1)   /* the helper is making it */
#define TAKEN ((struct pre_fn *)2)     /* a trap came first: never again */

struct pre_bin {
	const rtl_binary *bin;
	_Atomic(struct pre_fn *) *slot;
	size_t n;
	size_t next;              /* the sweep's next function; n when not sweeping */
	struct x86_foreign_cache *foreign;   /* its functions' branches out, learnt once */
};

struct ahead {
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t wake;
	bool stop;
	struct pre_bin **bins;    /* each allocated once: items point at them */
	size_t nbins, capbins;
	struct { struct pre_bin *pb; uint32_t k; } *want;   /* a stack: newest first */
	size_t nwant, capwant;
	atomic_size_t bytes;      /* held by results not taken */
	atomic_size_t made, used, raced;   /* for the debug log */
	const struct os_cpus *cpus;
	const struct probe_set *probes;
};

static struct pre_fn *make(const struct ahead *pd, struct pre_bin *pb, size_t k)
{
	struct pre_fn *r = malloc(sizeof(*r));
	if (r && prepare_copy(pb->bin, k, pd->probes, pb->foreign, &r->blob, &r->len))
		free(r), r = NULL;
	return r;
}

static void run_item(struct ahead *pd, struct pre_bin *pb, size_t k)
{
	struct pre_fn *expect = NULL;
	if (!atomic_compare_exchange_strong(&pb->slot[k], &expect, CLAIMED))
		return;
	struct pre_fn *r = make(pd, pb, k);
	expect = CLAIMED;
	if (!r) {
		atomic_compare_exchange_strong(&pb->slot[k], &expect, TAKEN);
		return;
	}
	size_t bytes = sizeof(*r) + r->len;
	atomic_fetch_add(&pd->bytes, bytes);
	atomic_fetch_add(&pd->made, 1);
	if (!atomic_compare_exchange_strong(&pb->slot[k], &expect, r)) {
		atomic_fetch_sub(&pd->bytes, bytes);   /* its trap came meanwhile */
		free(r->blob);
		free(r);
	}
}

static void *helper(void *arg)
{
	struct ahead *pd = arg;
	if (pd->cpus)
		os_cpus_set(0, pd->cpus);
	/* only on an idle CPU: the program's own threads come first */
	struct sched_param idle = { 0 };
	pthread_setschedparam(pthread_self(), SCHED_IDLE, &idle);
	pthread_mutex_lock(&pd->lock);
	while (!pd->stop) {
		struct pre_bin *pb = NULL;
		size_t k = 0;
		if (pd->nwant) {
			pd->nwant--;
			pb = pd->want[pd->nwant].pb;
			k = pd->want[pd->nwant].k;
		} else if (atomic_load(&pd->bytes) < MAX_BYTES) {
			for (size_t i = 0; i < pd->nbins && !pb; i++)
				if (pd->bins[i]->next < pd->bins[i]->n) {
					pb = pd->bins[i];
					k = pb->next++;
				}
		}
		if (!pb) {
			pthread_cond_wait(&pd->wake, &pd->lock);
			continue;
		}
		pthread_mutex_unlock(&pd->lock);
		run_item(pd, pb, k);
		pthread_mutex_lock(&pd->lock);
	}
	pthread_mutex_unlock(&pd->lock);
	return NULL;
}

struct ahead *ahead_new(const struct os_cpus *cpus, const struct probe_set *probes)
{
	struct ahead *pd = calloc(1, sizeof(*pd));
	if (!pd)
		return NULL;
	pd->cpus = cpus;
	pd->probes = probes;
	pthread_mutex_init(&pd->lock, NULL);
	pthread_cond_init(&pd->wake, NULL);
	if (rtl_thread_start(&pd->thread, helper, pd)) {
		pthread_mutex_destroy(&pd->lock);
		pthread_cond_destroy(&pd->wake);
		free(pd);
		return NULL;
	}
	return pd;
}

void ahead_stop(struct ahead *pd)
{
	if (!pd)
		return;
	pthread_mutex_lock(&pd->lock);
	pd->stop = true;
	pthread_cond_signal(&pd->wake);
	pthread_mutex_unlock(&pd->lock);
	/* an idle-priority thread may wait long for a CPU on a busy machine:
	 * normal priority to finish the copy it is making (not allowed
	 * to every user) */
	struct sched_param normal = { 0 };
	pthread_setschedparam(pd->thread, SCHED_OTHER, &normal);
}

bool ahead_free(struct ahead *pd)
{
	if (!pd)
		return true;
	/* at worst the helper is left to finish alone, with its memory and the
	 * binaries it reads (the caller's) never freed */
	ahead_stop(pd);
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_nsec += 200 * 1000000L;
	if (until.tv_nsec >= 1000000000L)
		until.tv_sec++, until.tv_nsec -= 1000000000L;
	if (pthread_timedjoin_np(pd->thread, NULL, &until)) {
		rtl_debug("copying thread still busy: left to finish");
		return false;
	}
	rtl_debug("copies made ahead: %zu, %zu of them used, %zu while the helper was on them",
		  atomic_load(&pd->made), atomic_load(&pd->used), atomic_load(&pd->raced));
	for (size_t i = 0; i < pd->nbins; i++) {
		struct pre_bin *pb = pd->bins[i];
		for (size_t k = 0; k < pb->n; k++) {
			struct pre_fn *r = atomic_load(&pb->slot[k]);
			if (r && r != CLAIMED && r != TAKEN) {
				free(r->blob);
				free(r);
			}
		}
		free(pb->slot);
		x86_foreign_cache_free(pb->foreign);
		free(pb);
	}
	free(pd->bins);
	free(pd->want);
	pthread_mutex_destroy(&pd->lock);
	pthread_cond_destroy(&pd->wake);
	free(pd);
	return true;
}

/* BIN's record (with the lock held), made when first asked for. */
static struct pre_bin *bin_of(struct ahead *pd, const rtl_binary *bin, bool make)
{
	for (size_t i = 0; i < pd->nbins; i++)
		if (pd->bins[i]->bin == bin)
			return pd->bins[i];
	/* the loader writes into such text: its bytes are not the file's */
	if (!make || rtl_binary_has_textrel(bin) ||
	    rtl_grow(&pd->bins, &pd->capbins, pd->nbins + 1, sizeof(*pd->bins)))
		return NULL;
	size_t n = rtl_binary_function_count(bin);
	struct pre_bin *pb = malloc(sizeof(*pb));
	_Atomic(struct pre_fn *) *slot = calloc(n ? n : 1, sizeof(*slot));
	if (!pb || !slot) {
		free(pb);
		free(slot);
		return NULL;
	}
	*pb = (struct pre_bin){ .bin = bin, .slot = slot, .n = n, .next = n,
				.foreign = x86_foreign_cache_new(n) };
	pd->bins[pd->nbins++] = pb;
	return pb;
}

void ahead_want(struct ahead *pd, const rtl_binary *bin, size_t k)
{
	if (!pd)
		return;
	pthread_mutex_lock(&pd->lock);
	struct pre_bin *pb = bin_of(pd, bin, true);
	if (pb && k < pb->n && !atomic_load(&pb->slot[k]) &&
	    !rtl_grow(&pd->want, &pd->capwant, pd->nwant + 1, sizeof(*pd->want))) {
		pd->want[pd->nwant].pb = pb;
		pd->want[pd->nwant++].k = (uint32_t)k;
		pthread_cond_signal(&pd->wake);
	}
	pthread_mutex_unlock(&pd->lock);
}

void ahead_sweep(struct ahead *pd, const rtl_binary *bin)
{
	if (!pd)
		return;
	pthread_mutex_lock(&pd->lock);
	struct pre_bin *pb = bin_of(pd, bin, true);
	if (pb && pb->next == pb->n) {
		pb->next = 0;
		pthread_cond_signal(&pd->wake);
	}
	pthread_mutex_unlock(&pd->lock);
}

bool ahead_take(struct ahead *pd, const rtl_binary *bin, size_t k, void **blob, size_t *len)
{
	if (!pd)
		return false;
	pthread_mutex_lock(&pd->lock);
	struct pre_bin *pb = bin_of(pd, bin, false);
	pthread_mutex_unlock(&pd->lock);
	if (!pb || k >= pb->n)
		return false;
	struct pre_fn *r = atomic_exchange(&pb->slot[k], TAKEN);
	if (r == CLAIMED)
		atomic_fetch_add(&pd->raced, 1);
	if (!r || r == CLAIMED || r == TAKEN)
		return false;
	atomic_fetch_add(&pd->used, 1);
	atomic_fetch_sub(&pd->bytes, sizeof(*r) + r->len);
	*blob = r->blob;
	*len = r->len;
	free(r);
	return true;
}
