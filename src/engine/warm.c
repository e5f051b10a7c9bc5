/* Warm start: a binary's functions that ran in earlier runs are relocated in
 * one batch when the program reaches its entry point, instead of one trap
 * each on their first call.
 *
 * Per binary (keyed by rtl_binary_identity), the cache directory holds the
 * link-time entries of the functions that ran, each with the number of runs
 * since it last did; a function that has not run for MAX_AGE runs is
 * forgotten. The list only decides when functions are relocated, never how:
 * a stale or foreign list costs time (functions relocated that do not run,
 * or traps for those that do), not correctness. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include "elf/code_facts.h"
#include "engine/engine.h"
#include "os/linux/os.h"
#include "util/array.h"
#include "util/hash.h"
#include "util/log.h"
#include "util/thread.h"
#include "warm/fn_cache.h"

enum { MAX_AGE = 4, AGE_SHIFT = 56 };
static const uint64_t ADDR_MASK = (1ull << AGE_SHIFT) - 1;   /* an entry's address bits */
static const char magic[8] = "RTLWARM1";

struct warm_header {
	char magic[8];
	uint32_t count;     /* entries that follow: link-time address | age << AGE_SHIFT */
	uint32_t reserved;
};

/* M's file with SUFFIX in the session's cache (malloc'd), or NULL. */
static char *cache_path(const struct proc *p, const struct module *m, const char *suffix)
{
	const char *dir = session_warm_dir(p->s);
	return dir ? warm_file_path(dir, m->bin, suffix) : NULL;
}

/* A library's list as the program P runs it (malloc'd), or NULL for the
 * executable itself. A library's list of all programs (its "warm" file)
 * is the union of what they use: /bin/true relocated the 280 libc
 * functions python3 and gcc had run. Each program keeps its own list of
 * the library ("warm-<hash of the executable's identity>"); the union
 * serves a program that has none yet. */
static char *program_list_path(const struct proc *p, const struct module *m)
{
	if (m->is_main || !p->nmods || !p->mods[0].is_main)
		return NULL;
	char id[160], suffix[32];
	if (rtl_binary_identity(p->mods[0].bin, id, sizeof(id)))
		return NULL;
	snprintf(suffix, sizeof(suffix), "warm-%016llx",
		 (unsigned long long)fnv1a(FNV1A_INIT, id, strlen(id)));
	return cache_path(p, m, suffix);
}

/* The list as stored, or NULL (none yet, unreadable or malformed). */
static uint64_t *read_list(const char *path, size_t max, size_t *n)
{
	struct warm_header h;
	uint64_t *v = NULL;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	*n = 0;
	if (fd < 0)
		return NULL;
	struct stat st;
	if (read(fd, &h, sizeof(h)) != (ssize_t)sizeof(h) || memcmp(h.magic, magic, sizeof(magic)) ||
	    h.count > max || fstat(fd, &st) ||
	    (uint64_t)st.st_size != sizeof(h) + (uint64_t)h.count * sizeof(*v) ||
	    !(v = malloc((h.count ? h.count : 1) * sizeof(*v))) ||
	    read(fd, v, h.count * sizeof(*v)) != (ssize_t)(h.count * sizeof(*v))) {
		rtl_debug("%s: ignored (not a warm-start list of this binary)", path);
		free(v);
		close(fd);
		return NULL;
	}
	close(fd);
	*n = h.count;
	return v;
}

void warm_load(struct proc *p, struct module *m)
{
	if (m->win < 0)
		return;
	char *path = cache_path(p, m, "warm"), *mine = program_list_path(p, m);
	if (!path) {
		free(mine);
		return;
	}
	/* the program's own list of the library, else the library's */
	if (mine && (m->warm = read_list(mine, rtl_binary_function_count(m->bin), &m->nwarm)))
		warm_touch(mine, -1);
	else if ((m->warm = read_list(path, rtl_binary_function_count(m->bin), &m->nwarm)))
		warm_touch(path, -1);
	m->warm_pending = m->nwarm > 0;
	free(path);
	free(mine);
	dcache_open(m, session_warm_dir(p->s));
	ccache_open(m, session_warm_dir(p->s), session_probes(p->s),
		    p->original_returns_soft ? "rs" : p->original_returns ? "r" : "");
}

