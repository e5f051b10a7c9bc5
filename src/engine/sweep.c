/* Probes that remove themselves once they have fired: coverage only asks
 * whether a block (or an entry) ran, so after its counter has left 0 its
 * increment is of no more use. When `cover` is the session's only
 * collector, the event loop sweeps every 20 ms (sweep_due): each counter
 * increment of a relocated copy whose counter is not 0 any more is turned
 * off with one atomic store through reticle's own mapping of the window:
 * the 9-byte 'add qword [rip+X], 1' becomes a 9-byte nop (its first 8
 * bytes written, the last one, the 1, becoming the top byte of the nop's
 * displacement), longer forms get a 2-byte 'jmp' over them (a jump per
 * block costs a taken branch: a tight loop ran 1.6x slower with jumps
 * than with nops). A thread that fetched the old bytes runs the increment
 * once more (its counter only grows); one that sees the new ones skips
 * it: both are right, so no thread is stopped. An increment whose bytes
 * to write straddle a cache line (no atomic store there) stays.
 * A long run then pays for each block once, and runs at native speed
 * afterwards (BENCHMARKS.md). Counts become "ran or not" (1 or 0).
 *
 * The increments are found in the copy's bytes, by the four forms the code
 * writer emits (writer.c) and their rip-relative counter, one of the
 * function's own: the same for fresh, restored and made-ahead copies. */
#include <stdlib.h>
#include <string.h>
#include "engine/engine.h"
#include "util/array.h"
#include "util/log.h"

enum { SWEEP_NS = 20000000 };

/* The forms of writer.c's counter increments: their leading bytes, where
 * their rip-relative displacement is and where that instruction ends, and
 * the whole length to jump over. The flags-live single-thread form holds
 * the atomic one at its end: it is tried first, and skipped past. */
static const struct form {
	uint8_t head[11];
	uint8_t nhead, disp, end, len;
} forms[] = {
	/* nop2 (or 'jmp +35' once atomic); lea rsp,[rsp-128]; push rax; mov rax,[rip+X] ... */
	{ { 0x66, 0x90, 0x48, 0x8d, 0x64, 0x24, 0x80, 0x50, 0x48, 0x8b, 0x05 }, 11, 11, 15, 61 },
	{ { 0xeb, 0x23, 0x48, 0x8d, 0x64, 0x24, 0x80, 0x50, 0x48, 0x8b, 0x05 }, 11, 11, 15, 61 },
	/* lea rsp,[rsp-128]; pushfq; lock add qword [rip+X],1; popfq; lea rsp,[rsp+128] */
	{ { 0x48, 0x8d, 0x64, 0x24, 0x80, 0x9c, 0xf0, 0x48, 0x83, 0x05 }, 10, 10, 15, 24 },
	/* ds (or lock) add qword [rip+X], 1 */
	{ { 0x3e, 0x48, 0x83, 0x05 }, 4, 4, 9, 9 },
	{ { 0xf0, 0x48, 0x83, 0x05 }, 4, 4, 9, 9 },
};

