/* Basic-block vectors (the bbv collector), as valgrind's exp-bbv writes
 * them for SimPoint: every block's copy subtracts its instructions from
 * its thread's countdown (x86_countdown); when that passes zero, the
 * interval has ended inside that block, and reticle writes one line
 * "T:ID:COUNT :ID:COUNT ..." of the instructions each block ran since the
 * previous line, from the block counters. exp-bbv's rule, instruction
 * exact: an interval ends with the instruction that makes its count pass
 * N (the first interval holds N + 1 of them, each later one N); the rest
 * of that block's instructions go to the next interval. Block ids are
 * numbered from 1 in the order the vectors first name them. A thread
 * counts its own instructions; the vectors hold every thread's blocks (one
 * file per process image, where exp-bbv writes one per thread). The last,
 * partial interval is not written, as exp-bbv does not. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "engine/engine.h"
#include "isa/x86_64/relocate.h"
#include "os/linux/os.h"
#include "util/array.h"
#include "util/log.h"

struct bbv {
	uint64_t interval;
	uint64_t *last;           /* per p->blocks entry: its counter at the last line */
	uint32_t *id;             /* its id, 0 before a line names it */
	size_t cap, known;        /* entries set in last and id */
	uint32_t next_id;
	size_t carry_block;       /* block whose instructions CARRY belong to the next line */
	uint64_t carry;
	FILE *out;
	char *path;
	uint64_t lines;
	bool failed;
};

static struct bbv *state(struct proc *p)
{
	if (p->bbv)
		return p->bbv;
	uint64_t n = session_bbv_interval(p->s);
	if (!n)
		return NULL;
	struct bbv *b = calloc(1, sizeof(*b));
	if (!b)
		return NULL;
	b->interval = n;
	b->carry_block = SIZE_MAX;
	return p->bbv = b;
}

void bbv_thread_start(struct proc *p, unsigned area)
{
	struct bbv *b = state(p);
	if (b && p->areas.addr)
		*(int64_t *)(thread_area_local(&p->areas, area) + TA_BBV_LEFT) = (int64_t)b->interval;
}

/* The p->blocks entry that starts at original instruction ADDR of FS's function. */
static size_t block_at(struct proc *p, const struct func_state *fs, uint64_t addr)
{
	for (uint32_t i = 0; i < fs->nblocks; i++)
		if (p->blocks[fs->block0 + i].addr == addr)
			return fs->block0 + i;
	return SIZE_MAX;
}

/* The block whose countdown trapped at PC (just after its int3): the
 * copy's instruction at or before PC is the block's first. */
static size_t trapped_block(struct proc *p, uint64_t pc)
{
	struct module *m;
	struct func_state *fs = proc_copy_at(p, pc, &m);
	if (!fs)
		return SIZE_MAX;
	size_t lo = 0, hi = fs->nmap;
	while (hi - lo > 1) {
		size_t mid = (lo + hi) / 2;
		if (fs->map_to[mid] <= pc)
			lo = mid;
		else
			hi = mid;
	}
	return fs->map_to[lo] <= pc ? block_at(p, fs, fs->map_from[lo]) : SIZE_MAX;
}

static int open_out(struct proc *p, struct bbv *b)
{
	if (b->out || b->failed)
		return b->out ? 0 : -EIO;
	b->path = session_bbv_path(p->s, p->pid);
	b->out = b->path ? fopen(b->path, "w") : NULL;
	if (!b->out) {
		rtl_warn("pid %d: cannot write the basic-block vectors to %s", (int)p->pid,
			 b->path ? b->path : "(no name)");
		b->failed = true;
		return -EIO;
	}
	return 0;
}

/* LAST and ID for every block recorded so far (a new one's LAST: 0, or
 * its counter now with NOW). */
static int know_blocks(struct proc *p, struct bbv *b, bool now)
{
	size_t cap = b->cap;
	if (rtl_grow(&b->last, &b->cap, p->nblocks, sizeof(*b->last)))
		return -ENOMEM;
	if (b->cap != cap || !b->id) {
		uint32_t *ids = realloc(b->id, (b->cap ? b->cap : 1) * sizeof(*ids));
		if (!ids)
			return -ENOMEM;
		b->id = ids;
	}
	for (size_t i = b->known; i < p->nblocks; i++) {
		const struct block_rec *br = &p->blocks[i];
		b->last[i] = now && br->counter ? proc_read_counter(p, br->counter) : 0;
		b->id[i] = 0;
	}
	b->known = p->nblocks;
	return 0;
}

/* A block's place, the same in every run (blocks are recorded in the
 * order functions were relocated, which the helper threads' timing moves):
 * its module's load order, then its link-time address. */
struct cell {
	uint64_t mod, addr, ins;
	uint32_t *id;
};

