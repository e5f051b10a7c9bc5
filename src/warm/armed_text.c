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
 * one that wrote it, and the armed entries are the same.
 *
 * Writing the file (cc1's is 20 MB) is a helper thread's work, while the
 * program runs: in the run's own thread it held a first run of gcc -O2 -c
 * 40 ms longer, and of python3.11 -c pass 8 ms. */
#include <elf.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "os/linux/os.h"
#include "util/file_id.h"
#include "util/log.h"
#include "util/thread.h"
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
	h.mtime_ns = file_mtime_ns(st);
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

/* A file to write: everything it needs taken from the binary at once, so
 * that the helper reads nothing the run's thread may change. */
struct armed_job {
	struct armed_job *next;
	char *path, *bin_path;
	struct armed_header h;
	uint64_t *at;               /* the int3s' offsets in the segment */
	size_t n;
};

struct armed_saver {
	pthread_mutex_t lock;
	pthread_cond_t wake;
	pthread_t thread;
	bool started, stop;
	struct armed_job *jobs;
	struct os_cpus cpus;        /* a copy: the placement that lends it may go first */
	bool any_cpu;
};

static void write_job(const struct armed_job *j)
{
	const struct armed_header *h = &j->h;
	uint8_t *buf = calloc(1, PAGE + h->len);
	int fd = buf ? open(j->bin_path, O_RDONLY | O_CLOEXEC) : -1;
	struct stat now;
	/* the bytes the loader maps: whole pages of the file, zeros past its
	 * end; from the file whose identity the header names */
	bool ok = fd >= 0 && !fstat(fd, &now) && (uint64_t)now.st_ino == h->ino && (uint64_t)now.st_dev == h->dev &&
		  pread(fd, buf + PAGE, h->len, (off_t)h->off) >= 0;
	if (fd >= 0)
		close(fd);
	if (ok) {
		memcpy(buf, h, sizeof(*h));
		for (size_t i = 0; i < j->n; i++)
			buf[PAGE + j->at[i]] = 0xcc;
		const void *parts[] = { buf };
		size_t lens[] = { PAGE + h->len };
		warm_write_file(j->path, parts, lens, 1);
	}
	free(buf);
}

static void job_free(struct armed_job *j)
{
	free(j->path);
	free(j->bin_path);
	free(j->at);
	free(j);
}

static void *saver_main(void *arg)
{
	struct armed_saver *sv = arg;
	if (!sv->any_cpu)   /* not the CPU the event loop may be pinned to */
		os_cpus_set(0, &sv->cpus);
	/* only on an idle CPU: the program and reticle's own run come first
	 * (normal priority back at the end, armed_saver_free) */
	struct sched_param idle = { 0 };
	pthread_setschedparam(pthread_self(), SCHED_IDLE, &idle);
	pthread_mutex_lock(&sv->lock);
	for (;;) {
		struct armed_job *j = sv->jobs;
		if (!j) {
			if (sv->stop)
				break;
			pthread_cond_wait(&sv->wake, &sv->lock);
			continue;
		}
		sv->jobs = j->next;
		pthread_mutex_unlock(&sv->lock);
		write_job(j);
		job_free(j);
		pthread_mutex_lock(&sv->lock);
	}
	pthread_mutex_unlock(&sv->lock);
	return NULL;
}

struct armed_saver *armed_saver_new(const struct os_cpus *cpus)
{
	struct armed_saver *sv = calloc(1, sizeof(*sv));
	if (!sv)
		return NULL;
	pthread_mutex_init(&sv->lock, NULL);
	pthread_cond_init(&sv->wake, NULL);
	if (cpus)
		sv->cpus = *cpus;
	sv->any_cpu = !cpus;
	return sv;
}

void armed_saver_free(struct armed_saver *sv)
{
	if (!sv)
		return;
	pthread_mutex_lock(&sv->lock);
	sv->stop = true;
	pthread_cond_signal(&sv->wake);
	pthread_mutex_unlock(&sv->lock);
	if (sv->started) {
		struct sched_param normal = { 0 };
		pthread_setschedparam(sv->thread, SCHED_OTHER, &normal);
		pthread_join(sv->thread, NULL);
	}
	for (struct armed_job *j = sv->jobs, *next; j; j = next) {   /* the thread never started */
		next = j->next;
		write_job(j);
		job_free(j);
	}
	pthread_cond_destroy(&sv->wake);
	pthread_mutex_destroy(&sv->lock);
	free(sv);
}

void armed_text_save(struct armed_saver *sv, const char *dir, const rtl_binary *bin,
		     const struct armed_seg *seg, const uint32_t *idx, size_t n)
{
	struct stat st;
	struct armed_job *j = sv ? calloc(1, sizeof(*j)) : NULL;
	if (!j)
		return;
	j->path = armed_path(dir, bin);
	j->bin_path = strdup(rtl_binary_path(bin));
	j->at = malloc((n ? n : 1) * sizeof(*j->at));
	bool ok = j->path && j->bin_path && j->at && binary_stat(bin, &st);
	for (size_t i = 0; i < n && ok; i++) {
		j->at[i] = rtl_binary_function(bin, idx[i])->addr - seg->addr;
		ok = j->at[i] < seg->len;
	}
	if (!ok) {
		job_free(j);
		return;
	}
	j->n = n;
	j->h = header_of(bin, seg, idx, n, &st);
	pthread_mutex_lock(&sv->lock);
	j->next = sv->jobs;
	sv->jobs = j;
	if (!sv->started)
		sv->started = !rtl_thread_start(&sv->thread, saver_main, sv);
	pthread_cond_signal(&sv->wake);
	pthread_mutex_unlock(&sv->lock);
}
