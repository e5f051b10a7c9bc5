/* The sampler's reader: process images as the ring's records describe them
 * (mappings, forks, execs), the engine's copies in each, and a tree of
 * sampled stacks per image. One lock guards it all: the reader thread and
 * the engine's calls (copies placed, images taken) each hold it briefly. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "isa/x86_64/writer.h"
#include "os/linux/perf_ring.h"
#include "sample/sample.h"
#include "util/array.h"

enum { MAX_FRAMES = 256 };

struct copy_ent {
	uint64_t start, orig_entry;
	uint32_t len, n;
	uint64_t *from, *to;
	struct x86_sp_row *rows;  /* where snippets move %rsp */
	uint32_t nrows;
};

struct image {
	pid_t pid;
	unsigned gen;
	bool taken;
	struct image *parent;     /* forked from: its copies until then are ours too */
	struct sample_map *maps;     /* by start, not overlapping */
	size_t nmaps, capmaps;
	struct copy_ent *copies;
	size_t ncopies, capcopies;
	bool sorted;
	/* the tree, and its index by (parent, pc) */
	struct sample_node *nodes;
	size_t nnodes, capnodes;
	uint32_t *index;
	size_t index_size;
};

struct pid_cur {
	pid_t pid;
	struct image *img;
};

struct sampler {
	struct sampler_opts opts;
	struct perf_ring *ring;
	pthread_t thread;
	bool thread_started, stopping;
	int wake[2];              /* a byte written here ends the reader's wait at once */
	pthread_mutex_t lock;
	struct image **images;
	size_t nimages, capimages;
	struct pid_cur *cur;      /* each pid's image as the reader has seen it */
	size_t ncur, capcur;
	struct unw_mods *mods;    /* the files mapped, open for the unwinder */
	struct sampler_stats st;
	double period_sum, period_sq;
	uint64_t frames[MAX_FRAMES];
};

/* ---- images ---- */

static struct image *find_image(struct sampler *s, pid_t pid, unsigned gen, bool create)
{
	for (size_t i = s->nimages; i-- > 0;)
		if (s->images[i]->pid == pid && s->images[i]->gen == gen && !s->images[i]->taken)
			return s->images[i];
	if (!create || rtl_grow(&s->images, &s->capimages, s->nimages + 1, sizeof(*s->images)))
		return NULL;
	struct image *img = calloc(1, sizeof(*img));
	if (!img)
		return NULL;
	img->pid = pid;
	img->gen = gen;
	s->images[s->nimages++] = img;
	return img;
}

static struct pid_cur *cur_of(struct sampler *s, pid_t pid, bool create)
{
	for (size_t i = 0; i < s->ncur; i++)
		if (s->cur[i].pid == pid)
			return &s->cur[i];
	if (!create || rtl_grow(&s->cur, &s->capcur, s->ncur + 1, sizeof(*s->cur)))
		return NULL;
	s->cur[s->ncur] = (struct pid_cur){ pid, NULL };
	return &s->cur[s->ncur++];
}

static void tree_free(struct image *img)
{
	free(img->nodes);
	free(img->index);
	img->nodes = NULL;
	img->index = NULL;
	img->nnodes = img->capnodes = img->index_size = 0;
}

static void copies_free(struct image *img)
{
	for (size_t i = 0; i < img->ncopies; i++) {
		free(img->copies[i].from);
		free(img->copies[i].to);
		free(img->copies[i].rows);
	}
	free(img->copies);
	img->copies = NULL;
	img->ncopies = img->capcopies = 0;
}

static void image_free(struct image *img)
{
	for (size_t i = 0; i < img->nmaps; i++)
		free(img->maps[i].path);
	free(img->maps);
	copies_free(img);
	tree_free(img);
	free(img);
}

/* ---- mappings ---- */