/* Decoding and analysis are most of relocating and read only the binaries
 * (lazy_decode): while the program is stopped for the batch, a helper
 * thread prepares the functions in order and the relocating thread takes
 * each one when it gets there (preparing it itself, or one further on,
 * when the helper is behind). */
enum { FREE, CLAIMED, DECODED };
struct ahead {
	struct proc *p;
	struct module *m;
	const uint32_t *idx;        /* function indices, in batch order */
	size_t n;
	struct lazy_decoded *d;
	_Atomic uint8_t *state;
	atomic_size_t used;         /* items the relocating thread took */
	/* the module's code window in reticle's mapping: the helper faults
	 * its pages in ahead of the copies placed there (cc1's 4,731 copies
	 * wrote 24 MB of fresh shared pages, 6,000 faults in the batch) */
	uint8_t *code;
	size_t code_cap, populated;
	atomic_size_t code_used;
};

enum { LOOKAHEAD = 512 };       /* bounds the memory held by decoded functions */

static bool decode_item(struct ahead *a, size_t i)
{
	uint8_t expect = FREE;
	if (!atomic_compare_exchange_strong(&a->state[i], &expect, CLAIMED))
		return false;
	lazy_decode(a->p, a->m, a->idx[i], &a->d[i]);
	atomic_store_explicit(&a->state[i], DECODED, memory_order_release);
	return true;
}

/* Faults in the next pages of the code window, up to a few hundred KiB
 * past where copies are being placed; false when there is nothing to do
 * (or the kernel cannot: MADV_POPULATE_WRITE came with Linux 5.14). */
static bool populate_ahead(struct ahead *a)
{
	enum { CHUNK = 64 << 10, AHEAD = 512 << 10 };
	size_t at = atomic_load(&a->code_used);
	if (!a->code || a->populated >= a->code_cap || a->populated > at + AHEAD)
		return false;
	if (a->populated < at)
		a->populated = (at + 4095) & ~(size_t)4095;
	size_t len = a->code_cap - a->populated < CHUNK ? a->code_cap - a->populated : CHUNK;
	if (len && madvise(a->code + a->populated, len, MADV_POPULATE_WRITE)) {
		a->code = NULL;
		return false;
	}
	a->populated += len;
	return true;
}

static void *decode_ahead(void *arg)
{
	struct ahead *a = arg;
	/* the relocating thread may be pinned beside the program (placement.c):
	 * this one takes any other CPU */
	const struct os_cpus *cpus = placement_all_cpus(session_placement(a->p->s));
	if (cpus)
		os_cpus_set(0, cpus);
	for (size_t i = 0; i < a->n; i++) {
		while (i >= atomic_load(&a->used) + LOOKAHEAD)
			if (!populate_ahead(a))
				sched_yield();
		decode_item(a, i);
	}
	while (atomic_load(&a->used) < a->n && populate_ahead(a))
		;
	return NULL;
}

/* Item I decoded, by whichever thread gets to it. */
static void await_item(struct ahead *a, size_t i)
{
	size_t next = i + 1;
	while (atomic_load_explicit(&a->state[i], memory_order_acquire) != DECODED) {
		if (decode_item(a, i))
			break;
		/* the helper is on it: decode a later one meanwhile */
		while (next < a->n && next < i + LOOKAHEAD && !decode_item(a, next))
			next++;
		if (next >= a->n || next >= i + LOOKAHEAD)
			sched_yield();
	}
}

