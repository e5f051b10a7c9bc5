#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <reticle/error.h>
#include "runtime/arc_table.h"
#include "runtime/thread_area.h"
#include "runtime/window.h"
#include "util/array.h"

enum { PAGE = 4096 };
#define USER_TOP 0x7ffffffff000ull         /* the canonical limit */
#define STACK_ROOM (1ull << 30)             /* kept free below the main stack for its growth */
#define REACH ((2048ull << 20) - (64ull << 20))   /* 2GiB less a safety margin */

int shm_init(struct shm *s)
{
	memset(s, 0, sizeof(*s));
	s->fd = memfd_create("reticle-runtime", MFD_CLOEXEC);
	return s->fd < 0 ? -errno : 0;
}

void shm_free(struct shm *s)
{
	for (size_t i = 0; i < s->nwins; i++)
		munmap(s->wins[i].local, s->wins[i].code_cap + s->wins[i].ctr_cap);
	free(s->wins);
	if (s->fd >= 0)
		close(s->fd);
	memset(s, 0, sizeof(*s));
	s->fd = -1;
}

int shm_add_window(struct shm *s, uint64_t addr, size_t code_cap, size_t ctr_cap)
{
	size_t len = code_cap + ctr_cap;
	struct window *nw = realloc(s->wins, (s->nwins + 1) * sizeof(*nw));

	if (!nw)
		return -ENOMEM;
	s->wins = nw;
	if (ftruncate(s->fd, (off_t)(s->size + len)))
		return -errno;
	void *local = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, s->fd, (off_t)s->size);
	if (local == MAP_FAILED)
		return -errno;
	/* the arc table at the top of the counter area, when there is one,
	 * has no slab words (its counts stay locked) */
	size_t slab_len = ctr_cap > ARC_TABLE_BYTES + 4096 ? (ctr_cap - ARC_TABLE_BYTES) & ~(size_t)4095 : ctr_cap;
	int64_t slab = -1;
	if (s->slab_used + slab_len <= TA_SLAB_SIZE) {
		slab = (int64_t)s->slab_used;
		s->slab_used += slab_len;
	}
	s->wins[s->nwins] = (struct window){ .addr = addr, .code_cap = code_cap, .ctr_cap = ctr_cap,
					     .off = s->size, .local = local, .slab = slab,
					     .slab_len = slab < 0 ? 0 : slab_len };
	s->size += len;
	return (int)s->nwins++;
}

int shm_clone(const struct shm *s, struct shm *d)
{
	int err = shm_init(d);
	if (err)
		return err;
	for (size_t i = 0; i < s->nwins; i++) {
		const struct window *w = &s->wins[i];
		int k = shm_add_window(d, w->addr, w->code_cap, w->ctr_cap);
		if (k < 0) {
			shm_free(d);
			return k;
		}
		struct window *c = &d->wins[k];
		memcpy(c->local, w->local, w->code_used);
		c->code_used = w->code_used;
		c->ctr_used = w->ctr_used;   /* same counter slots, zero counts */
		c->arc_off = w->arc_off;     /* an empty arc table, the same sites */
		c->narc_sites = w->narc_sites;
	}
	return 0;
}

static uint64_t alloc_code(struct window *w, size_t len, size_t align, size_t cap)
{
	size_t at = (w->code_used + align - 1) & ~(align - 1);
	if (at + len > cap)
		return 0;
	w->code_used = at + len;
	return w->addr + at;
}

uint64_t window_alloc_code(struct window *w, size_t len, size_t align)
{
	return alloc_code(w, len, align, w->code_cap - w->code_cap / 16);
}

uint64_t window_alloc_code_reserved(struct window *w, size_t len, size_t align)
{
	return alloc_code(w, len, align, w->code_cap);
}

void window_reserve_arcs(struct window *w)
{
	size_t top = (w->ctr_cap - ARC_TABLE_BYTES) & ~(size_t)15;
	if (w->ctr_cap >= ARC_TABLE_BYTES + 64 && top >= w->ctr_used)
		w->arc_off = top;
}

uint64_t window_arcs(const struct window *w)
{
	return w->arc_off ? w->addr + w->code_cap + w->arc_off + ARC_HEADER : 0;
}

uint64_t window_alloc_counter(struct window *w)
{
	if (w->ctr_used + 8 > (w->arc_off ? w->arc_off : w->ctr_cap))
		return 0;
	uint64_t a = w->addr + w->code_cap + w->ctr_used;
	w->ctr_used += 8;
	return a;
}

size_t window_slab_words(const struct window *w)
{
	if (w->slab < 0)
		return 0;
	size_t len = w->arc_off && w->arc_off < w->slab_len ? w->arc_off : w->slab_len;
	return len / 8;
}

