/* A file's identity as stat gives it: the same path names another file
 * once it is replaced (a rebuilt program, a library copied over). */
#ifndef RETICLE_UTIL_FILE_ID_H
#define RETICLE_UTIL_FILE_ID_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

struct file_id {
	uint64_t dev, ino, size, mtime_ns;
};

static inline uint64_t file_mtime_ns(const struct stat *st)
{
	return (uint64_t)st->st_mtim.tv_sec * 1000000000u + (uint64_t)st->st_mtim.tv_nsec;
}

static inline struct file_id file_id_of(const struct stat *st)
{
	return (struct file_id){ (uint64_t)st->st_dev, (uint64_t)st->st_ino, (uint64_t)st->st_size,
				 file_mtime_ns(st) };
}

static inline bool file_id_same(const struct file_id *a, const struct file_id *b)
{
	return a->dev == b->dev && a->ino == b->ino && a->size == b->size && a->mtime_ns == b->mtime_ns;
}

#endif