/* Relocates the listed functions of M that still wait for their first call. */
static void batch(struct proc *p, struct module *m)
{
	m->warm_pending = false;
	/* The loader's r_brk must keep its int3 (it is FS_NOTIFY once known);
	 * before the loader publishes it, it is known by name only. */
	bool r_brk_unknown = proc_is_loader(p, m) && !p->r_brk;
	/* A module that relocates itself (the loader, a static PIE) has its
	 * batch before it does: data words pointing into a function are
	 * rewritten when it is relocated, and the module's own relocation
	 * would undo that. Such functions wait for their first call. */
	bool self_relocating = proc_is_loader(p, m) ||
			       (m->is_main && !rtl_binary_interp(m->bin) && rtl_binary_kind(m->bin) != RTL_BIN_EXEC);
	/* A static program sets up its TLS after its entry point, and the
	 * unwind information of the copies waits for it (unwind_flush): with
	 * every function it runs in the batch, no trap came before its first
	 * unwind (pthread_exit, a throw), whose lookup then found no frame
	 * for a copy and aborted. Its main waits for its first call: that
	 * trap registers them. So do main's parts (main.cold jumps back into
	 * main, whose copy would be made with the part's). */
	bool main_waits = m->is_main && !rtl_binary_interp(m->bin) && !p->tls_ready;
	bool helped = false;
	size_t done = 0;
	uint32_t *idx = malloc((m->nwarm ? m->nwarm : 1) * sizeof(*idx));
	struct ahead a = { .p = p, .m = m, .idx = idx,
			   .d = calloc(m->nwarm ? m->nwarm : 1, sizeof(*a.d)),
			   .state = calloc(m->nwarm ? m->nwarm : 1, sizeof(*a.state)) };
	if (!idx || !a.d || !a.state)
		goto out;
	for (size_t i = 0; i < m->nwarm; i++) {
		uint64_t addr = m->warm[i] & ADDR_MASK;
		const rtl_function *f = rtl_binary_find_function(m->bin, addr);
		if (!f || f->addr != addr)
			continue;
		size_t k = (size_t)(f - rtl_binary_function(m->bin, 0));
		if ((r_brk_unknown && f->name && !strncmp(f->name, "_dl_debug_state", 15)) ||
		    (self_relocating && fn_has_code_pointers(m->bin, f)) ||
		    (main_waits && f->name && (!strcmp(f->name, "main") || !strncmp(f->name, "main.", 5))))
			continue;
		if (m->fs[k].status == FS_ARMED && !m->fs[k].queued && !m->fs[k].edge) {
			m->fs[k].queued = true;
			idx[a.n++] = (uint32_t)k;
		}
	}
	/* the one thread is stopped: the entry jumps go in together at the end
	 * (not in an attached process, whose batch runs while it runs: each
	 * jump is written displacement first, patch_entry) */
	patch_batch_begin(p, a.n);
	if (m->win >= 0) {
		const struct window *w = &p->shm.wins[m->win];
		a.code = w->local;
		a.code_cap = w->code_cap;
		a.populated = w->code_used;
		atomic_store(&a.code_used, w->code_used);
	}
	pthread_t helper;
	helped = a.n >= 16 && sysconf(_SC_NPROCESSORS_ONLN) > 1 &&
		 !rtl_thread_start(&helper, decode_ahead, &a);
	for (size_t i = 0; i < a.n; i++) {
		await_item(&a, i);
		/* an earlier one's branch targets may have taken it meanwhile */
		m->fs[idx[i]].queued = false;
		if (m->fs[idx[i]].status == FS_ARMED && !lazy_instrument_now(p, m, idx[i], &a.d[i]))
			done++;
		lazy_decoded_free(&a.d[i]);
		if (m->win >= 0)
			atomic_store(&a.code_used, p->shm.wins[m->win].code_used);
		atomic_store(&a.used, i + 1);
	}
	if (helped)
		pthread_join(helper, NULL);
	patch_batch_end(p);
	session_count_warm(p->s, done);
	rtl_debug("%s: %zu of %zu listed functions relocated ahead of their first call%s", m->path,
		  done, m->nwarm, helped ? " (decoded on two threads)" : "");
out:
	free(idx);
	free(a.d);
	free(a.state);
}

