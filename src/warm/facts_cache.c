/* A binary's discovered functions, kept in the cache directory
 * (<identity>.facts) so that a later run opens it without discovery: the
 * symbols, FDEs, gaps and code pointers of every module cost milliseconds
 * each run (python3.11 2.7 ms, cc1 14 ms), reading them back a fraction.
 *
 * The facts hold while the binary is the same (its identity names the
 * file), the debug file it took names from is the same (a stripped binary:
 * its path and stat are in the header, and no other candidate comes
 * first), and reticle is the same build (rtl_self_id: discovery may
 * change from one build to the next). Anything else: discovered afresh
 * and written again. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include "elf/facts.h"
#include "util/file_id.h"
#include "util/log.h"
#include "util/self_id.h"
#include "warm/warm.h"

static const char magic[8] = "RTLFACTF";

struct file_head {
	char magic[8];
	uint64_t producer;          /* the reticle build that wrote it (rtl_self_id) */
	uint64_t debug_dev, debug_ino, debug_size, debug_mtime_ns;
	uint32_t debug_consulted;   /* no .symtab: discovery looked for a debug file */
	uint32_t debug_path_len;    /* bytes of its path after the head, 0: none found */
	uint32_t blob_off;          /* where the facts start (8-aligned) */
	uint32_t reserved;
	uint64_t file_size;         /* the binary's (its identity may be a build-id given by hand) */
};

struct debug_stamp {
	char path[PATH_MAX];
	struct stat st;
	bool found;
};

/* Where BIN's names would come from if discovered now; false when that
 * cannot be known cheaply. */
static bool debug_stamp_of(rtl_binary *bin, struct debug_stamp *ds)
{
	ds->found = false;
	if (rtl_elf_debug_candidate(bin, ds->path, sizeof(ds->path)))
		return false;
	ds->found = *ds->path != 0;
	return !ds->found || !stat(ds->path, &ds->st);
}

struct mapping {
	void *addr;
	size_t len;
};

static void unmap(void *owner)
{
	struct mapping *m = owner;
	munmap(m->addr, m->len);
	free(m);
}

/* The facts of BIN from PATH, adopted: 0, else non-zero (BIN untouched). */
static int load(rtl_binary *bin, const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	struct stat st;
	void *map = MAP_FAILED;
	if (!fstat(fd, &st) && (size_t)st.st_size > sizeof(struct file_head))
		map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (map != MAP_FAILED)
		warm_touch(path, fd);
	close(fd);
	if (map == MAP_FAILED)
		return -1;
	size_t len = (size_t)st.st_size;
	const struct file_head *h = map;
	struct debug_stamp ds;
	struct mapping *owner = malloc(sizeof(*owner));
	int err = -1;
	if (!owner || memcmp(h->magic, magic, sizeof(magic)) || h->producer != rtl_self_id() ||
	    h->blob_off % 8 || h->blob_off < sizeof(*h) || h->blob_off > len ||
	    (size_t)h->debug_path_len > h->blob_off - sizeof(*h) || h->file_size != rtl_elf_file_size(bin))
		goto out;
	const char *dpath = (const char *)(h + 1);
	/* names were looked for in a debug file: the one found first now
	 * must be the one found then (none then: none now) */
	if (h->debug_consulted &&
	    (!debug_stamp_of(bin, &ds) || ds.found != (h->debug_path_len > 0) ||
	     (ds.found && (strlen(ds.path) != h->debug_path_len || memcmp(ds.path, dpath, h->debug_path_len) ||
			   (uint64_t)ds.st.st_dev != h->debug_dev || (uint64_t)ds.st.st_ino != h->debug_ino ||
			   (uint64_t)ds.st.st_size != h->debug_size || file_mtime_ns(&ds.st) != h->debug_mtime_ns))))
		goto out;
	owner->addr = map;
	owner->len = len;
	err = rtl_elf_facts_adopt(bin, (const uint8_t *)map + h->blob_off, len - h->blob_off, owner, unmap);
	if (!err)
		return 0;
	rtl_debug("%s: ignored (not the facts of this binary)", path);
out:
	free(owner);
	munmap(map, len);
	return err;
}

/* Saves BIN's facts to PATH, unless its names came from a debug file that
 * is not the first the next run would find. */
static void save(rtl_binary *bin, const char *path)
{
	struct file_head h = { .blob_off = 0 };
	memcpy(h.magic, magic, sizeof(magic));
	h.producer = rtl_self_id();
	h.file_size = rtl_elf_file_size(bin);
	const char *used = rtl_elf_debug_path(bin);
	struct debug_stamp ds;
	if (rtl_elf_debug_consulted(bin)) {
		h.debug_consulted = 1;
		if (!debug_stamp_of(bin, &ds) || ds.found != (used != NULL) || (used && strcmp(used, ds.path)))
			return;
		if (used) {
			h.debug_dev = (uint64_t)ds.st.st_dev;
			h.debug_ino = (uint64_t)ds.st.st_ino;
			h.debug_size = (uint64_t)ds.st.st_size;
			h.debug_mtime_ns = file_mtime_ns(&ds.st);
			h.debug_path_len = (uint32_t)strlen(used);
		}
	}
	void *blob;
	size_t len;
	if (rtl_elf_facts_pack(bin, &blob, &len))
		return;
	h.blob_off = (uint32_t)((sizeof(h) + h.debug_path_len + 7) & ~(size_t)7);
	static const uint8_t zeros[8];
	const void *parts[] = { &h, used ? used : "", zeros, blob };
	size_t lens[] = { sizeof(h), h.debug_path_len, h.blob_off - sizeof(h) - h.debug_path_len, len };
	warm_write_file(path, parts, lens, 4);
	free(blob);
}

int warm_open_binary(const char *dir, const char *path, rtl_binary **out)
{
	if (!dir)
		return rtl_binary_open(path, out);
	rtl_binary *bin;
	int err = rtl_binary_open_image(path, &bin);
	if (err)
		return err;
	char *fpath = warm_file_path(dir, bin, "facts");
	if (fpath && !load(bin, fpath))
		rtl_debug("%s: functions from %s", path, fpath);
	else if (!(err = rtl_elf_discover(bin)) && fpath)   /* BIN is as opened: load leaves it so */
		save(bin, fpath);
	free(fpath);
	if (err) {
		rtl_binary_close(bin);
		return err;
	}
	*out = bin;
	return 0;
}
