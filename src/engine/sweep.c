/* Probes that remove themselves once they have fired: coverage only asks
 * whether a block (or an entry) ran, so after its counter has left 0 its
 * increment is of no more use. When `cover` is the session's only
 * collector, the event loop sweeps every 20 ms (sweep_due): each counter
 * increment of a relocated copy whose counter is not 0 any more is turned
 * off with one atomic store through reticle's own mapping of the window:
 * the 9-byte 'ds add qword [rip+X], 1' becomes a 9-byte nop (its first 4
 * bytes written: X and the 1 become the nop's SIB byte and displacement),
 * longer forms get a 2-byte 'jmp' over them (a jump per block costs a
 * taken branch: a tight loop ran 1.6x slower with jumps than with nops).
 * A thread that fetched the old bytes runs the increment once more (its
 * counter only grows); one that sees the new ones skips it: both are
 * right, so no thread is stopped. The bytes that change lie in one
 * 16-byte block of instruction fetch (x86_increment_off tells why: under
 * load, python children of CPython's test_subprocess died once in 40 runs
 * when an 8-byte nop could span two: fetched torn, it runs as 'add qword
 * [rax+rax+0x1000000], imm8' one byte out of step, and a 2-byte jump as
 * 'and cx,[rax-0x73]' with the stack 128 bytes off after it), else the
 * 9-byte form gets a jump, and an increment where none fits stays.
 * A long run then pays for each block once, and runs at native speed
 * afterwards (BENCHMARKS.md). Counts become "ran or not" (1 or 0).
 *
 * The increments are found in the copy's bytes, by the four forms the code
 * writer emits (writer.c) and their rip-relative counter, one of the
 * function's own: the same for fresh, restored and made-ahead copies.
 *
 * What is left then is the copy itself: its nops, its layout, the jump
 * through its entry. A copy found hot twice in a row (a counter of
 * HOT_RUNS or more at its sweep, counting on to the next, and as many
 * runs again there; or HOT_CALLS calls since the last sweep, at two
 * sweeps: its entry's increment keeps counting) is given up for the
 * original code (patch/revert.c:
 * one-shot int3s on its blocks still unfired), and the threads running
 * in it are moved there: each pc at an instruction of such a copy, and
 * each return address into one after a call, becomes the original
 * instruction's address. RETICLE_COVER_ORIGINAL=0 keeps every copy. */
#include <stdlib.h>
#include <string.h>
#include "engine/engine.h"
#include "isa/x86_64/relocate.h"
#include "isa/x86_64/writer.h"
#include "os/linux/os.h"
#include "patch/patch.h"
#include "sample/sample.h"
#include "util/array.h"
#include "util/log.h"

/* HOT_RUNS: the runs of one block in the (at most) 20 ms between a copy's
 * first run and its sweep that make it worth a trap per block it has not
 * run yet (about 30 us each on this VM: a copy costs 0.1-1 ns a block);
 * HOT_CALLS: the calls between two sweeps that do (a call through the
 * original entry's jump and a relocated body cost a few ns more). */
enum { SWEEP_NS = 20000000, BUDGET_NS = 1000000, HOT_RUNS = 4096, HOT_CALLS = 1024, MAX_FRAMES = 512 };

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

static bool giving_up(void)
{
	static int on = -1;
	if (on < 0) {
		const char *e = getenv("RETICLE_COVER_ORIGINAL");
		on = !e || atoi(e) != 0;
	}
	return on;
}

