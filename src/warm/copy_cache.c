/* Warm start's relocated copies: decoding, analysing and emitting a
 * function are most of a warm start (python3.11: 2,100 functions, 20 us
 * each), and a binary's function makes the same copy every run but for
 * where things are. Beside the warm-start list, one file per binary and
 * probe set holds the listed functions' copies in a position-free form
 * (isa/x86_64/persist.h), one blob per function (fn_cache.h); a copy is
 * placed at its new address with its fields rewritten, which takes a few
 * microseconds. Copies are saved as they are emitted, while the process has
 * one thread (they hold single-thread counters); a process with threads
 * gets them switched to atomic counters as they are placed.
 * RETICLE_VERIFY_COPIES=1 emits each placed copy again and compares the two
 * (patch/lazy.c). */
#include <stdio.h>
#include <stdlib.h>
#include "isa/x86_64/persist.h"
#include "probe/plan.h"
#include "util/log.h"
#include "warm/fn_cache.h"
#include "warm/warm.h"

static const char magic[8] = "RTLCOPYA";

void ccache_open(struct module *m, const char *dir, const struct probe_set *probes, const char *mode)
{
	/* text the loader relocates (DT_TEXTREL) changes with the load address;
	 * memory records name the run's own access numbers */
	if (rtl_binary_has_textrel(m->bin) || probes->memory)
		return;
	char suffix[32];
	/* copies are kept per probe set (the collectors' plans), and those with
	 * original return addresses apart */
	snprintf(suffix, sizeof(suffix), "code%s%s", probes->key, mode);
	char *path = warm_file_path(dir, m->bin, suffix);
	if (path)
		m->ccache = fncache_open(path, magic);
	free(path);
}

const void *ccache_find(const struct module *m, const rtl_function *f, const uint8_t *code, size_t *len)
{
	return fncache_find(m->ccache, f, code, len);
}

bool ccache_keep(struct module *m, size_t k, const uint8_t *code, const struct x86_reloc *r,
		 uint64_t ctr_lo, uint64_t ctr_hi, const uint64_t *targets, size_t ntargets)
{
	if (!m->ccache)
		return false;
	const rtl_function *f = rtl_binary_function(m->bin, k);
	struct x86_persist_info in = { .fn = f->addr + m->bias, .bias = m->bias, .mod_lo = m->lo,
				       .mod_hi = m->hi, .ctr_lo = ctr_lo, .ctr_hi = ctr_hi,
				       .targets = targets, .ntargets = ntargets };
	void *blob;
	size_t len;
	if (x86_persist(r, &in, &blob, &len)) {
		rtl_debug("%s: %s: its copy cannot be saved", m->path, f->name);
		return false;
	}
	fncache_keep(m->ccache, m->bin, k, code, blob, len);
	return true;
}

void ccache_keep_blob(struct module *m, size_t k, const uint8_t *code, void *blob, size_t len)
{
	if (m->ccache)
		fncache_keep(m->ccache, m->bin, k, code, blob, len);
	else
		free(blob);
}

void ccache_save(struct module *m, const uint64_t *list, size_t nlist, uint64_t mask)
{
	fncache_save(m->ccache, m->bin, list, nlist, mask);
}

void ccache_free(struct module *m)
{
	fncache_free(m->ccache);
	m->ccache = NULL;
}
