/* Per-function blobs kept between runs (fn_cache.h).
 *
 * File: a header (with the build of reticle that wrote it: another build
 * ignores it), entries sorted by link-time address, then the blobs, each
 * at an 8-byte aligned offset. It is mapped whole (MAP_POPULATE):
 * its functions are listed ones, relocated as the program starts. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include "util/array.h"
#include "util/log.h"
#include "util/self_id.h"
#include "warm/fn_cache.h"
#include "warm/warm.h"

struct fc_header {
	char magic[8];
	uint32_t count;         /* entries */
	uint32_t zero;
	uint64_t data_len;      /* bytes of blobs after the entries */
	/* the reticle build that wrote it (rtl_self_id): another build may
	 * relocate differently, or fix what this one got wrong */
	uint64_t producer;
};

struct fc_entry {
	uint64_t addr;          /* link-time entry */
	uint32_t size;          /* of the function */
	uint32_t len;           /* of its blob, a multiple of 8 */
	uint64_t off;           /* of its blob in the data */
	uint64_t hash;          /* of the function's bytes */
	uint64_t check;         /* of the blob: a damaged file is not trusted */
};

/* made this run, not in the file */
struct fc_fresh {
	uint32_t k, len;        /* function index, blob bytes */
	uint64_t hash;          /* of its bytes */
	void *blob;
};

struct fn_cache {
	char *path;
	char magic[8];
	void *map;
	size_t maplen;
	const struct fc_entry *ent;
	size_t n;
	const uint8_t *data;
	struct fc_fresh *fresh;
	size_t nfresh, capfresh;
	/* the file as it was opened: another process of the same binary may
	 * have written it since (fncache_save then joins its blobs) */
	dev_t dev;
	ino_t ino;
};

/* A 64-bit hash of N bytes at P: four lanes of 8-byte words, so that the
 * multiplications overlap (this runs over every function placed and its
 * blob: 1 us a function with FNV-1a a byte at a time). */
static uint64_t hash_mem(const void *p, size_t n)
{
	static const uint64_t mul = 0xff51afd7ed558ccdull;
	uint64_t h[4] = { 0x9e3779b97f4a7c15ull, 0xc2b2ae3d27d4eb4full, 0x165667b19e3779f9ull,
			  0x27d4eb2f165667c5ull }, w;
	const uint8_t *b = p;
	size_t i = 0;
	for (; i + 32 <= n; i += 32)
		for (int k = 0; k < 4; k++) {
			memcpy(&w, b + i + 8 * k, 8);
			h[k] = (h[k] ^ w) * mul;
			h[k] ^= h[k] >> 29;
		}
	for (int k = 0; i < n; i += 8, k++) {
		w = 0;
		memcpy(&w, b + i, n - i < 8 ? n - i : 8);
		h[k] = (h[k] ^ w) * mul;
		h[k] ^= h[k] >> 29;
	}
	uint64_t r = n;
	for (int k = 0; k < 4; k++) {
		r = (r ^ h[k]) * mul;
		r ^= r >> 32;
	}
	return r;
}

static bool valid(const struct fn_cache *c, const struct fc_header *h, size_t len)
{
	if (len < sizeof(*h) || memcmp(h->magic, c->magic, sizeof(h->magic)) ||
	    h->producer != rtl_self_id() ||
	    h->count > len / sizeof(struct fc_entry) || h->data_len > len ||
	    sizeof(*h) + (uint64_t)h->count * sizeof(struct fc_entry) + h->data_len != len)
		return false;
	const struct fc_entry *e = (const void *)(h + 1);
	for (uint32_t i = 0; i < h->count; i++)
		if (e[i].off % 8 || e[i].len % 8 || e[i].off > h->data_len ||
		    e[i].len > h->data_len - e[i].off || (i && e[i].addr <= e[i - 1].addr))
			return false;
	return true;
}

struct fn_cache *fncache_open(const char *path, const char magic[8])
{
	struct fn_cache *c = calloc(1, sizeof(*c));
	if (!c || !(c->path = strdup(path))) {
		free(c);
		return NULL;
	}
	memcpy(c->magic, magic, sizeof(c->magic));
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	if (fd < 0)
		return c;
	if (fstat(fd, &st)) {
		close(fd);
		return c;
	}
	c->dev = st.st_dev;
	c->ino = st.st_ino;
	if (st.st_size > 0) {
		void *map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
		if (map != MAP_FAILED && valid(c, map, (size_t)st.st_size)) {
			const struct fc_header *h = map;
			c->map = map;
			c->maplen = (size_t)st.st_size;
			c->ent = (const void *)(h + 1);
			c->n = h->count;
			c->data = (const uint8_t *)(c->ent + c->n);
			warm_touch(NULL, fd);
		} else if (map != MAP_FAILED) {
			rtl_debug("%s: ignored (not a cache file of this build of reticle)", path);
			munmap(map, (size_t)st.st_size);
		}
	}
	close(fd);
	return c;
}

void fncache_free(struct fn_cache *c)
{
	if (!c)
		return;
	if (c->map)
		munmap(c->map, c->maplen);
	for (size_t i = 0; i < c->nfresh; i++)
		free(c->fresh[i].blob);
	free(c->fresh);
	free(c->path);
	free(c);
}