/* Adds the increments of function K of M's copy to P's pending list. */
static void find_sites(struct proc *p, struct module *m, size_t k)
{
	struct func_state *fs = &m->fs[k];
	struct window *w = m->win >= 0 ? &p->shm.wins[m->win] : NULL;
	size_t n = 0;
	uint64_t *ctr = malloc((fs->nblocks + 1) * sizeof(*ctr));
	if (!w || !ctr) {
		free(ctr);
		return;
	}
	/* (the entry's increment keeps counting when copies are given up:
	 * calls between sweeps tell a copy that became hot after its blocks
	 * were swept; an increment per call is what fcount costs) */
	if (fs->entry_counter && !giving_up())
		ctr[n++] = fs->entry_counter;
	for (uint32_t b = 0; b < fs->nblocks; b++)
		if (p->blocks[fs->block0 + b].counter)
			ctr[n++] = p->blocks[fs->block0 + b].counter;
	if (rtl_radix_sort_u64(ctr, n, sizeof(*ctr), 0))
		n = 0;   /* no memory: its increments stay */
	/* every form holds 'add qword [rip+X]' (48 83 05) or 'mov rax, [rip+X]'
	 * (48 8b 05): only where memchr finds their 05 are the forms tried
	 * (a byte-by-byte scan of python3.11's 2,300 copies held the event
	 * loop 20 ms, and the program waited at its traps) */
	const uint8_t *code = window_local(w, fs->entry);
	for (size_t i = 0, q = 2; n && q < fs->code_len;) {
		const uint8_t *five = memchr(code + q, 0x05, fs->code_len - q);
		if (!five)
			break;
		q = (size_t)(five - code);
		const struct form *hit = NULL;
		uint64_t target = 0;
		for (size_t k = 0; code[q - 2] == 0x48 && (code[q - 1] == 0x83 || code[q - 1] == 0x8b) &&
				   k < sizeof(forms) / sizeof(*forms) && !hit;
		     k++) {
			const struct form *f = &forms[k];
			size_t start = q + 1 - f->disp;
			if (q + 1 < f->disp || start < i || start + f->len > fs->code_len ||
			    memcmp(code + start, f->head, f->nhead))
				continue;
			int32_t disp;
			memcpy(&disp, code + start + f->disp, 4);
			target = fs->entry + start + f->end + (int64_t)disp;
			size_t at = rtl_lower_bound_u64(ctr, n, target);
			if (at < n && ctr[at] == target) {
				hit = f;
				i = start;
			}
		}
		if (!hit) {
			q++;
			continue;
		}
		uint64_t at = fs->entry + i;
		struct x86_live_store st;
		if (x86_increment_off(code + i, at, hit->len, &st) &&
		    !rtl_grow(&p->sweep, &p->capsweep, p->nsweep + 1, sizeof(*p->sweep)))
			p->sweep[p->nsweep++] = (struct sweep_site){ at, target, 0, (uint32_t)(m - p->mods), (uint32_t)k,
								     hit->len };
		i += hit->len;
		q = i + 2;
	}
	free(ctr);
}

struct fn_ref {
	struct module *m;
	size_t k;
};

/* Whether the original instruction before the one at ORIG of M (FROM: the
 * N original instructions of its function) is a call: a return address is
 * moved only after one. */
static bool after_call(const struct module *m, const uint64_t *from, size_t n, uint64_t orig)
{
	size_t i = rtl_lower_bound_u64(from, n, orig);
	if (i == 0 || i >= n || from[i] != orig || orig - from[i - 1] > 15)
		return false;
	uint8_t code[15];
	size_t len = (size_t)(orig - from[i - 1]), ninsns = 0;
	struct x86_insn *in = NULL;
	bool call = !rtl_binary_read(m->bin, from[i - 1] - m->bias, code, len) &&
		    !x86_decode_function(code, len, from[i - 1], &in, &ninsns) && ninsns == 1 &&
		    (in[0].kind == X86_CALL || in[0].kind == X86_ICALL);
	free(in);
	return call;
}

/* FNS go back to their original code, written with the threads running.
 * The threads still in their copies move to the original code by
 * themselves, at the next block they reach there (patch_move_trap): a
 * hold, which interrupted every thread to move it, cut blocking writes
 * short (a pipe write interrupted returns what it wrote so far, and
 * CPython 3.11's BufferedWriter then loses the rest, as natively when a
 * signal comes), and made each give-up wait for every thread. */
static void give_up(struct proc *p, const struct fn_ref *fns, size_t n)
{
	size_t done = 0;
	for (size_t i = 0; i < n; i++) {
		int back = patch_revert(p, fns[i].m, fns[i].k);   /* with the functions it jumps into */
		done += back > 0 ? (size_t)back : 0;
		const rtl_function *f = rtl_binary_function(fns[i].m->bin, fns[i].k);
		rtl_debug("pid %d: %s (%#llx) %s", (int)p->pid, f->name ? f->name : "?",
			  (unsigned long long)(f->addr + fns[i].m->bias), back > 0 ? "given up" : "kept");
	}
	p->copies_given_up += done;
	rtl_debug("pid %d: %zu copies given up for the original code (%zu found hot)", (int)p->pid, done, n);
}

static bool listed(const struct fn_ref *l, size_t n, const struct module *m, size_t k)
{
	for (size_t i = 0; i < n; i++)
		if (l[i].m == m && l[i].k == k)
			return true;
	return false;
}


