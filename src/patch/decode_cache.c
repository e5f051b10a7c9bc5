/* Warm start's decoded instructions: decoding is most of what relocating a
 * function costs (Zydis, 250 ns an instruction), and a binary decodes the
 * same every run. Next to a binary's warm-start list, the cache directory
 * holds the decoded instructions of the listed functions in a packed form
 * (x86_pack), with each function's size and a hash of its bytes: a function
 * whose bytes differ from what was hashed is decoded again, so a stale file
 * costs time, never correctness.
 *
 * File: header, entries sorted by link-time address, packed instructions. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include "engine/engine.h"
#include "isa/x86_64/insn.h"
#include "util/array.h"
#include "util/log.h"

static const char magic[8] = "RTLDEC03";

struct dc_header {
	char magic[8];
	uint32_t count;         /* entries */
	uint32_t packed_size;   /* sizeof(struct x86_packed) when written */
	uint64_t ninsns;        /* packed instructions after the entries */
};

struct dc_entry {
	uint64_t addr;          /* link-time entry */
	uint32_t size, ninsns;
	uint64_t first;         /* index of its first packed instruction */
	uint64_t hash;          /* of its SIZE bytes */
	uint64_t check;         /* of its packed instructions: a damaged file is not trusted */
};

/* decoded this run and not found in the file: kept (packed) for the next one */
struct dc_fresh {
	uint32_t k, n;          /* function index, instructions */
	uint64_t hash;          /* of its bytes */
	struct x86_packed *packed;
};

struct decode_cache {
	void *map;
	size_t len;
	const struct dc_entry *ent;
	size_t n;
	const struct x86_packed *packed;
	struct dc_fresh *fresh;
	size_t nfresh, capfresh;
};

static uint64_t hash_bytes(const uint8_t *p, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;   /* FNV-1a */
	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 0x100000001b3ull;
	return h;
}

_Static_assert(sizeof(struct x86_packed) % 8 == 0, "hash_packed reads whole words");

/* Eight bytes at a time: this one runs over every cached instruction used. */
static uint64_t hash_packed(const struct x86_packed *p, size_t n)
{
	uint64_t h = 0x9e3779b97f4a7c15ull, w;
	const uint8_t *b = (const uint8_t *)p;
	for (size_t i = 0; i < n * sizeof(*p); i += 8) {
		memcpy(&w, b + i, 8);
		h = (h ^ w) * 0xff51afd7ed558ccdull;
		h ^= h >> 29;
	}
	return h;
}

static bool valid(const struct dc_header *h, size_t len)
{
	if (len < sizeof(*h) || memcmp(h->magic, magic, sizeof(magic)) ||
	    h->packed_size != sizeof(struct x86_packed))
		return false;
	uint64_t need = sizeof(*h) + (uint64_t)h->count * sizeof(struct dc_entry) +
			h->ninsns * sizeof(struct x86_packed);
	if (h->ninsns > len || need != len)
		return false;
	const struct dc_entry *e = (const void *)(h + 1);
	for (uint32_t i = 0; i < h->count; i++)
		if (e[i].first > h->ninsns || e[i].ninsns > h->ninsns - e[i].first ||
		    (i && e[i].addr <= e[i - 1].addr))
			return false;
	return true;
}

void dcache_open(struct proc *p, struct module *m)
{
	/* text the loader relocates (DT_TEXTREL) changes with the load
	 * address: no cache for it */
	if (rtl_binary_has_textrel(m->bin))
		return;
	struct decode_cache *c = calloc(1, sizeof(*c));
	char *path = warm_cache_path(p, m, "insns");
	m->dcache = c;
	if (!c || !path)
		goto out;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	if (fd < 0)
		goto out;
	if (!fstat(fd, &st) && st.st_size > 0) {
		/* every entry is of a listed function, relocated at start: all of it is read */
		void *map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
		if (map != MAP_FAILED && valid(map, (size_t)st.st_size)) {
			const struct dc_header *h = map;
			c->map = map;
			c->len = (size_t)st.st_size;
			c->ent = (const void *)(h + 1);
			c->n = h->count;
			c->packed = (const void *)(c->ent + c->n);
			warm_touch(NULL, fd);
		} else if (map != MAP_FAILED) {
			rtl_debug("%s: ignored (not a decode cache of this reticle)", path);
			munmap(map, (size_t)st.st_size);
		}
	}
	close(fd);
out:
	free(path);
}