static void add_map(struct sampler *s, struct image *img, uint64_t start, uint64_t len, uint64_t pgoff,
		    const char *path)
{
	uint64_t bias, end = start + len;
	if ((strcmp(path, "[vdso]") && (path[0] != '/' || !strncmp(path, "/memfd:", 7))) ||
	    !unw_load_bias(s->mods, path, start, pgoff, &bias))
		return;   /* anonymous, the code cache: no file to unwind by */
	size_t w = 0;
	for (size_t i = 0; i < img->nmaps; i++) {   /* drop what it replaces */
		if (img->maps[i].start < end && img->maps[i].end > start) {
			free(img->maps[i].path);
			continue;
		}
		img->maps[w++] = img->maps[i];
	}
	img->nmaps = w;
	char *p = strdup(path);
	if (!p || rtl_grow(&img->maps, &img->capmaps, img->nmaps + 1, sizeof(*img->maps))) {
		free(p);
		return;
	}
	size_t at = 0;
	while (at < img->nmaps && img->maps[at].start < start)
		at++;
	memmove(img->maps + at + 1, img->maps + at, (img->nmaps - at) * sizeof(*img->maps));
	img->maps[at] = (struct sample_map){ start, end, bias, p };
	img->nmaps++;
}

static void copy_maps(struct image *to, const struct image *from)
{
	for (size_t i = 0; i < from->nmaps; i++) {
		char *p = strdup(from->maps[i].path);
		if (!p || rtl_grow(&to->maps, &to->capmaps, to->nmaps + 1, sizeof(*to->maps))) {
			free(p);
			return;
		}
		to->maps[to->nmaps] = from->maps[i];
		to->maps[to->nmaps++].path = p;
	}
}

static void read_proc_maps(struct sampler *s, struct image *img, pid_t pid)
{
	char path[64], line[4096 + 128], perms[8], file[4096];
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long lo, hi, off;
		file[0] = 0;
		if (sscanf(line, "%llx-%llx %7s %llx %*s %*s %4095[^\n]", &lo, &hi, perms, &off, file) >= 4 &&
		    perms[2] == 'x' && file[0])
			add_map(s, img, lo, hi - lo, off, file);
	}
	fclose(f);
}

/* ---- address lookups for the unwinder ---- */

static bool module_at(void *user, uint64_t pc, const char **path, uint64_t *bias)
{
	const struct image *img = user;
	/* the first map ending above PC */
	size_t lo = rtl_lower_bound_u64_in(img->maps, img->nmaps, sizeof(*img->maps), offsetof(struct sample_map, end),
					   pc + 1);
	if (lo < img->nmaps && img->maps[lo].start <= pc) {
		*path = img->maps[lo].path;
		*bias = img->maps[lo].bias;
		return true;
	}
	return false;
}

static int by_start(const void *a, const void *b)
{
	const struct copy_ent *x = a, *y = b;
	return (x->start > y->start) - (x->start < y->start);
}