/* The window of S's module, when it holds S and its counter. */
static struct window *site_window(struct proc *p, const struct sweep_site *s)
{
	const struct module *m = &p->mods[s->mod];
	if (m->unloaded || m->win < 0)
		return NULL;
	struct window *w = &p->shm.wins[m->win];
	uint64_t end = w->addr + w->code_cap + w->ctr_cap;
	if (s->at >= w->addr && s->at + 8 <= end && s->counter >= w->addr && s->counter + 8 <= end)
		return w;
	return proc_window_at(p, s->at, 2) == proc_window_at(p, s->counter, 8) ? proc_window_at(p, s->at, 2) : NULL;
}

void sweep_relocated(struct proc *p, struct module *m, size_t k)
{
	if (m->fs[k].sweep_listed ||
	    rtl_grow(&p->sweep_fns, &p->capsweep_fns, p->nsweep_fns + 1, sizeof(*p->sweep_fns)))
		return;
	m->fs[k].sweep_listed = true;
	p->sweep_fns[p->nsweep_fns++] = (struct sweep_fn){ (uint32_t)(m - p->mods), (uint32_t)k };
}

/* Entry J of P's list of relocated functions (*M, *K), when it still has a
 * copy in a module still there. */
static bool relocated_fn(struct proc *p, size_t j, struct module **m, size_t *k)
{
	struct sweep_fn f = p->sweep_fns[j];
	if (f.mod >= p->nmods)
		return false;
	*m = &p->mods[f.mod];
	*k = f.fn;
	return (*m)->win >= 0 && !(*m)->unloaded && (*m)->fs[f.fn].status == FS_DONE;
}

bool sweep_proc(struct proc *p)
{
	/* in slices of BUDGET_NS for finding increments and as much for
	 * removing them: the program's traps wait while it runs (the first
	 * sweep of python3.11's 2,300 copies took 10-15 ms) */
	if (p->exiting)
		return false;
	uint64_t t0 = os_now_ns();
	size_t work = 0;
	bool more = false, found_all;
	struct fn_ref *hot = NULL;
	size_t nhot = 0, caphot = 0;
	for (; p->sweep_fns_found < p->nsweep_fns && !more; p->sweep_fns_found++) {
		struct module *m;
		size_t k;
		if (!relocated_fn(p, p->sweep_fns_found, &m, &k) || m->fs[k].swept)
			continue;
		m->fs[k].swept = true;
		find_sites(p, m, k);
		more = ++work % 64 == 0 && os_now_ns() - t0 > BUDGET_NS;
	}
	found_all = !more;
	more = false;
	t0 = os_now_ns();
	size_t i = p->sweep_next < p->nsweep ? p->sweep_next : 0;
	for (; i < p->nsweep && !more;) {
		more = ++work % 1024 == 0 && os_now_ns() - t0 > BUDGET_NS;
		struct sweep_site *s = &p->sweep[i];
		struct window *w = site_window(p, s);
		uint64_t runs = w ? *(volatile uint64_t *)window_local(w, s->counter) : 0;
		if (!runs) {
			i += w != NULL;
			if (!w)
				*s = p->sweep[--p->nsweep];   /* its module is gone */
			continue;
		}
		/* hot at its first look: it counts on to the next, and the copy
		 * is given up if it was hot again (python3.11's start-up ran
		 * hundreds of functions hot for a few ms: giving them up, their
		 * traps and holds made a 10 ms run last 40) */
		bool is_hot;
		if (giving_up() && !s->seen && runs >= HOT_RUNS &&
		    patch_may_revert(p, &p->mods[s->mod], s->fn)) {
			s->seen = runs;
			i++;
			continue;
		}
		is_hot = s->seen ? runs - s->seen >= HOT_RUNS : runs >= HOT_RUNS;
		uint8_t *site = window_local(w, s->at);
		uint64_t old;
		memcpy(&old, site, 8);
		/* (from the bytes there now: a process that got a second
		 * thread since has locked increments) */
		struct x86_live_store st;
		if (!x86_increment_off(site, s->at, s->len, &st)) {
			*s = p->sweep[--p->nsweep];
			continue;
		}
		if (st.len == 4) {
			uint32_t v;
			memcpy(&v, st.bytes, 4);
			__atomic_store_n((uint32_t *)(void *)(site + st.off), v, __ATOMIC_RELEASE);
		} else {
			uint16_t v;
			memcpy(&v, st.bytes, 2);
			__atomic_store_n((uint16_t *)(void *)(site + st.off), v, __ATOMIC_RELEASE);
		}
		if (!rtl_grow(&p->swept_sites, &p->capswept, p->nswept + 1, sizeof(*p->swept_sites)))
			p->swept_sites[p->nswept++] = (struct swept_site){ s->at, old };
		p->sweep_removed++;
		/* its runs since the last sweep, when it read 0 */
		if (is_hot && giving_up() && patch_may_revert(p, &p->mods[s->mod], s->fn) &&
		    !listed(hot, nhot, &p->mods[s->mod], s->fn) && !rtl_grow(&hot, &caphot, nhot + 1, sizeof(*hot)))
			hot[nhot++] = (struct fn_ref){ &p->mods[s->mod], s->fn };
		*s = p->sweep[--p->nsweep];
	}
	p->sweep_next = more ? i : 0;
	/* copies that became hot after their blocks were swept: by calls */
	for (size_t j = 0; giving_up() && !more && j < p->sweep_fns_found; j++) {
		struct module *m;
		size_t k;
		if (!relocated_fn(p, j, &m, &k))
			continue;
		struct func_state *fs = &m->fs[k];
		if (!fs->swept || fs->revert_tried || !fs->entry_counter)
			continue;
		uint64_t calls = proc_read_counter(p, fs->entry_counter), since = calls - fs->calls_seen;
		fs->calls_seen = calls;
		bool was = fs->calls_hot;
		fs->calls_hot = since >= HOT_CALLS;
		if (since >= HOT_CALLS && was && patch_may_revert(p, m, k) && !listed(hot, nhot, m, k) &&
		    !rtl_grow(&hot, &caphot, nhot + 1, sizeof(*hot)))
			hot[nhot++] = (struct fn_ref){ m, k };
	}
	if (nhot)
		give_up(p, hot, nhot);
	free(hot);
	return more || !found_all;
}