/* entries and addresses compare by their first uint64_t */
static int by_addr(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

static const struct fc_entry *find(const struct fn_cache *c, uint64_t addr)
{
	return c->n ? bsearch(&addr, c->ent, c->n, sizeof(*c->ent), by_addr) : NULL;
}

const void *fncache_find(const struct fn_cache *c, const rtl_function *f, const uint8_t *code,
			 size_t *len)
{
	const struct fc_entry *e = c ? find(c, f->addr) : NULL;
	if (!e || e->size != f->size || e->hash != hash_mem(code, f->size) ||
	    e->check != hash_mem(c->data + e->off, e->len))
		return NULL;
	*len = e->len;
	return c->data + e->off;
}

void fncache_keep(struct fn_cache *c, const rtl_binary *bin, size_t k, const uint8_t *code,
		  void *blob, size_t len)
{
	if (!c || len % 8 || len > UINT32_MAX ||
	    rtl_grow(&c->fresh, &c->capfresh, c->nfresh + 1, sizeof(*c->fresh))) {
		free(blob);
		return;
	}
	c->fresh[c->nfresh++] = (struct fc_fresh){
		(uint32_t)k, (uint32_t)len, hash_mem(code, rtl_binary_function(bin, k)->size), blob };
}

static int by_index(const void *a, const void *b)
{
	const struct fc_fresh *x = a, *y = b;
	return (x->k > y->k) - (x->k < y->k);
}

static const struct fc_fresh *fresh_of(const struct fn_cache *c, size_t k)
{
	struct fc_fresh key = { .k = (uint32_t)k };
	return c->nfresh ? bsearch(&key, c->fresh, c->nfresh, sizeof(key), by_index) : NULL;
}

/* Index of the function with link-time entry ADDR, or -1. */
static long function_at(const rtl_binary *bin, uint64_t addr)
{
	const rtl_function *f = rtl_binary_find_function(bin, addr);
	return f && f->addr == addr ? (long)(f - rtl_binary_function(bin, 0)) : -1;
}

/* The file as it is now when another process replaced it (written under a
 * temporary name and renamed: a new inode) since C was opened, else NULL. */
static struct fn_cache *newer_file(const struct fn_cache *c)
{
	struct stat st;
	if (stat(c->path, &st) || (st.st_dev == c->dev && st.st_ino == c->ino))
		return NULL;
	struct fn_cache *d = fncache_open(c->path, c->magic);
	if (d && !d->map) {
		fncache_free(d);
		return NULL;
	}
	return d;
}

/* The blob of link-time entry ADDR kept from before this run: the newer
 * file's first (another process's), then the one this run read. */
static const struct fc_entry *kept(const struct fn_cache *c, const struct fn_cache *disk, uint64_t addr,
				   const uint8_t **data)
{
	const struct fc_entry *e = disk ? find(disk, addr) : NULL;
	if (e) {
		*data = disk->data;
		return e;
	}
	*data = c->data;
	return find(c, addr);
}

void fncache_save(struct fn_cache *c, const rtl_binary *bin, const uint64_t *list, size_t n,
		  uint64_t mask)
{
	if (!c)
		return;
	/* two processes of one binary (rustc's and its linker's libLLVM) that
	 * each wrote only their own blobs undid each other's every run */
	struct fn_cache *disk = newer_file(c);
	qsort(c->fresh, c->nfresh, sizeof(*c->fresh), by_index);
	uint64_t *addrs = malloc((n ? n : 1) * sizeof(*addrs));
	struct fc_entry *ent = malloc((n ? n : 1) * sizeof(*ent));
	uint8_t *data = NULL;
	size_t nent = 0, ndata = 0, capdata = 0;
	if (!addrs || !ent)
		goto out;
	for (size_t i = 0; i < n; i++)
		addrs[i] = list[i] & mask;
	qsort(addrs, n, sizeof(*addrs), by_addr);
	/* nothing new: the file stays (checked first: the copy below is
	 * megabytes). Blobs of functions that left the list stay too until
	 * something new comes: a library's list changes with each program
	 * that runs it, and rewriting libc's copies for that cost more than
	 * the room they take. */
	const struct fn_cache *file = disk ? disk : c;
	size_t other = 0;
	for (size_t i = 0; i < n; i++) {
		long k = (i && addrs[i] == addrs[i - 1]) ? -1 : function_at(bin, addrs[i]);
		const uint8_t *unused;
		if (k < 0)
			continue;
		if (fresh_of(c, (size_t)k) || (!find(file, addrs[i]) && kept(c, disk, addrs[i], &unused)))
			other++;
	}
	if (!other)
		goto out;
	for (size_t i = 0; i < n; i++) {
		long k = (i && addrs[i] == addrs[i - 1]) ? -1 : function_at(bin, addrs[i]);
		if (k < 0)
			continue;
		const rtl_function *f = rtl_binary_function(bin, (size_t)k);
		const struct fc_fresh *fr = fresh_of(c, (size_t)k);
		const uint8_t *from = NULL;
		const struct fc_entry *old = fr ? NULL : kept(c, disk, f->addr, &from);
		if (!fr && !old)
			continue;
		size_t len = fr ? fr->len : old->len;
		if (rtl_grow(&data, &capdata, ndata + len, 1))
			goto out;
		memcpy(data + ndata, fr ? fr->blob : from + old->off, len);
		ent[nent++] = (struct fc_entry){ .addr = f->addr, .size = (uint32_t)f->size,
						 .len = (uint32_t)len, .off = ndata,
						 .hash = fr ? fr->hash : old->hash,
						 .check = hash_mem(data + ndata, len) };
		ndata += len;
	}
	struct fc_header h = { .count = (uint32_t)nent, .data_len = ndata, .producer = rtl_self_id() };
	memcpy(h.magic, c->magic, sizeof(h.magic));
	const void *parts[] = { &h, ent, data };
	size_t lens[] = { sizeof(h), nent * sizeof(*ent), ndata };
	warm_write_file(c->path, parts, lens, 3);
out:
	fncache_free(disk);
	free(addrs);
	free(ent);
	free(data);
}
