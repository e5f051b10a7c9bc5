/* The warm-start cache stays within a size: when its files (lists and
 * decoded instructions, `b-*` and `f-*`) pass the bound, the least recently
 * used go until it is 80% full. A file in use is touched when read (at most
 * once a day), so its modification time says when it last served. Half-
 * written files of runs that were killed (`*.tmp`) go after an hour. */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "engine/engine.h"
#include "util/array.h"
#include "util/log.h"

struct cache_file {
	time_t mtime;
	uint64_t size;
	char name[256];
};

static int older_first(const void *a, const void *b)
{
	const struct cache_file *x = a, *y = b;
	return (x->mtime > y->mtime) - (x->mtime < y->mtime);
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);
	return n >= k && !strcmp(s + n - k, suffix);
}

void warm_touch(const char *path, int fd)
{
	struct stat st;
	time_t now = time(NULL);
	if ((fd >= 0 ? fstat(fd, &st) : stat(path, &st)) || now - st.st_mtime < 24 * 3600)
		return;
	if (fd >= 0)
		futimens(fd, NULL);
	else
		utimensat(AT_FDCWD, path, NULL, 0);
}

void warm_prune(const char *dir, uint64_t max_bytes)
{
	DIR *d = opendir(dir);
	if (!d)
		return;
	struct cache_file *v = NULL;
	size_t n = 0, cap = 0;
	uint64_t total = 0;
	time_t now = time(NULL);
	struct dirent *e;
	while ((e = readdir(d))) {
		const char *name = e->d_name;
		if ((strncmp(name, "b-", 2) && strncmp(name, "f-", 2)) || strlen(name) >= sizeof(v->name))
			continue;
		bool tmp = ends_with(name, ".tmp");
		if (!tmp && !ends_with(name, ".warm") && !ends_with(name, ".insns"))
			continue;
		struct stat st;
		if (fstatat(dirfd(d), name, &st, 0) || !S_ISREG(st.st_mode))
			continue;
		if (tmp) {
			if (now - st.st_mtime > 3600)
				unlinkat(dirfd(d), name, 0);
			continue;
		}
		if (rtl_grow(&v, &cap, n + 1, sizeof(*v)))
			break;
		v[n].mtime = st.st_mtime;
		v[n].size = (uint64_t)st.st_size;
		strcpy(v[n++].name, name);
		total += (uint64_t)st.st_size;
	}
	if (total > max_bytes) {
		qsort(v, n, sizeof(*v), older_first);
		for (size_t i = 0; i < n && total > max_bytes / 10 * 8; i++)
			if (!unlinkat(dirfd(d), v[i].name, 0)) {
				total -= v[i].size;
				rtl_debug("%s/%s: removed from the warm-start cache (least recently used)", dir,
					  v[i].name);
			}
	}
	closedir(d);
	free(v);
}