/* Whether a copy of P's was given up. */
static bool gave_up_any(const struct proc *p)
{
	for (size_t i = 0; i < p->nmods; i++) {
		size_t n = p->mods[i].fs ? rtl_binary_function_count(p->mods[i].bin) : 0;
		for (size_t k = 0; k < n; k++)
			if (p->mods[i].fs[k].reverted)
				return true;
	}
	return false;
}

void sweep_fork_frames(struct proc *c)
{
	/* its frames that run the original code of functions given up in the
	 * parent go back to their copies, whose increments count again (the
	 * fork's caller: its blocks after the call ran in the parent); no
	 * stack walk at the forks of a session that gave up nothing */
	if (!c->sweeping || !gave_up_any(c))
		return;
	struct unw_mods *unw = c->nthreads ? unw_mods_new() : NULL;
	uint64_t *frames = unw ? malloc(2 * MAX_FRAMES * sizeof(*frames)) : NULL, *cfas = NULL;
	size_t n = frames ? stack_walk(c, c->threads[0].tid, unw, frames, cfas = frames + MAX_FRAMES, MAX_FRAMES) : 0;
	for (size_t j = 1; j < n; j++) {
		uint64_t slot = cfas[j - 1] - 8, ret, to;
		struct module *m;
		const rtl_function *f;
		if (!cfas[j - 1] || os_mem_read(c->mem, slot, &ret, 8) || !(f = proc_function_at(c, ret, &m)))
			continue;
		const struct func_state *fs = &m->fs[f - rtl_binary_function(m->bin, 0)];
		if (fs->status == FS_DONE && fs->reverted &&
		    (to = x86_map_lookup(fs->map_from, fs->map_to, fs->nmap, ret)) &&
		    after_call(m, fs->map_from, fs->nmap, ret) && !os_mem_write(c->mem, slot, &to, 8))
			rtl_debug("pid %d: return address %#llx at %#llx back into its copy: %#llx", (int)c->pid,
				  (unsigned long long)ret, (unsigned long long)slot, (unsigned long long)to);
	}
	free(frames);
	if (unw)
		unw_mods_free(unw);
}

void sweep_fork(struct proc *parent, struct proc *child)
{
	child->sweeping = parent->sweeping;
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
		for (size_t k = 0; k < n; k++) {
			m->fs[k].swept = false;
			m->fs[k].calls_seen = 0;
			m->fs[k].sweep_listed = false;
			if (child->sweeping && m->fs[k].status == FS_DONE)
				sweep_relocated(child, m, k);
		}
	}
	child->nsweep = child->nswept = 0;
}

bool sweep_due(uint64_t *last, uint64_t now)
{
	if (now - *last < SWEEP_NS)
		return false;
	*last = now;
	return true;
}
