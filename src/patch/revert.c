/* Copies given up for the original code (cover alone). Once a function's
 * copy has run hot and its fired increments are swept, what is left of
 * the copy (its nops, its relocated layout, a jump through the entry) is
 * the only cost of the run there. Such a function goes back to its own
 * code: every block whose counter is still 0 gets an int3 in the original
 * text (a one-shot breakpoint: the first thread that meets it sets the
 * counter to 1 and puts the byte back), the data words that pointed into
 * the copy (computed-goto tables) get their original values, and the
 * entry's jump its original bytes. The copy stays mapped: a frame that
 * runs there finishes there, its unfired increments still counting.
 *
 * Writes are ordered for threads running: the int3s first (no original
 * code runs yet), then the data words, then the entry (an int3 over the
 * jump's opcode, the four bytes, the first byte), so no thread reaches
 * the original code before its unfired blocks trap. */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <reticle/error.h>
#include "elf/code_facts.h"
#include "isa/x86_64/relocate.h"
#include "isa/x86_64/writer.h"
#include "os/linux/os.h"
#include "patch/patch.h"
#include "util/array.h"
#include "util/log.h"

enum { ENTRY_LEN = 5 };

_Static_assert(offsetof(struct probe_trap, at) == 0 && offsetof(struct move_trap, at) == 0,
	       "both trap kinds sort on their first word");