/* When: the dynamic loader's list at its first trap, since it runs before
 * the program does; every other module's when the program reaches its entry
 * point: by then the loader has relocated them (their GOT bound, with
 * BIND_NOW), so copies made now call through bound PLT slots directly. A
 * module loaded later (dlopen) has its batch at its first trap. */
void warm_trap(struct proc *p, struct module *m, uint64_t addr)
{
	if (m->warm_pending && (p->warm_started || proc_is_loader(p, m)))
		batch(p, m);
	if (p->warm_started || !m->is_main || addr != rtl_binary_entry(m->bin) + m->bias)
		return;
	p->warm_started = true;
	for (size_t i = 0; i < p->nmods; i++)
		if (p->mods[i].warm_pending && !p->mods[i].unloaded)
			batch(p, &p->mods[i]);
}

void warm_attach(struct proc *p)
{
	for (size_t i = 0; i < p->nmods; i++)
		if (p->mods[i].warm_pending && !p->mods[i].unloaded)
			batch(p, &p->mods[i]);
}

/* Whether COUNTER (0: none) counted; *HAS when there is one. */
static bool counted(struct proc *p, uint64_t counter, bool *has)
{
	if (!counter)
		return false;
	*has = true;
	return proc_read_counter(p, counter) != 0;
}

/* Whether function K of M ran: one of its counters counted, or it was
 * relocated and has none. */
static bool ran(struct proc *p, const struct module *m, size_t k)
{
	const struct func_state *fs = &m->fs[k];
	bool has = false;
	if (fs->status != FS_DONE)
		return false;
	if (counted(p, fs->entry_counter, &has))
		return true;
	for (uint32_t b = 0; b < fs->nblocks; b++)
		if (counted(p, p->blocks[fs->block0 + b].counter, &has))
			return true;
	/* the collectors' own counters (callgraph's call sites, edges'
	 * branches, loops' back-edges) */
	for (uint32_t i = 0; i < fs->npoints; i++) {
		const struct point_rec *pr = &p->points[fs->point0 + i];
		if (!point_in_arcs(pr) && counted(p, pr->counter, &has))
			return true;
	}
	/* nothing counts in it (a leaf under callgraph, any function under
	 * memtrace or shim alone): relocated is taken for ran, so that such
	 * runs start warm too (they never did: no list was ever written).
	 * An eager callee that was not called is then listed as well, and
	 * stays while its callers do. */
	return !has;
}

/* The new list: what ran now (age 0, in address order), with the
 * functions that what ran branches into the middle of (their .cold parts,
 * which may not have run: the batch then relocates them beside their
 * parents instead of one at a time when the parent is), then what the old
 * list (OLD, NOLD entries) held that is not listed now, one run older. */
static uint64_t *merge(struct proc *p, const struct module *m, const uint64_t *old, size_t nold,
		       const char *path, size_t *n)
{
	size_t cap = 0, count = 0;
	uint64_t *v = NULL;
	size_t nf = rtl_binary_function_count(m->bin);
	uint8_t *now = calloc(nf ? nf : 1, 1);
	if (!now)
		goto fail;
	for (size_t k = 0; k < nf; k++)
		now[k] |= ran(p, m, k);
	for (size_t k = 0; k < nf; k++) {
		uint32_t by = m->fs[k].companion_of;
		if (by && by <= nf && (now[by - 1] & 1) && m->fs[k].status == FS_DONE)
			now[k] |= 2;
	}
	for (size_t k = 0; k < nf; k++)
		if (now[k]) {
			if (rtl_grow(&v, &cap, count + 1, sizeof(*v)))
				goto fail;
			v[count++] = rtl_binary_function(m->bin, k)->addr;
		}
	size_t fresh = count;   /* sorted: functions are in address order */
	/* an image that ran to its end ages what it did not run; one that
	 * exec'd (a shell's forked child, say) or still runs (detached, let
	 * go) ran a sliver of the program and tells nothing about the rest:
	 * without this, each of a shell's fork-and-exec children rewrote the
	 * shell's list */
	uint64_t older = p->status >= 0 && session_warm_age_once(p->s, path);
	for (size_t i = 0; i < nold; i++) {
		uint64_t addr = old[i] & ADDR_MASK, age = (old[i] >> AGE_SHIFT) + older;
		size_t at = rtl_lower_bound_u64(v, fresh, addr);
		if (age >= MAX_AGE || (at < fresh && v[at] == addr))
			continue;
		if (rtl_grow(&v, &cap, count + 1, sizeof(*v)))
			goto fail;
		v[count++] = addr | age << AGE_SHIFT;
	}
	free(now);
	*n = count;
	return v;
fail:
	free(now);
	free(v);
	*n = 0;
	return NULL;
}