/* Adds the increments of FS's copy to P's pending list. */
static void find_sites(struct proc *p, struct module *m, struct func_state *fs)
{
	struct window *w = m->win >= 0 ? &p->shm.wins[m->win] : NULL;
	size_t n = 0;
	uint64_t *ctr = malloc((fs->nblocks + 1) * sizeof(*ctr));
	if (!w || !ctr) {
		free(ctr);
		return;
	}
	if (fs->entry_counter)
		ctr[n++] = fs->entry_counter;
	for (uint32_t b = 0; b < fs->nblocks; b++)
		if (p->blocks[fs->block0 + b].counter)
			ctr[n++] = p->blocks[fs->block0 + b].counter;
	if (rtl_radix_sort_u64(ctr, n, sizeof(*ctr), 0))
		n = 0;   /* no memory: its increments stay */
	const uint8_t *code = window_local(w, fs->entry);
	for (size_t i = 0; n && i + 9 <= fs->code_len;) {
		const struct form *hit = NULL;
		uint64_t target = 0;
		for (size_t k = 0; k < sizeof(forms) / sizeof(*forms) && !hit; k++) {
			const struct form *f = &forms[k];
			if (i + f->len > fs->code_len || memcmp(code + i, f->head, f->nhead))
				continue;
			int32_t disp;
			memcpy(&disp, code + i + f->disp, 4);
			target = fs->entry + i + f->end + (int64_t)disp;
			size_t at = rtl_lower_bound_u64(ctr, n, target);
			if (at < n && ctr[at] == target)
				hit = f;
		}
		if (!hit) {
			i++;
			continue;
		}
		uint64_t at = fs->entry + i;
		/* the nop's 8 bytes, or the jump's 2, within one cache line */
		uint8_t skip = hit->len == 9 && (at & 63) <= 56 ? 0 : (at & 63) != 63 ? (uint8_t)(hit->len - 2) : 0xff;
		if (skip != 0xff && !rtl_grow(&p->sweep, &p->capsweep, p->nsweep + 1, sizeof(*p->sweep)))
			p->sweep[p->nsweep++] = (struct sweep_site){ at, target, skip };
		i += hit->len;
	}
	free(ctr);
}

void sweep_proc(struct proc *p)
{
	for (size_t i = 0; i < p->nmods; i++) {
		struct module *m = &p->mods[i];
		size_t n = rtl_binary_function_count(m->bin);
		for (size_t k = 0; m->win >= 0 && !m->unloaded && k < n; k++)
			if (m->fs[k].status == FS_DONE && !m->fs[k].swept) {
				m->fs[k].swept = true;
				find_sites(p, m, &m->fs[k]);
			}
	}
	for (size_t i = 0; i < p->nsweep;) {
		struct sweep_site *s = &p->sweep[i];
		struct window *w = proc_window_at(p, s->at, 2);
		if (!w || !proc_read_counter(p, s->counter)) {
			i += w != NULL;
			if (!w)
				*s = p->sweep[--p->nsweep];   /* its module is gone */
			continue;
		}
		uint8_t *site = window_local(w, s->at);
		uint64_t old;
		memcpy(&old, site, 8);
		if (s->skip) {   /* jmp +SKIP */
			__atomic_store_n((uint16_t *)(void *)site, (uint16_t)(0xeb | s->skip << 8), __ATOMIC_RELEASE);
		} else {         /* 66 0f 1f 84 00 [00 00 00 01]: nopw 0x1000000(%rax,%rax,1) */
			static const uint8_t nop[8] = { 0x66, 0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00 };
			uint64_t v;
			memcpy(&v, nop, 8);
			__atomic_store_n((uint64_t *)(void *)site, v, __ATOMIC_RELEASE);
		}
		if (!rtl_grow(&p->swept_sites, &p->capswept, p->nswept + 1, sizeof(*p->swept_sites)))
			p->swept_sites[p->nswept++] = (struct swept_site){ s->at, old };
		p->sweep_removed++;
		*s = p->sweep[--p->nsweep];
	}
}

void sweep_fork(struct proc *parent, struct proc *child)
{
	/* the child's windows are copies of the parent's, removed increments
	 * included, and its counters start at 0: they are put back */
	for (size_t i = 0; i < parent->nswept; i++) {
		struct window *w = proc_window_at(child, parent->swept_sites[i].at, 2);
		if (w)
			memcpy(window_local(w, parent->swept_sites[i].at), &parent->swept_sites[i].old, 8);
	}
	for (size_t i = 0; i < child->nmods; i++) {
		struct module *m = &child->mods[i];
		size_t n = rtl_binary_function_count(m->bin);
		for (size_t k = 0; k < n; k++)
			m->fs[k].swept = false;
	}
	child->nsweep = child->nswept = 0;
	child->sweeping = parent->sweeping;
}

bool sweep_due(uint64_t *last, uint64_t now)
{
	if (now - *last < SWEEP_NS)
		return false;
	*last = now;
	return true;
}
