/* A module's text with its entries' int3s, kept in the cache directory and
 * mapped over the module's text in later runs instead of written into it.
 *
 * Writing the int3s makes every text page the process's own: a
 * copy-on-write fault per page in the kernel (libc's 450 pages, about 1 ms
 * in every process; cc1's 5,000 pages, 10 ms). A private mapping of a file
 * that already holds them costs three system calls, and its pages come
 * from the page cache, shared by every process and run (docs/engine.md,
 * "Armed text").
 *
 * The file: a page of header, then the bytes the loader maps for the
 * binary's one executable segment (whole pages of the binary's file), with
 * an int3 at each armed entry. It is used only when the binary is the same
 * file (device, inode, size, modification time), the reticle build is the
 * one that wrote it, and the armed entries are the same. */
#include <elf.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "util/log.h"
#include "util/self_id.h"
#include "warm/warm.h"

static const char magic[8] = "RTLARMD1";

struct armed_header {
	char magic[8];
	uint64_t producer;          /* rtl_self_id() */
	uint64_t entries;           /* a hash of the armed entries */
	uint64_t dev, ino, size, mtime_ns;   /* the binary's file */
	uint64_t addr, off, len;    /* the segment's pages (struct armed_seg) */
};

enum { PAGE = 4096 };

bool armed_text_segment(const rtl_binary *bin, struct armed_seg *seg)
{
	const rtl_segment *x = NULL;
	for (size_t i = 0; i < rtl_binary_segment_count(bin); i++) {
		const rtl_segment *s = rtl_binary_segment(bin, i);
		if (!(s->flags & PF_X))
			continue;
		if (x)
			return false;   /* more than one: not worth the care */
		x = s;
	}
	if (!x || !x->filesz || x->vaddr % PAGE != x->offset % PAGE)
		return false;
	seg->addr = x->vaddr & ~(uint64_t)(PAGE - 1);
	seg->off = x->offset & ~(uint64_t)(PAGE - 1);
	seg->len = ((x->vaddr + x->filesz + PAGE - 1) & ~(uint64_t)(PAGE - 1)) - seg->addr;
	return true;
}

static uint64_t entries_hash(const rtl_binary *bin, const uint32_t *idx, size_t n)
{
	uint64_t h = 0x9e3779b97f4a7c15ull ^ n;
	for (size_t i = 0; i < n; i++) {
		h = (h ^ rtl_binary_function(bin, idx[i])->addr) * 0xff51afd7ed558ccdull;
		h ^= h >> 29;
	}
	return h;
}

static bool binary_stat(const rtl_binary *bin, struct stat *st)
{
	return !stat(rtl_binary_path(bin), st);
}

static struct armed_header header_of(const rtl_binary *bin, const struct armed_seg *seg,
				      const uint32_t *idx, size_t n, const struct stat *st)
{
	struct armed_header h;
	memset(&h, 0, sizeof(h));
	memcpy(h.magic, magic, sizeof(magic));
	h.producer = rtl_self_id();
	h.entries = entries_hash(bin, idx, n);
	h.dev = st->st_dev;
	h.ino = st->st_ino;
	h.size = (uint64_t)st->st_size;
	h.mtime_ns = (uint64_t)st->st_mtim.tv_sec * 1000000000u + (uint64_t)st->st_mtim.tv_nsec;
	h.addr = seg->addr;
	h.off = seg->off;
	h.len = seg->len;
	return h;
}

/* The file's name ends in the binary's own, so that a program looking for
 * its library in /proc/self/maps by name (a substring) still finds it. */
static char *armed_path(const char *dir, const rtl_binary *bin)
{
	const char *base = strrchr(rtl_binary_path(bin), '/');
	char suffix[300];
	snprintf(suffix, sizeof(suffix), "armed.%s", base ? base + 1 : rtl_binary_path(bin));
	return warm_file_path(dir, bin, suffix);
}

char *armed_text_find(const char *dir, const rtl_binary *bin, const struct armed_seg *seg,
		      const uint32_t *idx, size_t n, struct stat *binst)
{
	char *path = armed_path(dir, bin);
	struct armed_header h, want;
	struct stat st;
	int fd = path ? open(path, O_RDONLY | O_CLOEXEC) : -1;
	bool ok = fd >= 0 && binary_stat(bin, binst) && !fstat(fd, &st) &&
		  (uint64_t)st.st_size == PAGE + seg->len && pread(fd, &h, sizeof(h), 0) == (ssize_t)sizeof(h);
	if (ok) {
		want = header_of(bin, seg, idx, n, binst);
		ok = !memcmp(&h, &want, sizeof(h));
		if (ok)
			warm_touch(path, fd);
	}
	if (fd >= 0)
		close(fd);
	if (!ok) {
		free(path);
		return NULL;
	}
	return path;
}

void armed_text_save(const char *dir, const rtl_binary *bin, const struct armed_seg *seg,
		     const uint32_t *idx, size_t n)
{
	struct stat st;
	char *path = armed_path(dir, bin);
	uint8_t *buf = path && binary_stat(bin, &st) ? calloc(1, PAGE + seg->len) : NULL;
	int fd = buf ? open(rtl_binary_path(bin), O_RDONLY | O_CLOEXEC) : -1;
	struct stat now;
	/* the bytes the loader maps: whole pages of the file, zeros past its end */
	bool ok = fd >= 0 && !fstat(fd, &now) && now.st_ino == st.st_ino && now.st_dev == st.st_dev &&
		  pread(fd, buf + PAGE, seg->len, (off_t)seg->off) >= 0;
	if (fd >= 0)
		close(fd);
	if (ok) {
		struct armed_header h = header_of(bin, seg, idx, n, &st);
		memcpy(buf, &h, sizeof(h));
		for (size_t i = 0; i < n && ok; i++) {
			uint64_t at = rtl_binary_function(bin, idx[i])->addr - seg->addr;
			ok = at < seg->len;
			if (ok)
				buf[PAGE + at] = 0xcc;
		}
	}
	if (ok) {
		const void *parts[] = { buf };
		size_t lens[] = { PAGE + seg->len };
		warm_write_file(path, parts, lens, 1);
	}
	free(buf);
	free(path);
}
