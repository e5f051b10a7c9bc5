/* The address-space model's lookups (by address: modules, functions,
 * copies, windows) and its writes into a process's code. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "os/linux/os.h"
#include "space/space.h"
#include "util/array.h"

struct thread *proc_thread(struct proc *p, pid_t tid)
{
	for (size_t i = 0; i < p->nthreads; i++)
		if (p->threads[i].tid == tid)
			return &p->threads[i];
	return NULL;
}

enum { MEMO_SIZE = 8192 };   /* a power of two */

struct fn_memo {
	uint64_t addr;            /* 0: empty */
	int32_t mod, k;           /* -1: none */
};

void proc_forget_functions(struct proc *p)
{
	if (p->memo)
		memset(p->memo, 0, MEMO_SIZE * sizeof(*p->memo));
}

const rtl_function *proc_function_at(struct proc *p, uint64_t addr, struct module **mp)
{
	if (!p->memo)
		p->memo = calloc(MEMO_SIZE, sizeof(*p->memo));
	struct fn_memo *e = p->memo ? &p->memo[(addr ^ addr >> 13) & (MEMO_SIZE - 1)] : NULL;
	struct module *m;
	const rtl_function *f;
	if (e && addr && e->addr == addr) {
		m = e->mod >= 0 ? &p->mods[e->mod] : NULL;
		f = m && e->k >= 0 ? rtl_binary_function(m->bin, (size_t)e->k) : NULL;
	} else {
		m = proc_module_at(p, addr);
		f = m && m->fs ? rtl_binary_find_function(m->bin, addr - m->bias) : NULL;
		if (e && addr)
			*e = (struct fn_memo){ addr, m ? (int32_t)(m - p->mods) : -1,
					       f ? (int32_t)(f - rtl_binary_function(m->bin, 0)) : -1 };
	}
	if (mp)
		*mp = m;
	return f;
}

struct func_state *proc_entry_at(struct proc *p, uint64_t addr, struct module **mp,
				 const rtl_function **fp)
{
	struct module *m;
	const rtl_function *f = proc_function_at(p, addr, &m);
	if (!f || f->addr != addr - m->bias)
		return NULL;
	if (mp)
		*mp = m;
	if (fp)
		*fp = f;
	return &m->fs[f - rtl_binary_function(m->bin, 0)];
}

bool proc_is_loader(const struct proc *p, const struct module *m)
{
	return p->r_debug >= m->lo && p->r_debug < m->hi;
}

struct module *proc_module_at(struct proc *p, uint64_t addr)
{
	for (size_t i = 0; i < p->nmods; i++)
		if (addr >= p->mods[i].lo && addr < p->mods[i].hi && !p->mods[i].unloaded)
			return &p->mods[i];
	return NULL;
}

int proc_patch_write(struct proc *p, uint64_t addr, const void *buf, size_t len)
{
	if (p->attached) {
		uint8_t *old = malloc(len ? len : 1);
		int err = old ? os_mem_read(p->mem, addr, old, len) : -ENOMEM;
		if (!err)
			err = rtl_grow(&p->undo, &p->capundo, p->nundo + 1, sizeof(*p->undo));
		if (err) {
			free(old);
			return err;   /* not written: detaching could not undo it */
		}
		p->undo[p->nundo++] = (struct undo_rec){ addr, (uint32_t)len, old };
	}
	return os_mem_write(p->mem, addr, buf, len);
}

int proc_code_write(struct proc *p, uint64_t at, uint8_t byte, bool lasting)
{
	struct window *w = proc_window_at(p, at, 1);
	if (w) {
		*(volatile uint8_t *)window_local(w, at) = byte;
		return 0;
	}
	return lasting ? proc_patch_write(p, at, &byte, 1) : os_mem_write(p->mem, at, &byte, 1);
}

struct window *proc_window_at(struct proc *p, uint64_t addr, size_t len)
{
	for (size_t i = 0; i < p->shm.nwins; i++) {
		struct window *w = &p->shm.wins[i];
		uint64_t size = w->code_cap + w->ctr_cap;
		/* no overflow: a stack word of all ones is no address in it */
		if (addr >= w->addr && addr - w->addr < size && len <= size - (addr - w->addr))
			return w;
	}
	return NULL;
}

