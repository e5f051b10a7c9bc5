/* Warm start's decoded instructions: decoding is most of what relocating a
 * function costs (Zydis, 250 ns an instruction), and a binary decodes the
 * same every run. Next to a binary's warm-start list, the cache directory
 * holds the decoded instructions of the listed functions in a packed form
 * (x86_pack), one blob per function (fn_cache.h). They serve where a saved
 * copy does not (copy_cache.c): another probe set, a process with threads. */
#include <stdlib.h>
#include "isa/x86_64/insn.h"
#include "warm/fn_cache.h"
#include "warm/warm.h"

static const char magic[8] = "RTLDEC05";

void dcache_open(struct module *m, const char *dir)
{
	/* text the loader relocates (DT_TEXTREL) changes with the load
	 * address: no cache for it */
	if (rtl_binary_has_textrel(m->bin))
		return;
	char *path = warm_file_path(dir, m->bin, "insns");
	if (path)
		m->dcache = fncache_open(path, magic);
	free(path);
}

_Static_assert(sizeof(struct x86_packed) % 8 == 0, "blobs are whole words");

bool dcache_get(const struct module *m, const rtl_function *f, const uint8_t *code,
		struct x86_insn **out, size_t *n)
{
	size_t len;
	const struct x86_packed *pk = fncache_find(m->dcache, f, code, &len);
	size_t count = len / sizeof(*pk);
	struct x86_insn *v = pk ? malloc((count ? count : 1) * sizeof(*v)) : NULL;
	if (!v)
		return false;
	uint64_t addr = f->addr + m->bias;
	for (size_t i = 0; i < count; i++) {
		x86_unpack(&pk[i], addr, &v[i]);
		addr += v[i].len;
	}
	*out = v;
	*n = count;
	return true;
}

void dcache_keep(struct module *m, size_t k, const uint8_t *code, const struct x86_insn *insns, size_t n)
{
	if (!m->dcache)
		return;
	struct x86_packed *v = malloc((n ? n : 1) * sizeof(*v));
	for (size_t i = 0; v && i < n; i++)
		if (!x86_pack(&insns[i], &v[i])) {
			free(v);
			return;
		}
	if (v)
		fncache_keep(m->dcache, m->bin, k, code, v, n * sizeof(*v));
}

void dcache_save(struct module *m, const uint64_t *list, size_t nlist, uint64_t mask)
{
	fncache_save(m->dcache, m->bin, list, nlist, mask);
}

void dcache_free(struct module *m)
{
	fncache_free(m->dcache);
	m->dcache = NULL;
}
