/* reticle sim -o: the simulated run written as a reticle profile
 * (include/reticle/profile.h, docs/profile-schema.md), the same file the
 * native engine writes, so `reticle report` reads both.
 *
 * Written by a trailer, from the loop's exact per-instruction execution
 * counts (rtl_sim_for_each_executed): one module (the program, bias 0), one
 * function per procedure that ran with its instructions executed, and its
 * executed blocks. A row of `blocks` is a run of consecutive instructions
 * of one static block executed the same number of times: normally the
 * whole static block; a block entered in its middle or left by a fault
 * gives several rows, so sum(ninstrs * count) always equals instrs.
 * Calls are not written: the entry hook counts executions of a procedure's
 * first instruction, which a loop jumping back to it also counts. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <reticle/error.h>
#include <reticle/profile.h>
#include "sim/machine.h"
#include "sim/memtrace.h"
#include "util/array.h"

struct px { uint64_t addr, count; unsigned len; };   /* one executed instruction */

/* A function written: [lo, hi) and its profile id, for memtrace's metrics. */
struct fn_range { uint64_t lo, hi; int64_t id; };

struct simprof {
	char *path, *command, *tool;
	struct fn_range *fns;
	size_t nfns, capfns;
	rtl_profile *prof;   /* created before the run: a bad PATH fails early */
	int *result;
	struct px *v;
	size_t n, cap;
	int err;
};

static void collect(struct rtl_sim *sim, const struct rtl_sim_insn *insn, uint64_t count, void *user)
{
	struct simprof *s = user;
	if (s->n == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 4096;
		struct px *v = realloc(s->v, cap * sizeof *v);
		if (!v) {
			s->err = -ENOMEM;
			return;
		}
		s->v = v, s->cap = cap;
	}
	s->v[s->n++] = (struct px){ rtl_sim_insn_addr(insn), count, rtl_sim_insn_len(insn) };
}