uint64_t proc_read_counter(struct proc *p, uint64_t addr)
{
	struct window *w = proc_window_at(p, addr, 8);
	if (!w)
		return 0;
	size_t wi = (size_t)(w - p->shm.wins), at = (addr - (w->addr + w->code_cap)) / 8;
	if (p->frozen && addr >= w->addr + w->code_cap && p->frozen[wi] && at < w->ctr_used / 8)
		return p->frozen[wi][at];
	uint64_t v = *(volatile uint64_t *)window_local(w, addr);
	int64_t disp = p->thread_counters && p->multithreaded ? window_slab_disp(w, addr) : -1;
	return disp >= 0 ? v + thread_region_slab_sum(&p->areas, (uint64_t)disp - TA_SLAB) : v;
}

void proc_counters_freeze(struct proc *p)
{
	if (!p->thread_counters || !p->multithreaded || p->frozen || !p->shm.nwins)
		return;
	p->frozen = calloc(p->shm.nwins, sizeof(*p->frozen));
	for (size_t i = 0; p->frozen && i < p->shm.nwins; i++) {
		size_t n = p->shm.wins[i].ctr_used / 8;
		if (n && (p->frozen[i] = malloc(n * 8)))   /* without memory: read one by one */
			proc_read_counters(p, &p->shm.wins[i], n, p->frozen[i]);
	}
}

void proc_counters_thaw(struct proc *p)
{
	for (size_t i = 0; p->frozen && i < p->shm.nwins; i++)
		free(p->frozen[i]);
	free(p->frozen);
	p->frozen = NULL;
}

void proc_read_counters(struct proc *p, const struct window *w, size_t n, uint64_t *out)
{
	uint64_t start = w->addr + w->code_cap;
	const volatile uint64_t *live = window_local(w, start);
	for (size_t k = 0; k < n; k++)
		out[k] = live[k];
	size_t slabbed = window_slab_words(w);
	if (p->thread_counters && p->multithreaded && slabbed)
		thread_region_slabs_add(&p->areas, (uint64_t)w->slab, n < slabbed ? n : slabbed, out);
}

struct func_state *proc_copy_at(struct proc *p, uint64_t pc, struct module **mp)
{
	for (size_t i = 0; i < p->nmods; i++) {
		struct module *m = &p->mods[i];
		struct window *w = m->win >= 0 ? &p->shm.wins[m->win] : NULL;
		if (!w || pc < w->addr || pc >= w->addr + w->code_cap)
			continue;
		size_t n = rtl_binary_function_count(m->bin);
		for (size_t k = 0; k < n; k++) {
			struct func_state *fs = &m->fs[k];
			if (fs->status == FS_DONE && fs->nmap && pc >= fs->entry &&
			    pc < fs->entry + fs->code_len) {
				*mp = m;
				return fs;
			}
		}
	}
	return NULL;
}

/* Names what is at run-time address PC, for messages about faults: an
 * original function, or the relocated copy of one in a window. */
void proc_describe_pc(struct proc *p, uint64_t pc, char *buf, size_t len)
{
	struct module *m = proc_module_at(p, pc);
	if (m) {
		const rtl_function *f = rtl_binary_find_function(m->bin, pc - m->bias);
		snprintf(buf, len, "%s+%#llx (%s)", m->path, (unsigned long long)(pc - m->bias),
			 f ? f->name : "?");
		return;
	}
	for (size_t i = 0; i < p->nmods; i++) {
		struct module *mm = &p->mods[i];
		struct window *w = mm->win >= 0 ? &p->shm.wins[mm->win] : NULL;
		if (!w || pc < w->addr || pc >= w->addr + w->code_cap)
			continue;
		size_t n = rtl_binary_function_count(mm->bin);
		const rtl_function *best = NULL;
		uint64_t best_entry = 0;
		for (size_t k = 0; k < n; k++)
			if (mm->fs[k].status == FS_DONE && mm->fs[k].entry <= pc && mm->fs[k].entry > best_entry) {
				best_entry = mm->fs[k].entry;
				best = rtl_binary_function(mm->bin, k);
			}
		snprintf(buf, len, "code cache of %s: copy of %s +%#llx", mm->path, best ? best->name : "?",
			 (unsigned long long)(pc - best_entry));
		return;
	}
	char line[512];
	if (os_map_line(p->pid, pc, line, sizeof(line)))
		snprintf(buf, len, "%#llx (outside every module)", (unsigned long long)pc);
	else
		snprintf(buf, len, "%#llx (outside every module, in %s)", (unsigned long long)pc, line);
}

void func_state_release(struct func_state *f)
{
	free(f->map_from);
	free(f->map_to);
	free(f->twin_to);
	free(f->sp_rows);
	f->map_from = f->map_to = f->twin_to = NULL;
	f->sp_rows = NULL;
	f->nsp_rows = 0;
}