static int by_place(const void *a, const void *b)
{
	const struct cell *x = a, *y = b;
	if (x->mod != y->mod)
		return x->mod < y->mod ? -1 : 1;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* Ends an interval: one line of every block's instructions since the last.
 * Blocks a line names first are numbered in the order of their places, so
 * that two runs of a program number the same blocks alike. */
static void write_line(struct proc *p, struct bbv *b, size_t ended, uint64_t over)
{
	if (know_blocks(p, b, false) || open_out(p, b))
		return;
	struct cell *c = malloc((p->nblocks ? p->nblocks : 1) * sizeof(*c));
	size_t n = 0;
	if (!c) {
		b->failed = true;
		return;
	}
	for (size_t i = 0; i < p->nblocks; i++) {
		const struct block_rec *br = &p->blocks[i];
		uint64_t now = br->counter ? proc_read_counter(p, br->counter) : 0;
		uint64_t ins = (now - b->last[i]) * br->ninstrs;
		b->last[i] = now;
		if (i == b->carry_block)
			ins += b->carry;
		if (i == ended)
			ins -= over;   /* the rest of the block: the next interval's */
		if (!ins)
			continue;
		struct module *m = proc_module_at(p, br->addr);
		c[n++] = (struct cell){ m ? (uint64_t)(m - p->mods) : UINT64_MAX, br->addr - (m ? m->bias : 0), ins,
					&b->id[i] };
	}
	qsort(c, n, sizeof(*c), by_place);
	fputc('T', b->out);
	for (size_t k = 0; k < n; k++) {
		if (!*c[k].id)
			*c[k].id = ++b->next_id;
		fprintf(b->out, ":%u:%llu ", *c[k].id, (unsigned long long)c[k].ins);
	}
	free(c);
	fputc('\n', b->out);
	b->carry_block = ended;
	b->carry = over;
	b->lines++;
}

/* reticle's own calls in the target (engine/unwind_register.c) are not the
 * program's: the instructions they run are left out of the vectors (the
 * counters before and after) and their countdown, in the null area, is
 * only started again. */
uint64_t *bbv_call_begin(struct proc *p)
{
	struct bbv *b = p->bbv;
	if (!b || know_blocks(p, b, false))
		return NULL;
	uint64_t *before = malloc((p->nblocks ? p->nblocks : 1) * sizeof(*before));
	for (size_t i = 0; before && i < p->nblocks; i++)
		before[i] = p->blocks[i].counter ? proc_read_counter(p, p->blocks[i].counter) : 0;
	return before;
}

void bbv_call_end(struct proc *p, uint64_t *before)
{
	struct bbv *b = p->bbv;
	if (!b || !before)
		return;
	size_t n = b->known;
	for (size_t i = 0; i < n; i++)
		if (p->blocks[i].counter)
			b->last[i] += proc_read_counter(p, p->blocks[i].counter) - before[i];
	know_blocks(p, b, true);   /* relocated during the call: counted from now */
	free(before);
}

bool bbv_call_trap(struct proc *p)
{
	if (!p->bbv || !p->areas.addr)
		return false;
	int64_t *left = (int64_t *)(thread_area_local(&p->areas, 0) + TA_BBV_LEFT);
	if (*left >= 0)
		return false;
	*left = (int64_t)p->bbv->interval;
	return true;
}

bool bbv_trap(struct proc *p, pid_t tid, uint64_t pc)
{
	struct thread *t = proc_thread(p, tid);
	struct bbv *b = p->bbv;
	if (!b || !p->areas.addr || !t || t->area < 0)
		return false;
	int64_t *left = (int64_t *)(thread_area_local(&p->areas, (unsigned)t->area) + TA_BBV_LEFT);
	if (*left >= 0)
		return false;   /* not the countdown's int3 */
	size_t ended = trapped_block(p, pc);
	/* the instruction that took the count from 0 to -1 ends the line; the
	 * block's instructions after it (-left - 1) start the next one */
	while (*left < 0) {
		write_line(p, b, ended, (uint64_t)(-*left) - 1);
		*left += (int64_t)b->interval;
	}
	return true;
}

/* FILE.pc, as exp-bbv's --pc-out-file: "F:ID:ADDRESS:FUNCTION" for each
 * block a vector named (its link-time address in hex). */
static void write_pcs(struct proc *p, struct bbv *b)
{
	size_t n = strlen(b->path) + 4;
	char *path = malloc(n);
	FILE *f = path ? (snprintf(path, n, "%s.pc", b->path), fopen(path, "w")) : NULL;
	for (size_t i = 0; f && i < b->known; i++) {
		if (!b->id[i])
			continue;
		uint64_t addr = p->blocks[i].addr;
		struct module *m = proc_module_at(p, addr);
		const rtl_function *fn = m ? rtl_binary_find_function(m->bin, addr - m->bias) : NULL;
		fprintf(f, "F:%u:%llx:%s\n", b->id[i], (unsigned long long)(m ? addr - m->bias : addr),
			fn && fn->name ? fn->name : "?");
	}
	if (!f || fclose(f))
		rtl_warn("pid %d: cannot write %s", (int)p->pid, path ? path : "the block list");
	free(path);
}

int bbv_write(struct proc *p, rtl_profile *prof)
{
	struct bbv *b = p->bbv;
	if (!b)
		return 0;
	char val[64];
	int err = 0;
	if (!b->out && !b->failed)
		open_out(p, b);   /* no interval ended: an empty file says so */
	if (b->out)
		write_pcs(p, b);
	if (b->out) {
		if (fclose(b->out)) {
			rtl_warn("pid %d: the basic-block vectors in %s are incomplete", (int)p->pid, b->path);
			b->failed = true;
		}
		b->out = NULL;
	}
	if (b->path && !b->failed)
		err = rtl_profile_set_meta(prof, "bbv_file", b->path);
	snprintf(val, sizeof(val), "%llu", (unsigned long long)b->interval);
	if (!err)
		err = rtl_profile_set_meta(prof, "bbv_interval", val);
	snprintf(val, sizeof(val), "%llu", (unsigned long long)b->lines);
	if (!err)
		err = rtl_profile_set_meta(prof, "bbv_intervals", val);
	return err;
}

void bbv_free(struct proc *p)
{
	struct bbv *b = p->bbv;
	if (!b)
		return;
	if (b->out)
		fclose(b->out);
	free(b->last);
	free(b->id);
	free(b->path);
	free(b);
	p->bbv = NULL;
}