static int by_addr(const void *a, const void *b)
{
	const struct px *x = a, *y = b;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* Sorts and merges the records of one address (it may lie in several
 * predecoded blocks). */
static void merge(struct simprof *s)
{
	size_t j = 0;
	if (!s->n)
		return;
	qsort(s->v, s->n, sizeof *s->v, by_addr);
	for (size_t i = 1; i < s->n; i++) {
		if (s->v[i].addr == s->v[j].addr)
			s->v[j].count += s->v[i].count;
		else
			s->v[++j] = s->v[i];
	}
	s->n = j + 1;
}

static int set_meta_u(rtl_profile *p, const char *key, long long v)
{
	char buf[32];
	snprintf(buf, sizeof buf, "%lld", v);
	return rtl_profile_set_meta(p, key, buf);
}

static int write_meta(struct rtl_sim *m, struct simprof *s, rtl_profile *p)
{
	int err = rtl_profile_set_meta(p, "command", s->command);
	if (!err)
		err = set_meta_u(p, "pid", 0);   /* a simulated process has no host pid */
	if (!err && !m->failed)   /* a stopped simulation has no exit status */
		err = set_meta_u(p, "exit_status", m->exit_status);
	if (!err)
		err = rtl_profile_set_meta(p, "collectors", "sim");
	if (!err)
		err = rtl_profile_set_meta(p, "isa", rtl_sim_isa_name(m) ? rtl_sim_isa_name(m) : "?");
	if (!err)
		err = rtl_profile_set_meta(p, "tool", s->tool);
	if (!err)
		err = set_meta_u(p, "sim_icount", (long long)m->icount);
	if (!err && m->failed)
		err = rtl_profile_set_meta(p, "sim_stopped", m->msg);   /* the run did not end normally */
	return err;
}

/* The static block of P holding ADDR, or NULL (a procedure's blocks are
 * sorted and do not overlap; a stripped program's segment has many). */
static const struct rtl_sim_block *block_at(struct rtl_sim *m, const struct rtl_sim_proc *p, uint64_t addr)
{
	const struct rtl_sim_block *b = rtl_sim_first_block(m, p);
	size_t lo = 0, hi = b ? p->nblocks : 0;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (b[mid].last < addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < p->nblocks && b[lo].addr <= addr && addr <= b[lo].last ? &b[lo] : NULL;
}

/* Instructions v[i..] of procedure P (or of no procedure: one pseudo
 * function per run of code outside symbols). Returns the index after them. */
static size_t write_proc(struct rtl_sim *m, struct simprof *s, rtl_profile *prof, int64_t mod, const struct px *v,
			 size_t n, size_t i, int *err)
{
	const struct rtl_sim_proc *p = rtl_sim_proc_at(m, v[i].addr);
	uint64_t lo = p ? p->addr : v[i].addr, hi = p ? p->addr + p->size : v[i].addr;
	size_t j = i;
	int64_t fid;

	if (!p)   /* code without a symbol: consecutive executed instructions */
		for (hi = v[i].addr + v[i].len; j + 1 < n && v[j + 1].addr == hi && !rtl_sim_proc_at(m, hi); j++)
			hi += v[j + 1].len;
	else
		while (j + 1 < n && v[j + 1].addr < hi)
			j++;
	char name[40];
	if (!p)
		snprintf(name, sizeof name, "sub_%" PRIx64, lo);
	if ((*err = rtl_profile_add_function(prof, mod, p ? p->name : name, lo, hi - lo, 1, NULL, &fid)))
		return n;
	if (rtl_grow(&s->fns, &s->capfns, s->nfns + 1, sizeof(*s->fns))) {
		*err = -ENOMEM;
		return n;
	}
	s->fns[s->nfns++] = (struct fn_range){ lo, hi > lo ? hi : lo + 1, fid };
	uint64_t instrs = 0;
	size_t start = i;
	for (size_t k = i; k <= j; k++) {
		instrs += v[k].count;
		const struct rtl_sim_block *b = p ? block_at(m, p, v[k].addr) : NULL;
		/* a run ends at a gap, a change of count, or the end of its block */
		int end = k == j || v[k + 1].addr != v[k].addr + v[k].len || v[k + 1].count != v[k].count ||
			  (p && (!b || v[k].addr == b->last || block_at(m, p, v[k + 1].addr) != b));
		if (!end)
			continue;
		if ((*err = rtl_profile_add_block(prof, fid, v[start].addr, (uint32_t)(k - start + 1), v[k].count)))
			return n;
		start = k + 1;
	}
	*err = rtl_profile_set_function_counts(prof, fid, RTL_HAVE_INSTRS, 0, instrs);
	return j + 1;
}

/* The profile id of the function written that holds PC (written in
 * address order), or -1. */
static int64_t function_of(uint64_t pc, uint64_t *site, void *ctx)
{
	const struct simprof *s = ctx;
	*site = pc;   /* the program's own addresses: bias 0 */
	/* the first function ending above PC */
	size_t lo = rtl_lower_bound_u64_in(s->fns, s->nfns, sizeof(*s->fns), offsetof(struct fn_range, hi), pc + 1);
	return lo < s->nfns && s->fns[lo].lo <= pc ? s->fns[lo].id : -1;
}

static int write_profile(struct rtl_sim *m, struct simprof *s)
{
	rtl_profile *prof = s->prof;
	int64_t mod;
	int err = write_meta(m, s, prof);

	if (!err)
		err = rtl_profile_add_module(prof, m->path, 0, &mod);
	for (size_t i = 0; !err && i < s->n;)
		i = write_proc(m, s, prof, mod, s->v, s->n, i, &err);
	if (!err)
		err = sim_memtrace_write(m, prof, function_of, s);
	return err ? err : rtl_profile_commit(prof);
}

static void free_state(struct simprof *s)
{
	if (s->prof)
		rtl_profile_close(s->prof);
	free(s->fns);
	free(s->path);
	free(s->command);
	free(s->tool);
	free(s);
}

static void drop_state(void *user)
{
	struct simprof *s = user;
	free(s->v);
	free_state(s);   /* not committed: its temporary file is deleted */
}

static void profile_trailer(struct rtl_sim *m, void *user)
{
	struct simprof *s = user;

	rtl_sim_for_each_executed(m, collect, s);
	merge(s);
	*s->result = s->err ? s->err : write_profile(m, s);   /* the caller reports errors */
	free(s->v);
	free_state(s);   /* closing deletes the temporary file when not committed */
}

int rtl_sim_add_profile(struct rtl_sim *m, const char *path, const char *command, const char *tool, int *result)
{
	struct simprof *s = calloc(1, sizeof *s);
	int err = -ENOMEM;
	if (!s)
		return err;
	s->path = strdup(path);
	s->command = strdup(command ? command : "");
	s->tool = strdup(tool ? tool : "reticle sim");
	s->result = result;
	*result = 1;
	if (s->path && s->command && s->tool && !(err = rtl_profile_create(path, &s->prof)))
		err = sim_add_trailer_drop(m, profile_trailer, drop_state, s);
	if (err)
		free_state(s);
	return err;
}