/* PATH's list (M's) merged with what ran in P and written when it
 * changed: the merged list (malloc'd, *N entries), or NULL. */
static uint64_t *save_list(struct proc *p, struct module *m, const char *path, size_t *n)
{
	/* the list as it is now: another process of the binary may have
	 * written it since this one started */
	size_t nold = 0;
	uint64_t *old = read_list(path, rtl_binary_function_count(m->bin), &nold);
	uint64_t *v = merge(p, m, old, nold, path, n);
	/* the same run again leaves the same list: no write */
	if (v && !(*n == nold && !memcmp(v, old, *n * sizeof(*v)))) {
		struct warm_header h = { .count = (uint32_t)*n };
		memcpy(h.magic, magic, sizeof(magic));
		const void *parts[] = { &h, v };
		size_t lens[] = { sizeof(h), *n * sizeof(*v) };
		warm_write_file(path, parts, lens, 2);
	}
	free(old);
	return v;
}

/* A module's saved copies and decoded functions, written on the session's
 * disposer thread: cc1's 19 MB of copies took 45 ms of a cold run, while
 * gcc waited to be told of cc1's end. Both caches are the module's own
 * (a fork child opens none); the binary lives as long as the session. */
struct cache_write {
	const rtl_binary *bin;
	struct fn_cache *code, *decoded;
	uint64_t *list;
	size_t n;
};

static void write_caches(void *arg)
{
	struct cache_write *cw = arg;
	fncache_save(cw->decoded, cw->bin, cw->list, cw->n, ADDR_MASK);
	fncache_save(cw->code, cw->bin, cw->list, cw->n, ADDR_MASK);
	fncache_free(cw->decoded);
	fncache_free(cw->code);
	free(cw->list);
	free(cw);
}

void warm_save(struct proc *p)
{
	const char *dir = session_warm_dir(p->s);
	if (!dir || warm_make_dirs(dir))
		return;
	for (size_t i = 0; i < p->nmods; i++) {
		struct module *m = &p->mods[i];
		if (m->win < 0)
			continue;
		char *path = cache_path(p, m, "warm"), *mine = program_list_path(p, m);
		size_t n = 0, nmine;
		uint64_t *v = path ? save_list(p, m, path, &n) : NULL;
		if (mine)
			free(save_list(p, m, mine, &nmine));
		/* the saved copies serve every program: kept for the union */
		struct cache_write *cw = v && (m->ccache || m->dcache) ? malloc(sizeof(*cw)) : NULL;
		if (cw) {
			*cw = (struct cache_write){ m->bin, m->ccache, m->dcache, v, n };
			m->ccache = m->dcache = NULL;
			v = NULL;
			session_dispose(p->s, write_caches, cw);
		} else if (v) {
			dcache_save(m, v, n, ADDR_MASK);
			ccache_save(m, v, n, ADDR_MASK);
		}
		free(v);
		free(path);
		free(mine);
	}
}
