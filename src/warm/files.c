/* The warm-start cache's files: named by binary identity, written whole,
 * and kept within a size. When its files (`b-*` and `f-*`: lists, decoded
 * instructions, saved copies, discovered functions, armed text) pass the bound, the least recently
 * used go until it is 80% full. A file in use is touched when read (at most
 * once a day), so its modification time says when it last served. Half-
 * written files of runs that were killed (`*.tmp`) go after an hour.
 *
 * Reading the whole directory takes a stat per file (a cache of 1,500
 * files: 3 ms, a tenth of a short program's run under reticle): a small
 * file, `usage`, keeps the total the last reading found plus what runs
 * have written since, and the directory is read again only when that sum
 * passes the bound, or an hour after the last reading (other writers:
 * a run killed before it could add its bytes, files removed by hand). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "util/array.h"
#include "util/log.h"
#include "warm/warm.h"

char *warm_file_path(const char *dir, const rtl_binary *bin, const char *suffix)
{
	char id[160];
	if (rtl_binary_identity(bin, id, sizeof(id)))
		return NULL;
	size_t len = strlen(dir) + strlen(id) + strlen(suffix) + 3;
	char *path = malloc(len);
	if (path)
		snprintf(path, len, "%s/%s.%s", dir, id, suffix);
	return path;
}

int warm_make_dirs(const char *dir)
{
	char buf[4096];
	if (strlen(dir) >= sizeof(buf))
		return -ENAMETOOLONG;
	strcpy(buf, dir);
	for (char *c = buf + 1; ; c++)
		if (*c == '/' || !*c) {
			char end = *c;
			*c = 0;
			if (mkdir(buf, 0755) && errno != EEXIST)
				return -errno;
			if (!end)
				return 0;
			*c = end;
		}
}

/* Bytes this process wrote into cache files (warm_prune's estimate). */
static _Atomic uint64_t written;

/* Written under a temporary name and renamed: a reader never sees half a
 * file, and concurrent runs of one binary leave one of theirs whole. */
void warm_write_file(const char *path, const void *const *parts, const size_t *lens, int n)
{
	char tmp[4200];
	snprintf(tmp, sizeof(tmp), "%s.%d.tmp", path, (int)getpid());
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 && errno == ENOENT) {   /* the cache's first file (a binary's facts, at its open) */
		char *slash = strrchr(tmp, '/');
		if (slash) {
			*slash = 0;
			int made = warm_make_dirs(tmp);
			*slash = '/';
			if (!made)
				fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		}
	}
	if (fd < 0)
		return;
	bool ok = true;
	uint64_t total = 0;
	for (int i = 0; i < n && ok; i++) {
		ok = write(fd, parts[i], lens[i]) == (ssize_t)lens[i];
		total += lens[i];
	}
	ok = !close(fd) && ok;
	if (!ok || rename(tmp, path)) {
		rtl_debug("%s: not written: %s", path, strerror(errno));
		unlink(tmp);
	} else {
		written += total;   /* the file it replaced not taken off: an overestimate */
	}
}

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

enum { RESCAN_SECONDS = 3600 };

/* The usage file of DIR: the total its last reading found, when. */
static bool read_usage(const char *dir, uint64_t *total, time_t *when)
{
	char path[4200];
	snprintf(path, sizeof(path), "%s/usage", dir);
	FILE *f = fopen(path, "re");
	if (!f)
		return false;
	unsigned long long t = 0;
	long long w = 0;
	bool ok = fscanf(f, "%llu %lld", &t, &w) == 2;
	fclose(f);
	*total = t;
	*when = (time_t)w;
	return ok;
}

static void write_usage(const char *dir, uint64_t total, time_t when)
{
	char path[4200], tmp[4300];
	snprintf(path, sizeof(path), "%s/usage", dir);
	snprintf(tmp, sizeof(tmp), "%s.%d.tmp", path, (int)getpid());
	FILE *f = fopen(tmp, "we");
	if (!f)
		return;
	fprintf(f, "%llu %lld\n", (unsigned long long)total, (long long)when);
	if (fclose(f) || rename(tmp, path))
		unlink(tmp);
}

/* Reads DIR, removes the least recently used files while they pass
 * MAX_BYTES; the total left. */
static uint64_t prune_now(const char *dir, uint64_t max_bytes);

void warm_prune(const char *dir, uint64_t max_bytes)
{
	uint64_t total, add = written;
	time_t when, now = time(NULL);
	if (read_usage(dir, &total, &when) && now >= when && now - when < RESCAN_SECONDS &&
	    total + add <= max_bytes) {
		if (add)   /* concurrent runs may lose each other's sums: the hour's reading mends it */
			write_usage(dir, total + add, when);
		written -= add;
		return;
	}
	total = prune_now(dir, max_bytes);
	written -= add;
	write_usage(dir, total, now);
}

static uint64_t prune_now(const char *dir, uint64_t max_bytes)
{
	DIR *d = opendir(dir);
	if (!d)
		return 0;
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
	return total;
}
