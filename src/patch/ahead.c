/* Decoding ahead in a cold run: while the program runs between traps, a
 * helper thread decodes the functions it is likely to call next, so that a
 * trap finds its function's instructions ready (decoding is two thirds of
 * relocating, and the second CPU is idle while reticle and the program
 * take turns on the first).
 *
 * Decoding depends on a binary's bytes only: the helper works on the
 * session's binaries (which live as long as the session), never on a
 * process, and keeps its results per binary and function, packed without
 * addresses (x86_pack); a trap takes them with one atomic exchange. First
 * come the callees that new copies call (a copy's branches to functions
 * still waiting for their first call), then every function of the modules
 * with no warm-start list, in address order, up to a memory bound. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "engine/engine.h"
#include "isa/x86_64/insn.h"
#include "isa/x86_64/relocate.h"
#include "os/linux/os.h"
#include "util/array.h"
#include "util/log.h"
#include "util/thread.h"

enum { MAX_BYTES = 32 << 20 };   /* decoded and not taken yet */

struct pre_fn {
	uint32_t n;
	struct x86_packed v[];
};

/* slot values besides a result */
#define CLAIMED ((struct pre_fn *)1)   /* the helper is decoding it */
#define TAKEN ((struct pre_fn *)2)     /* a trap came first: never again */

struct pre_bin {
	const rtl_binary *bin;
	_Atomic(struct pre_fn *) *slot;
	size_t n;
	size_t next;              /* the sweep's next function; n when not sweeping */
};

struct predecode {
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t wake;
	bool stop;
	struct pre_bin **bins;    /* each allocated once: items point at them */
	size_t nbins, capbins;
	struct { struct pre_bin *pb; uint32_t k; } *want;   /* a stack: newest first */
	size_t nwant, capwant;
	atomic_size_t bytes;      /* held by results not taken */
	atomic_size_t decoded, used, raced;   /* for the debug log */
	const struct os_cpus *cpus;
};

static struct pre_fn *decode(const rtl_binary *bin, size_t k)
{
	const rtl_function *f = rtl_binary_function(bin, k);
	uint8_t *code = f->size ? malloc(f->size) : NULL;
	struct x86_insn *v = NULL;
	size_t n = 0;
	struct pre_fn *r = NULL;
	if (code && !rtl_binary_read(bin, f->addr, code, f->size)) {
		x86_decode_function(code, f->size, f->addr, &v, &n);
		r = malloc(sizeof(*r) + (n ? n : 1) * sizeof(r->v[0]));
		bool ok = r != NULL;
		for (size_t i = 0; ok && i < n; i++)
			ok = x86_pack(&v[i], &r->v[i]);
		if (ok)
			r->n = (uint32_t)n;
		else
			free(r), r = NULL;
	}
	free(code);
	free(v);
	return r;
}

static void run_item(struct predecode *pd, struct pre_bin *pb, size_t k)
{
	struct pre_fn *expect = NULL;
	if (!atomic_compare_exchange_strong(&pb->slot[k], &expect, CLAIMED))
		return;
	struct pre_fn *r = decode(pb->bin, k);
	expect = CLAIMED;
	if (!r) {
		atomic_compare_exchange_strong(&pb->slot[k], &expect, TAKEN);
		return;
	}
	size_t bytes = sizeof(*r) + r->n * sizeof(r->v[0]);
	atomic_fetch_add(&pd->bytes, bytes);
	atomic_fetch_add(&pd->decoded, 1);
	if (!atomic_compare_exchange_strong(&pb->slot[k], &expect, r)) {
		atomic_fetch_sub(&pd->bytes, bytes);   /* its trap came meanwhile */
		free(r);
	}
}

static void *helper(void *arg)
{
	struct predecode *pd = arg;
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

struct predecode *predecode_new(const struct os_cpus *cpus)
{
	struct predecode *pd = calloc(1, sizeof(*pd));
	if (!pd)
		return NULL;
	pd->cpus = cpus;
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

bool predecode_free(struct predecode *pd)
{
	if (!pd)
		return true;
	pthread_mutex_lock(&pd->lock);
	pd->stop = true;
	pthread_cond_signal(&pd->wake);
	pthread_mutex_unlock(&pd->lock);
	/* an idle-priority thread may wait long for a CPU on a busy machine:
	 * normal priority to finish the function it is decoding (not allowed
	 * to every user), and at worst it is left to finish alone, with its
	 * memory and the binaries it reads (the caller's) never freed */
	struct sched_param normal = { 0 };
	pthread_setschedparam(pd->thread, SCHED_OTHER, &normal);
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_nsec += 200 * 1000000L;
	if (until.tv_nsec >= 1000000000L)
		until.tv_sec++, until.tv_nsec -= 1000000000L;
	if (pthread_timedjoin_np(pd->thread, NULL, &until)) {
		rtl_debug("decoding thread still busy: left to finish");
		return false;
	}
	rtl_debug("decoded ahead: %zu functions, %zu of them used, %zu while the helper was on them",
		  atomic_load(&pd->decoded), atomic_load(&pd->used), atomic_load(&pd->raced));
	for (size_t i = 0; i < pd->nbins; i++) {
		struct pre_bin *pb = pd->bins[i];
		for (size_t k = 0; k < pb->n; k++) {
			struct pre_fn *r = atomic_load(&pb->slot[k]);
			if (r != CLAIMED && r != TAKEN)
				free(r);
		}
		free(pb->slot);
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
static struct pre_bin *bin_of(struct predecode *pd, const rtl_binary *bin, bool make)
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
	*pb = (struct pre_bin){ .bin = bin, .slot = slot, .n = n, .next = n };
	pd->bins[pd->nbins++] = pb;
	return pb;
}

void predecode_want(struct predecode *pd, const rtl_binary *bin, size_t k)
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

void predecode_sweep(struct predecode *pd, const rtl_binary *bin)
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

bool predecode_take(struct predecode *pd, const rtl_binary *bin, size_t k, uint64_t addr,
		    struct x86_insn **out, size_t *n)
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
	atomic_fetch_sub(&pd->bytes, sizeof(*r) + r->n * sizeof(r->v[0]));
	struct x86_insn *v = malloc((r->n ? r->n : 1) * sizeof(*v));
	if (v) {
		for (uint32_t i = 0; i < r->n; i++) {
			x86_unpack(&r->v[i], addr, &v[i]);
			addr += v[i].len;
		}
		*out = v;
		*n = r->n;
	}
	free(r);
	return v != NULL;
}