int64_t window_slab_disp(const struct window *w, uint64_t counter)
{
	uint64_t start = w->addr + w->code_cap;
	if (counter < start || (counter - start) / 8 >= window_slab_words(w))
		return -1;
	return TA_SLAB + w->slab + (int64_t)(counter - start);
}

struct range { uint64_t lo, hi; };

static int read_maps(pid_t pid, struct range **out, size_t *n)
{
	char path[64], line[512];
	size_t cap = 0;
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return -errno;
	*out = NULL;
	*n = 0;
	while (fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;
		if (sscanf(line, "%lx-%lx", &lo, &hi) != 2)
			continue;
		if (rtl_grow(out, &cap, *n + 1, sizeof(**out))) {
			fclose(f);
			return -ENOMEM;
		}
		if (strstr(line, "[stack]") && lo > STACK_ROOM)
			lo -= STACK_ROOM;
		(*out)[(*n)++] = (struct range){ lo, hi };
	}
	fclose(f);
	return 0;
}

/* Best start inside the free gap [glo, ghi) for LEN bytes near [lo, hi). */
static uint64_t place_in_gap(uint64_t glo, uint64_t ghi, uint64_t lo, uint64_t hi, size_t len)
{
	uint64_t min = hi > REACH ? hi - REACH : PAGE * 16;   /* window start >= this */
	uint64_t max = lo + REACH - len;                      /* window start <= this */
	if (glo < min)
		glo = min;
	if (ghi > max + len)
		ghi = max + len;
	if (glo >= ghi || ghi - glo < len + 2 * PAGE)
		return 0;
	/* as close to the module as possible, one guard page away */
	if (ghi <= lo)
		return (ghi - len - PAGE) & ~(uint64_t)(PAGE - 1);
	return (glo + PAGE + PAGE - 1) & ~(uint64_t)(PAGE - 1);
}

/* Free gap I (0..N) of a process whose N mappings are MAPS, in address
 * order: [*GLO, *GHI), before the first mapping, between two, or after the
 * last up to the top of user space (empty when a mapping lies there). */
static void free_gap(const struct range *maps, size_t n, size_t i, uint64_t *glo, uint64_t *ghi)
{
	*glo = i ? maps[i - 1].hi : PAGE * 16;
	*ghi = i < n ? maps[i].lo : USER_TOP;
	if (*ghi > USER_TOP)
		*ghi = USER_TOP;
}

/* Bytes of [glo, ghi) outside [alo, ahi). */
static uint64_t outside(uint64_t glo, uint64_t ghi, uint64_t alo, uint64_t ahi)
{
	if (glo >= ghi)
		return 0;
	uint64_t n = ghi - glo;
	uint64_t olo = alo > glo ? alo : glo, ohi = ahi < ghi ? ahi : ghi;
	return olo < ohi ? n - (ohi - olo) : n;
}

uint64_t free_room_near(pid_t pid, uint64_t lo, uint64_t hi, uint64_t avoid_lo, uint64_t avoid_hi)
{
	struct range *maps;
	size_t n;
	uint64_t room = 0;
	uint64_t min = hi > REACH ? hi - REACH : PAGE * 16, max = lo + REACH;

	if (read_maps(pid, &maps, &n))
		return 0;
	for (size_t i = 0; i <= n; i++) {
		uint64_t glo, ghi;
		free_gap(maps, n, i, &glo, &ghi);
		if (glo < min)
			glo = min;
		if (ghi > max)
			ghi = max;
		room += outside(glo, ghi, avoid_lo, avoid_hi);
	}
	free(maps);
	return room;
}

uint64_t find_free_range_near(pid_t pid, uint64_t lo, uint64_t hi, size_t len,
			      uint64_t avoid_lo, uint64_t avoid_hi)
{
	struct range *maps;
	size_t n;
	uint64_t best = 0, best_dist = UINT64_MAX;

	if (read_maps(pid, &maps, &n))
		return 0;
	for (size_t i = 0; i <= n; i++) {
		uint64_t glo, ghi;
		free_gap(maps, n, i, &glo, &ghi);
		/* cut the avoided range out of the gap, keep the larger side near us */
		uint64_t parts[2][2] = { { glo, ghi }, { 0, 0 } };
		if (avoid_hi > glo && avoid_lo < ghi) {
			parts[0][1] = avoid_lo > glo ? avoid_lo : glo;
			parts[1][0] = avoid_hi < ghi ? avoid_hi : ghi;
			parts[1][1] = ghi;
		}
		for (int p = 0; p < 2; p++) {
			uint64_t a = place_in_gap(parts[p][0], parts[p][1], lo, hi, len);
			if (!a)
				continue;
			uint64_t d = a < lo ? lo - a : a - hi;
			if (d < best_dist) {
				best = a;
				best_dist = d;
			}
		}
	}
	free(maps);
	return best;
}