/* entries and addresses compare by their first uint64_t */
static int by_addr(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

static const struct dc_entry *find(const struct decode_cache *c, uint64_t addr)
{
	return c->n ? bsearch(&addr, c->ent, c->n, sizeof(*c->ent), by_addr) : NULL;
}

bool dcache_get(const struct module *m, const rtl_function *f, const uint8_t *code,
		struct x86_insn **out, size_t *n)
{
	const struct decode_cache *c = m->dcache;
	const struct dc_entry *e = c && c->map ? find(c, f->addr) : NULL;
	if (!e || e->size != f->size || e->hash != hash_bytes(code, f->size) ||
	    e->check != hash_packed(c->packed + e->first, e->ninsns))
		return false;
	struct x86_insn *v = malloc((e->ninsns ? e->ninsns : 1) * sizeof(*v));
	if (!v)
		return false;
	uint64_t addr = f->addr + m->bias;
	for (uint32_t i = 0; i < e->ninsns; i++) {
		x86_unpack(&c->packed[e->first + i], addr, &v[i]);
		addr += v[i].len;
	}
	*out = v;
	*n = e->ninsns;
	return true;
}

void dcache_keep(struct module *m, size_t k, const uint8_t *code, const struct x86_insn *insns, size_t n)
{
	struct decode_cache *c = m->dcache;
	struct x86_packed *v = malloc((n ? n : 1) * sizeof(*v));
	bool ok = c && v && !rtl_grow(&c->fresh, &c->capfresh, c->nfresh + 1, sizeof(*c->fresh));
	for (size_t i = 0; ok && i < n; i++)
		ok = x86_pack(&insns[i], &v[i]);
	if (!ok) {
		free(v);
		return;
	}
	c->fresh[c->nfresh++] = (struct dc_fresh){
		(uint32_t)k, (uint32_t)n, hash_bytes(code, rtl_binary_function(m->bin, k)->size), v };
}

static int by_index(const void *a, const void *b)
{
	const struct dc_fresh *x = a, *y = b;
	return (x->k > y->k) - (x->k < y->k);
}

/* Appends function K's instructions (from this run, else from the file)
 * to the output; false when neither has them. */
static bool add_one(const struct module *m, size_t k, struct dc_entry **ent, size_t *nent,
		    size_t *capent, struct x86_packed **pk, size_t *npk, size_t *cappk)
{
	const struct decode_cache *c = m->dcache;
	const rtl_function *f = rtl_binary_function(m->bin, k);
	struct dc_fresh key = { .k = (uint32_t)k };
	const struct dc_fresh *fr = c->nfresh ? bsearch(&key, c->fresh, c->nfresh, sizeof(key), by_index) : NULL;
	const struct dc_entry *old = fr || !c->map ? NULL : find(c, f->addr);
	size_t n = fr ? fr->n : old ? old->ninsns : 0;
	if ((!fr && !old) || rtl_grow(ent, capent, *nent + 1, sizeof(**ent)) ||
	    rtl_grow(pk, cappk, *npk + n, sizeof(**pk)))
		return false;
	struct dc_entry e = { .addr = f->addr, .size = (uint32_t)f->size, .ninsns = (uint32_t)n, .first = *npk };
	e.hash = old ? old->hash : fr->hash;
	memcpy(*pk + *npk, old ? c->packed + old->first : fr->packed, n * sizeof(**pk));
	e.check = hash_packed(*pk + *npk, n);
	*npk += n;
	(*ent)[(*nent)++] = e;
	return true;
}

void dcache_save(struct proc *p, struct module *m, const uint64_t *list, size_t nlist, uint64_t mask)
{
	struct decode_cache *c = m->dcache;
	if (!c)
		return;
	qsort(c->fresh, c->nfresh, sizeof(*c->fresh), by_index);
	uint64_t *addrs = malloc((nlist ? nlist : 1) * sizeof(*addrs));
	struct dc_entry *ent = NULL;
	struct x86_packed *pk = NULL;
	size_t nent = 0, capent = 0, npk = 0, cappk = 0;
	char *path = warm_cache_path(p, m, "insns");
	if (!addrs || !path)
		goto out;
	for (size_t i = 0; i < nlist; i++)
		addrs[i] = list[i] & mask;
	qsort(addrs, nlist, sizeof(*addrs), by_addr);
	/* nothing new, nothing dropped: the file stays (checked first: the
	 * copy below is megabytes) */
	size_t listed = 0, fresh = 0;
	for (size_t i = 0; i < nlist; i++) {
		const rtl_function *f = rtl_binary_find_function(m->bin, addrs[i]);
		if ((i && addrs[i] == addrs[i - 1]) || !f || f->addr != addrs[i])
			continue;
		struct dc_fresh key = { .k = (uint32_t)(f - rtl_binary_function(m->bin, 0)) };
		if (c->nfresh && bsearch(&key, c->fresh, c->nfresh, sizeof(key), by_index))
			fresh++, listed++;
		else if (c->map && find(c, f->addr))
			listed++;
	}
	if (!fresh && listed == c->n)
		goto out;
	for (size_t i = 0; i < nlist; i++) {
		const rtl_function *f = rtl_binary_find_function(m->bin, addrs[i]);
		if ((i && addrs[i] == addrs[i - 1]) || !f || f->addr != addrs[i])
			continue;
		add_one(m, (size_t)(f - rtl_binary_function(m->bin, 0)), &ent, &nent, &capent, &pk, &npk,
			&cappk);
	}
	struct dc_header h = { .count = (uint32_t)nent, .packed_size = sizeof(*pk), .ninsns = npk };
	memcpy(h.magic, magic, sizeof(magic));
	const void *parts[] = { &h, ent, pk };
	size_t lens[] = { sizeof(h), nent * sizeof(*ent), npk * sizeof(*pk) };
	warm_write_file(path, parts, lens, 3);
out:
	free(addrs);
	free(ent);
	free(pk);
	free(path);
}

void dcache_free(struct module *m)
{
	struct decode_cache *c = m->dcache;
	if (!c)
		return;
	if (c->map)
		munmap(c->map, c->len);
	for (size_t i = 0; i < c->nfresh; i++)
		free(c->fresh[i].packed);
	free(c->fresh);
	free(c);
	m->dcache = NULL;
}