static const struct copy_ent *copy_in(struct image *img, uint64_t pc)
{
	if (!img->sorted) {
		qsort(img->copies, img->ncopies, sizeof(*img->copies), by_start);
		img->sorted = true;
	}
	size_t lo = 0, hi = img->ncopies;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (img->copies[mid].start <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return NULL;
	const struct copy_ent *c = &img->copies[lo - 1];
	return pc < c->start + c->len ? c : NULL;
}

static uint64_t original(void *user, uint64_t pc, bool exact)
{
	(void)exact;
	for (struct image *img = user; img; img = img->parent) {
		const struct copy_ent *c = copy_in(img, pc);
		if (!c)
			continue;
		if (pc == c->start)
			return c->orig_entry;
		/* the instruction whose code holds PC: its counter code comes
		 * first, then its own bytes (map_to ascends) */
		size_t j = rtl_lower_bound_u64(c->to, c->n, pc + 1);
		return j ? c->from[j - 1] : c->orig_entry;
	}
	return 0;
}

static uint32_t sp_below(void *user, uint64_t pc)
{
	for (struct image *img = user; img; img = img->parent) {
		const struct copy_ent *c = copy_in(img, pc);
		if (c)
			return x86_sp_below(c->rows, c->nrows, (uint32_t)(pc - c->start));
	}
	return 0;
}

/* ---- the tree ---- */

static uint64_t node_hash(uint32_t parent, uint64_t pc)
{
	uint64_t h = (pc ^ ((uint64_t)parent << 32 | parent)) * 0x9e3779b97f4a7c15ull;
	return h ^ (h >> 29);
}

static int index_grow(struct image *img)
{
	size_t size = img->index_size ? img->index_size * 2 : 1024;
	uint32_t *ix = malloc(size * sizeof(*ix));
	if (!ix)
		return -ENOMEM;
	memset(ix, 0xff, size * sizeof(*ix));
	for (size_t i = 0; i < img->nnodes; i++) {
		size_t h = node_hash(img->nodes[i].parent, img->nodes[i].pc) & (size - 1);
		while (ix[h] != UINT32_MAX)
			h = (h + 1) & (size - 1);
		ix[h] = (uint32_t)i;
	}
	free(img->index);
	img->index = ix;
	img->index_size = size;
	return 0;
}

/* The child of PARENT at PC (a root: PARENT UINT32_MAX, PC the tid). */
static uint32_t child(struct image *img, uint32_t parent, uint64_t pc, int tid)
{
	if ((img->nnodes + 1) * 2 > img->index_size && index_grow(img))
		return UINT32_MAX;
	size_t mask = img->index_size - 1, h = node_hash(parent, pc) & mask;
	for (; img->index[h] != UINT32_MAX; h = (h + 1) & mask) {
		const struct sample_node *n = &img->nodes[img->index[h]];
		if (n->parent == parent && n->pc == pc)
			return img->index[h];
	}
	if (rtl_grow(&img->nodes, &img->capnodes, img->nnodes + 1, sizeof(*img->nodes)))
		return UINT32_MAX;
	img->nodes[img->nnodes] = (struct sample_node){ parent, tid, pc, 0, 0 };
	img->index[h] = (uint32_t)img->nnodes;
	return (uint32_t)img->nnodes++;
}

/* ---- records ---- */

static struct image *current(struct sampler *s, pid_t pid)
{
	struct pid_cur *c = cur_of(s, pid, true);
	if (c && !c->img)
		c->img = find_image(s, pid, 0, true);
	return c ? c->img : NULL;
}

static void on_sample(struct sampler *s, const struct perf_sample *ps)
{
	struct image *img = current(s, ps->pid);
	if (!img || !ps->have_regs)
		return;
	s->st.samples++;
	s->period_sum += (double)ps->period;
	s->period_sq += (double)ps->period * (double)ps->period;
	struct unw_frame_env env = { module_at, original, img, sp_below };
	bool truncated;
	size_t nf = unw_stack(s->mods, &env, ps->regs, ps->stack, ps->stack_len, s->frames, NULL, MAX_FRAMES,
			      &truncated);
	s->st.truncated += truncated;
	uint32_t at = child(img, UINT32_MAX, (uint64_t)ps->tid, ps->tid);
	for (size_t i = nf; i-- > 0 && at != UINT32_MAX;)
		at = child(img, at, s->frames[i], ps->tid);
	if (ps->in_kernel && at != UINT32_MAX)
		at = child(img, at, SAMPLE_PC_KERNEL, ps->tid);
	if (at != UINT32_MAX) {
		img->nodes[at].self++;
		img->nodes[at].self_weight += ps->period;
	}
}

static void on_record(const struct perf_rec *r, void *user)
{
	struct sampler *s = user;
	struct pid_cur *c;
	struct image *img;
	switch (r->kind) {
	case PERF_REC_SAMPLE:
		on_sample(s, &r->sample);
		break;
	case PERF_REC_MMAP:
		if ((img = current(s, r->pid)))
			add_map(s, img, r->addr, r->len, r->pgoff, r->path);
		break;
	case PERF_REC_FORK:
		if (r->pid == r->ppid || !(c = cur_of(s, r->pid, true)))
			break;   /* a thread */
		struct image *parent = current(s, r->ppid);
		c = cur_of(s, r->pid, false);   /* current() may have moved the array */
		if (!c || !(img = find_image(s, r->pid, 0, true)))
			break;
		c->img = img;
		img->parent = parent;
		if (parent && !img->nmaps)
			copy_maps(img, parent);
		break;
	case PERF_REC_EXEC:
		if (!(img = current(s, r->pid)) || !(c = cur_of(s, r->pid, false)))
			break;
		unsigned gen = img->gen + 1;
		c->img = find_image(s, r->pid, gen, true);
		break;
	case PERF_REC_LOST:
		s->st.lost += r->lost;
		break;
	}
}

static void *reader(void *arg)
{
	struct sampler *s = arg;
	size_t nfd = perf_ring_nfds(s->ring);
	struct pollfd *pfd = calloc(nfd + 1, sizeof(*pfd));
	for (size_t i = 0; pfd && i < nfd; i++)
		pfd[i] = (struct pollfd){ perf_ring_fd(s->ring, i), POLLIN, 0 };
	if (pfd)
		pfd[nfd] = (struct pollfd){ s->wake[0], POLLIN, 0 };
	for (;;) {
		int n = pfd ? poll(pfd, nfd + 1, 20) : 0;
		pthread_mutex_lock(&s->lock);
		bool stop = s->stopping;
		perf_ring_read(s->ring, on_record, s);
		pthread_mutex_unlock(&s->lock);
		if (stop)
			break;
		bool hup = !pfd;
		for (size_t i = 0; n > 0 && i < nfd; i++)
			hup |= (pfd[i].revents & (POLLHUP | POLLERR)) != 0;
		if (hup) {   /* every task gone: poll would not wait */
			struct pollfd w = { s->wake[0], POLLIN, 0 };
			poll(&w, 1, 20);
		}
	}
	free(pfd);
	return NULL;
}

/* ---- the engine's side ---- */

int sampler_start(const struct sampler_opts *o, pid_t pid, struct sampler **out, char *why, size_t len)
{
	struct sampler *s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->opts.event = o && o->event ? o->event : "cpu-clock";
	s->opts.freq = o && o->freq ? o->freq : 1000;
	s->opts.stack_bytes = o && o->stack_bytes ? o->stack_bytes : 16384;
	s->opts.attach = o && o->attach;
	pthread_mutex_init(&s->lock, NULL);
	s->wake[0] = s->wake[1] = -1;
	if (pipe2(s->wake, O_CLOEXEC | O_NONBLOCK)) {
		int err = errno;
		snprintf(why, len, "%s", strerror(err));
		free(s);
		return -err;
	}
	struct perf_ring_opts ro = { s->opts.event, s->opts.freq, s->opts.stack_bytes, true, o && o->attach };
	int err = perf_ring_open(&ro, pid, &s->ring, why, len);
	if (!err && !(s->mods = unw_mods_new()))
		err = -ENOMEM;
	struct image *img = err ? NULL : current(s, pid);
	if (!err && !img)
		err = -ENOMEM;
	if (!err) {
		read_proc_maps(s, img, pid);
		s->st.kernel = perf_ring_kernel(s->ring);
		if (pthread_create(&s->thread, NULL, reader, s))
			err = -EAGAIN;
		else
			s->thread_started = true;
	}
	if (err) {
		if (err == -ENOMEM || err == -EAGAIN)
			snprintf(why, len, "%s", strerror(-err));
		sampler_stop(s, NULL);
		return err;
	}
	*out = s;
	return 0;
}

void sampler_copy_placed(struct sampler *s, pid_t pid, unsigned gen, uint64_t copy, uint32_t len,
			 uint64_t orig_entry, const uint64_t *from, const uint64_t *to, uint32_t n,
			 const struct x86_sp_row *rows, uint32_t nrows)
{
	struct copy_ent c = { copy, orig_entry, len, n, malloc(n * sizeof(uint64_t)), malloc(n * sizeof(uint64_t)),
			      nrows ? rtl_dup_array(rows, nrows, sizeof(*rows)) : NULL, nrows };
	if ((n && (!c.from || !c.to)) || (nrows && !c.rows)) {
		free(c.from);
		free(c.to);
		free(c.rows);
		return;
	}
	memcpy(c.from, from, n * sizeof(uint64_t));
	memcpy(c.to, to, n * sizeof(uint64_t));
	pthread_mutex_lock(&s->lock);
	struct image *img = find_image(s, pid, gen, true);
	if (img && !rtl_grow(&img->copies, &img->capcopies, img->ncopies + 1, sizeof(*img->copies))) {
		img->copies[img->ncopies++] = c;
		img->sorted = false;
		c.from = c.to = NULL;
		c.rows = NULL;
	}
	pthread_mutex_unlock(&s->lock);
	free(c.from);
	free(c.to);
	free(c.rows);
}

/* IMG's copies once nothing needs them: it was taken, and no image still
 * sampled was forked from it (a child looks copies up in its parent). A
 * session of thousands of processes keeps the live ones' only. */
static void release_copies(struct sampler *s, struct image *img)
{
	while (img && img->taken && img->copies) {
		for (size_t i = 0; i < s->nimages; i++)
			if (s->images[i]->parent == img && (!s->images[i]->taken || s->images[i]->copies))
				return;
		copies_free(img);
		img = img->parent;
	}
}

int sampler_take(struct sampler *s, pid_t pid, unsigned gen, struct sample_tree *out)
{
	pthread_mutex_lock(&s->lock);
	perf_ring_read(s->ring, on_record, s);
	struct image *img = find_image(s, pid, gen, false);
	memset(out, 0, sizeof(*out));
	if (img) {
		out->maps = img->maps;   /* the image's own, not shared with a fork child */
		out->nmaps = img->nmaps;
		img->maps = NULL;
		img->nmaps = img->capmaps = 0;
		out->n = img->nodes;
		out->count = img->nnodes;
		img->nodes = NULL;
		tree_free(img);
		img->taken = true;
		for (size_t i = 0; i < s->ncur; i++)
			if (s->cur[i].img == img)
				s->cur[i] = s->cur[--s->ncur];
		release_copies(s, img);
	}
	pthread_mutex_unlock(&s->lock);
	return 0;
}

int sampler_take_any(struct sampler *s, pid_t *pid, unsigned *gen, struct sample_tree *out)
{
	pthread_mutex_lock(&s->lock);
	perf_ring_read(s->ring, on_record, s);
	struct image *img = NULL;
	for (size_t i = 0; i < s->nimages && !img; i++)
		if (!s->images[i]->taken && s->images[i]->nnodes)
			img = s->images[i];
	if (img) {
		*pid = img->pid;
		*gen = img->gen;
	}
	pthread_mutex_unlock(&s->lock);
	return img ? sampler_take(s, *pid, *gen, out) == 0 : 0;
}

void sample_tree_free(struct sample_tree *t)
{
	for (size_t i = 0; i < t->nmaps; i++)
		free(t->maps[i].path);
	free(t->maps);
	t->maps = NULL;
	t->nmaps = 0;
	free(t->n);
	t->n = NULL;
	t->count = 0;
}

void sampler_stop(struct sampler *s, struct sampler_stats *stats)
{
	if (!s)
		return;
	if (s->thread_started) {
		pthread_mutex_lock(&s->lock);
		s->stopping = true;
		pthread_mutex_unlock(&s->lock);
		ssize_t rc = write(s->wake[1], "", 1);   /* failing, the reader wakes within 20 ms */
		(void)rc;
		pthread_join(s->thread, NULL);
	}
	if (stats) {
		*stats = s->st;
		double n = (double)s->st.samples;
		if (n > 0) {
			stats->period_mean = s->period_sum / n;
			double var = s->period_sq / n - stats->period_mean * stats->period_mean;
			stats->period_cv = stats->period_mean > 0 && var > 0 ? sqrt(var) / stats->period_mean : 0;
		}
	}
	perf_ring_close(s->ring);
	for (size_t i = 0; i < s->nimages; i++)
		image_free(s->images[i]);
	free(s->images);
	free(s->cur);
	unw_mods_free(s->mods);
	close(s->wake[0]);
	close(s->wake[1]);
	pthread_mutex_destroy(&s->lock);
	free(s);
}