static int by_at(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

/* The first of the N traps of SIZE bytes at BASE (each starting with its
 * address) at or after AT. Traps added since the last look are sorted in
 * now (*UNSORTED): once for a sweep's give-ups, a sort per function given
 * up took python3.11's tracer 13 ms a run. */
static size_t first_at(void *base, size_t n, size_t size, bool *unsorted, uint64_t at)
{
	if (*unsorted) {
		qsort(base, n, size, by_at);
		*unsorted = false;
	}
	return rtl_lower_bound_u64_in(base, n, size, 0, at);
}

/* The live probe trap at AT, or NULL. */
static struct probe_trap *trap_at(struct proc *p, uint64_t at)
{
	struct patch_proc *st = p->patch;
	size_t lo = first_at(st->probe_traps, st->nprobe_traps, sizeof(*st->probe_traps), &st->probe_traps_unsorted,
			     at);
	for (; lo < st->nprobe_traps && st->probe_traps[lo].at == at; lo++)
		if (!p->mods[st->probe_traps[lo].mod].unloaded)
			return &st->probe_traps[lo];
	return NULL;
}

static struct move_trap *move_trap_at(struct proc *p, uint64_t at)
{
	struct patch_proc *st = p->patch;
	size_t lo = first_at(st->move_traps, st->nmove_traps, sizeof(*st->move_traps), &st->move_traps_unsorted, at);
	return lo < st->nmove_traps && st->move_traps[lo].at == at ? &st->move_traps[lo] : NULL;
}

bool patch_may_revert(const struct proc *p, const struct module *m, size_t k)
{
	const struct func_state *fs = &m->fs[k];
	const struct patch_env *env = p->patch->env;
	return fs->status == FS_DONE && !fs->revert_tried && !fs->twin_start && fs->nmap && !p->original_returns &&
	       !p->attached && !env->dynamic && !env->twins && !m->unloaded && !rtl_binary_has_textrel(m->bin) &&
	       rtl_binary_function(m->bin, k)->size >= ENTRY_LEN;
}

void patch_code_pointers(struct proc *p, struct module *m, const rtl_function *f, const uint64_t *from,
			 const uint64_t *to, size_t n, enum code_pointers_to where)
{
	/* (OCaml's frame tables hold return addresses, compared as they are) */
	if (rtl_binary_kind(m->bin) == RTL_BIN_EXEC || m->return_tables)
		return;
	size_t lo, hi;
	fn_code_pointer_slice(m->bin, f, &lo, &hi);
	for (size_t i = lo; i < hi; i++) {
		const rtl_code_pointer *cp = rtl_binary_code_pointer(m->bin, i);
		uint64_t orig = cp->target + m->bias, copy = x86_map_lookup(from, to, n, orig), now;
		uint64_t want = where == POINTERS_TO_ORIGINAL ? orig : copy;
		if (copy && (where == POINTERS_TO_NEW_COPY ||
			     (!os_mem_read(p->mem, cp->where + m->bias, &now, 8) && now == (want == orig ? copy : orig))))
			proc_patch_write(p, cp->where + m->bias, &want, 8);
	}
}

/* Puts the data words that pointed into F's copy back (TO_COPY false) or
 * points them at the copy again. */
static void repoint_data(struct proc *p, struct module *m, size_t k, bool to_copy)
{
	const struct func_state *fs = &m->fs[k];
	patch_code_pointers(p, m, rtl_binary_function(m->bin, k), fs->map_from, fs->map_to, fs->nmap,
			    to_copy ? POINTERS_TO_COPY : POINTERS_TO_ORIGINAL);
}

/* Calls and jumps of other copies that lead straight to FS's copy (they
 * were pointed there when both had copies) go on to the original ENTRY:
 * the copy's first instruction, its entry counter's increment (still
 * counting, or swept into a 'nopw'), becomes 'jmp ENTRY' (its first 8
 * bytes in one store, the 5 that change within one 16-byte block of
 * instruction fetch: x86_increment_off tells why). A thread that fetched the
 * old bytes runs the copy as before. A fork child gets them back
 * (patch_fork_unrevert). */
static void leave_copy_entry(struct proc *p, struct func_state *fs, uint64_t entry)
{
	static const uint8_t add[3] = { 0x48, 0x83, 0x05 };   /* after a ds or lock prefix */
	struct window *w = proc_window_at(p, fs->entry, 9);
	int64_t rel = (int64_t)entry - (int64_t)(fs->entry + ENTRY_LEN);
	if (!w || fs->entry % 64 > 56 || fs->entry % 16 > 16 - ENTRY_LEN || rel != (int32_t)rel)
		return;
	uint8_t *site = window_local(w, fs->entry), now[9];
	memcpy(now, site, 9);
	int32_t disp;
	memcpy(&disp, now + 4, 4);
	bool increment = ((now[0] == 0x3e || now[0] == 0xf0) && !memcmp(now + 1, add, 3)) ||
			 !memcmp(now, X86_INCREMENT_NOP, 4);
	if (!increment || now[8] != 1 || fs->entry + 9 + (int64_t)disp != fs->entry_counter)
		return;
	memcpy(&fs->left_head, now, 8);
	now[0] = 0xe9;
	memcpy(now + 1, &(int32_t){ (int32_t)rel }, 4);
	uint64_t v;
	memcpy(&v, now, 8);
	__atomic_store_n((uint64_t *)(void *)site, v, __ATOMIC_RELEASE);
}

/* A function given up, with the functions its original code jumps into
 * the middle of: a .cold part entered at its branches and jumping back
 * into its parent's body, a tail shared by two functions. Such a jump in
 * the original code would land in the other's original body, which its
 * copy counts, and in its first 5 bytes, the entry's jump (python3's
 * test_pickle crashed so, a parent jumping to the epilogue 3 bytes into
 * its .cold part): the others go back to their original code with it, in
 * an order where no entry's jump is still there when a member already
 * back can reach it. */
enum { GROUP_MAX = 8 };
struct member {
	struct module *m;
	size_t k;
	uint64_t entry;           /* the original's */
	uint32_t first;           /* the members whose entries go back before this one's (bits) */
	uint32_t into;            /* the members whose middle it jumps into (bits) */
};
struct group {
	struct member mem[GROUP_MAX];
	size_t n;
};

static int member_of(const struct group *g, const struct module *m, size_t k)
{
	for (size_t i = 0; i < g->n; i++)
		if (g->mem[i].m == m && g->mem[i].k == k)
			return (int)i;
	return -1;
}

/* Adds to G the functions member I's original code jumps into the middle
 * of, other than those back in their original code already; false when
 * one cannot go back with it. */
static bool add_partners(struct proc *p, struct group *g, size_t i)
{
	enum { MAX = 1024 };
	struct member *me = &g->mem[i];
	struct lazy_decoded d;
	lazy_analyze(p, me->m, me->k, &d);   /* a restored copy's decoding has no CFG */
	/* not a copy that dispatches through offsets from a label's copy: a
	 * thread moved to the original code at a block, the label's copy in a
	 * register, would add the original offsets to it */
	uint64_t *out = !d.err && d.an && !x86_cfg_has_offset_tables(d.an) ? malloc(MAX * sizeof(*out)) : NULL;
	bool more = true, ok = out != NULL;
	const rtl_function *f = rtl_binary_function(me->m->bin, me->k);
	size_t n = ok ? x86_cfg_targets_outside(d.an, me->entry, f->size, out, MAX, &more) : 0;
	ok &= !more;
	for (size_t t = 0; ok && t < n; t++) {
		struct module *tm;
		const rtl_function *h = proc_function_at(p, out[t], &tm);
		if (!h || !tm->fs) {
			ok = false;
			break;
		}
		size_t hk = (size_t)(h - rtl_binary_function(tm->bin, 0));
		uint64_t he = h->addr + tm->bias;
		if (out[t] == he || tm->fs[hk].reverted)
			continue;   /* an entry (its jump leads to the copy), or original code already */
		int j = member_of(g, tm, hk);
		if (j < 0) {
			if (g->n == GROUP_MAX || !patch_may_revert(p, tm, hk)) {
				ok = false;
				break;
			}
			j = (int)g->n++;
			g->mem[j] = (struct member){ .m = tm, .k = hk, .entry = he };
		}
		/* where it lands must be an instruction of the other's own
		 * decoding: its traps go on that decoding's blocks, and one inside
		 * an instruction of this path would change it (glibc's jumps over
		 * a lock prefix) */
		const struct func_state *hs = &tm->fs[hk];
		if (!x86_map_lookup(hs->map_from, hs->map_to, hs->nmap, out[t])) {
			ok = false;
			break;
		}
		me->into |= 1u << j;
		if (out[t] < he + ENTRY_LEN)
			me->first |= 1u << j;
	}
	free(out);
	lazy_decoded_free(&d);
	return ok;
}

/* Whether a block of member M starts in its entry's jump: a jump to it
 * from a member back already would meet the jump's bytes. */
static bool head_is_target(const struct proc *p, const struct member *me)
{
	const struct func_state *fs = &me->m->fs[me->k];
	for (uint32_t b = 0; b < fs->nblocks; b++) {
		uint64_t a = p->blocks[fs->block0 + b].addr;
		if (a > me->entry && a < me->entry + ENTRY_LEN)
			return true;
	}
	return false;
}

/* G's members in the order their entries go back (ORDER), false if there
 * is none. */
static bool entry_order(const struct proc *p, struct group *g, size_t *order)
{
	for (size_t i = 0; i < g->n; i++)
		for (size_t j = 0; j < g->n; j++)
			if ((g->mem[i].into >> j & 1) && head_is_target(p, &g->mem[j]))
				g->mem[i].first |= 1u << j;
	uint32_t done = 0;
	for (size_t n = 0; n < g->n; n++) {
		size_t i = 0;
		while (i < g->n && ((done >> i & 1) || (g->mem[i].first & ~done & ~(1u << i))))
			i++;
		if (i == g->n)
			return false;   /* each waits for another */
		order[n] = i;
		done |= 1u << i;
	}
	return true;
}

/* Whether member ME may go back: its text is the file's but for the
 * entry's jump to its copy (another function's entry inside it, a return
 * trap, would be overwritten), and no block not run yet starts inside an
 * instruction (glibc's malloc jumps over a lock prefix: 'je 1f; lock; 1:
 * cmpxchg'): an int3 there would make it another instruction (python3's
 * test_pickle crashed, a pipe lost data). FILE gets its bytes. */
static bool may_go_back(struct proc *p, const struct member *me, uint8_t *file, uint8_t *now)
{
	const struct func_state *fs = &me->m->fs[me->k];
	const rtl_function *f = rtl_binary_function(me->m->bin, me->k);
	int32_t rel;
	if (rtl_binary_read(me->m->bin, f->addr, file, f->size) || os_mem_read(p->mem, me->entry, now, f->size) ||
	    now[0] != 0xe9 || memcmp(file + ENTRY_LEN, now + ENTRY_LEN, f->size - ENTRY_LEN))
		return false;
	memcpy(&rel, now + 1, 4);
	if (me->entry + ENTRY_LEN + (int64_t)rel != fs->entry)
		return false;
	for (uint32_t b = 0; b < fs->nblocks; b++) {
		const struct block_rec *br = &p->blocks[fs->block0 + b];
		if (br->counter && br->addr > me->entry && br->addr < me->entry + f->size &&
		    !x86_map_lookup(fs->map_from, fs->map_to, fs->nmap, br->addr) && !proc_read_counter(p, br->counter))
			return false;
	}
	return true;
}

static void add_trap(struct patch_proc *st, uint64_t at, uint64_t counter, uint64_t counter2, uint32_t mod,
		     uint8_t orig)
{
	st->probe_traps[st->nprobe_traps++] = (struct probe_trap){ at, counter, counter2, mod, orig, false };
}

/* Member ME's one-shot int3s: in its body now, in HEAD (its first bytes,
 * written with the entry) for those there. Its entry gets one where its
 * entry counter or its first block's has not counted yet (a .cold part
 * is never called). */
static int arm_traps(struct proc *p, const struct member *me, const uint8_t *file, uint8_t *head)
{
	struct patch_proc *st = p->patch;
	const struct func_state *fs = &me->m->fs[me->k];
	const rtl_function *f = rtl_binary_function(me->m->bin, me->k);
	uint32_t mod = (uint32_t)(me->m - p->mods);
	uint64_t at_entry[2] = { 0, 0 };
	if (fs->entry_counter && !proc_read_counter(p, fs->entry_counter))
		at_entry[0] = fs->entry_counter;
	memcpy(head, file, ENTRY_LEN);
	for (uint32_t b = 0; b < fs->nblocks; b++) {
		const struct block_rec *br = &p->blocks[fs->block0 + b];
		if (!br->counter || br->addr < me->entry || br->addr >= me->entry + f->size ||
		    proc_read_counter(p, br->counter))
			continue;
		if (br->addr == me->entry) {
			at_entry[1] = br->counter;
			continue;
		}
		add_trap(st, br->addr, br->counter, 0, mod, file[br->addr - me->entry]);
		if (br->addr < me->entry + ENTRY_LEN)
			head[br->addr - me->entry] = 0xcc;
		else if (proc_patch_write(p, br->addr, &(uint8_t){ 0xcc }, 1))
			return -EIO;
	}
	if (at_entry[0] || at_entry[1]) {
		add_trap(st, me->entry, at_entry[0] ? at_entry[0] : at_entry[1], at_entry[0] ? at_entry[1] : 0, mod,
			 file[0]);
		head[0] = 0xcc;
	}
	return 0;
}

/* Member ME's copy sends the threads still in it to the original code
 * (its entry is back): an int3 at the copy of each of its blocks, where
 * the copy is made of its own code (not at the copy's head, now a jump
 * out of it). One byte at an instruction's start: a thread that fetched
 * the old byte runs the copy's instruction, as before. */
static void arm_moves(struct proc *p, const struct member *me)
{
	struct patch_proc *st = p->patch;
	const struct func_state *fs = &me->m->fs[me->k];
	uint64_t size = rtl_binary_function(me->m->bin, me->k)->size;
	if (rtl_grow(&st->move_traps, &st->capmove_traps, st->nmove_traps + fs->nblocks, sizeof(*st->move_traps)))
		return;   /* the threads in the copy finish there */
	for (uint32_t b = 0; b < fs->nblocks; b++) {
		uint64_t to = p->blocks[fs->block0 + b].addr;
		uint64_t at = to >= me->entry && to < me->entry + size ? x86_map_lookup(fs->map_from, fs->map_to, fs->nmap, to)
								      : 0;
		struct window *w = at && (at < fs->entry || at >= fs->entry + 8) ? proc_window_at(p, at, 1) : NULL;
		uint8_t *byte = w ? window_local(w, at) : NULL;
		if (!byte || *byte == 0xcc)
			continue;
		st->move_traps[st->nmove_traps++] = (struct move_trap){ at, to, *byte };
		__atomic_store_n(byte, (uint8_t)0xcc, __ATOMIC_RELEASE);
	}
	st->move_traps_unsorted = true;
}

/* Member ME's data words and entry back (its traps are armed): a thread
 * meeting the entry's int3 meanwhile goes on in the copy (FS_DONE). */
static int restore_entry(struct proc *p, const struct member *me, const uint8_t *head)
{
	struct func_state *fs = &me->m->fs[me->k];
	int err;
	repoint_data(p, me->m, me->k, false);
	if ((err = proc_patch_write(p, me->entry, &(uint8_t){ 0xcc }, 1)) ||
	    (err = proc_patch_write(p, me->entry + 1, head + 1, ENTRY_LEN - 1)) ||
	    (err = proc_patch_write(p, me->entry, head, 1)))
		return err;
	fs->reverted = fs->revert_tried = true;
	leave_copy_entry(p, fs, me->entry);
	arm_moves(p, me);
	return 0;
}

int patch_revert(struct proc *p, struct module *m, size_t k)
{
	struct patch_proc *st = p->patch;
	struct func_state *fs = &m->fs[k];
	if (!patch_may_revert(p, m, k))
		return -RTL_ERR_UNSUPPORTED;
	fs->revert_tried = true;   /* once: a refused one stays a copy */
	struct group g = { .n = 1 };
	g.mem[0] = (struct member){ .m = m, .k = k, .entry = rtl_binary_function(m->bin, k)->addr + m->bias };
	for (size_t i = 0; i < g.n; i++)
		if (!add_partners(p, &g, i))
			return -RTL_ERR_UNSUPPORTED;
	size_t order[GROUP_MAX], size = 0, ntraps = 0;
	if (!entry_order(p, &g, order))
		return -RTL_ERR_UNSUPPORTED;
	for (size_t i = 0; i < g.n; i++) {
		size_t sz = rtl_binary_function(g.mem[i].m->bin, g.mem[i].k)->size;
		size = sz > size ? sz : size;
		ntraps += g.mem[i].m->fs[g.mem[i].k].nblocks + 1;
	}
	uint8_t *file = malloc(g.n * size), *now = malloc(size), (*head)[ENTRY_LEN] = malloc(g.n * ENTRY_LEN);
	int err = -ENOMEM;
	if (!file || !now || !head || rtl_grow(&st->probe_traps, &st->capprobe_traps, st->nprobe_traps + ntraps,
					       sizeof(*st->probe_traps)))
		goto out;
	err = -RTL_ERR_UNSUPPORTED;
	for (size_t i = 0; i < g.n; i++)
		if (!may_go_back(p, &g.mem[i], file + i * size, now))
			goto out;
	/* no original code of theirs runs before every trap is in */
	for (size_t i = 0; i < g.n; i++)
		if ((err = arm_traps(p, &g.mem[i], file + i * size, head[i])))
			goto undo;
	for (size_t i = 0; i < g.n; i++)
		if ((err = restore_entry(p, &g.mem[order[i]], head[order[i]])))
			goto undo;
	err = (int)g.n;
undo:   /* the int3s written stay traps (they fire once); the copies serve on */
	st->probe_traps_unsorted = true;
out:
	free(file);
	free(now);
	free(head);
	return err;
}

bool patch_is_probe_trap(struct proc *p, uint64_t at)
{
	return p->patch->nprobe_traps && trap_at(p, at);
}

enum patch_trap patch_probe_trap(struct proc *p, pid_t tid, uint64_t at)
{
	struct probe_trap *t = p->patch->nprobe_traps ? trap_at(p, at) : NULL;
	if (!t)
		return PATCH_TRAP_NOT_MINE;
	if (!t->fired) {   /* another thread may have met it: it is put back once */
		for (int i = 0; i < 2; i++) {
			uint64_t c = i ? t->counter2 : t->counter;
			struct window *w = c ? proc_window_at(p, c, 8) : NULL;
			if (w && !*(volatile uint64_t *)window_local(w, c))
				*(volatile uint64_t *)window_local(w, c) = 1;
		}
		proc_patch_write(p, at, &t->orig, 1);
		t->fired = true;
		p->patch->env->stats->traps++;
	}
	return os_set_pc(tid, at) ? PATCH_TRAP_NOT_MINE : PATCH_TRAP_HANDLED;
}

enum patch_trap patch_move_trap(struct proc *p, pid_t tid, uint64_t at)
{
	struct move_trap *t = p->patch->nmove_traps ? move_trap_at(p, at) : NULL;
	if (!t)
		return PATCH_TRAP_NOT_MINE;
	p->patch->env->stats->traps++;
	return os_set_pc(tid, t->to) ? PATCH_TRAP_NOT_MINE : PATCH_TRAP_HANDLED;
}

void patch_release_move_traps(struct proc *p)
{
	struct patch_proc *st = p->patch;
	for (size_t i = 0; i < st->nmove_traps; i++) {
		struct window *w = proc_window_at(p, st->move_traps[i].at, 1);
		uint8_t *byte = w ? window_local(w, st->move_traps[i].at) : NULL;
		if (byte && *byte == 0xcc)
			__atomic_store_n(byte, st->move_traps[i].orig, __ATOMIC_RELEASE);
	}
	st->nmove_traps = 0;
}

void patch_fork_unrevert(struct proc *c)
{
	patch_release_move_traps(c);   /* its windows are copies of the parent's */
	/* the child's counters start at 0: its functions count in their
	 * copies again (the probe traps left in its text fire there too) */
	for (size_t i = 0; i < c->nmods; i++) {
		struct module *m = &c->mods[i];
		size_t n = m->fs ? rtl_binary_function_count(m->bin) : 0;
		for (size_t k = 0; !m->unloaded && k < n; k++) {
			struct func_state *fs = &m->fs[k];
			if (fs->status != FS_DONE || !fs->reverted || !fs->nmap)
				continue;
			uint64_t entry = rtl_binary_function(m->bin, k)->addr + m->bias;
			uint8_t jmp[ENTRY_LEN] = { 0xe9 };
			int32_t rel = (int32_t)(fs->entry - (entry + ENTRY_LEN));
			memcpy(jmp + 1, &rel, 4);
			repoint_data(c, m, k, true);
			struct window *w = fs->left_head ? proc_window_at(c, fs->entry, 8) : NULL;
			if (w)   /* the copy's head that became a jump out of it */
				memcpy(window_local(w, fs->entry), &fs->left_head, 8);
			fs->left_head = 0;
			proc_patch_write(c, entry, jmp, ENTRY_LEN);   /* the child is stopped */
			fs->reverted = fs->revert_tried = false;
		}
	}
	for (size_t i = 0; i < c->patch->nprobe_traps; i++)
		if (c->patch->probe_traps[i].fired) {   /* its byte is back: no trap any more */
			c->patch->probe_traps[i] = c->patch->probe_traps[--c->patch->nprobe_traps];
			i--;
		}
	c->patch->probe_traps_unsorted = true;
}

size_t patch_release_probe_traps(struct proc *p)
{
	size_t failed = 0;
	for (size_t i = 0; i < p->patch->nprobe_traps; i++) {
		struct probe_trap *t = &p->patch->probe_traps[i];
		uint8_t now;
		if (t->fired || p->mods[t->mod].unloaded)
			continue;
		if (!os_mem_read(p->mem, t->at, &now, 1) && now == 0xcc && os_mem_write(p->mem, t->at, &t->orig, 1))
			failed++;
		t->fired = true;
	}
	return failed;
}
