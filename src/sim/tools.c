/* Built-in tools, written against the public API (include/reticle/sim.h)
 * as a user's tool would be: icount, mix, bbcount, branch, cache. One
 * internal call: their trailers are added with a drop function
 * (sim_add_trailer_drop), which frees their state when the simulator
 * closes without a run. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <reticle/error.h>
#include <reticle/sim.h>
#include "sim/machine.h"

struct tool { FILE *out; };

static void icount_report(struct rtl_sim *sim, void *user)
{
	struct tool *t = user;
	fprintf(t->out, "icount: %" PRIu64 " instructions\n", rtl_sim_icount(sim));
	free(t);   /* reports run once, at the end: they own their tool's state (or
		    * their drop does, when the simulator closes without a run) */
}

/* mix: one counter per instruction name, hooked by name (AddCallFuncbyName). */
struct mix { struct tool t; unsigned n; const char *const *names; uint64_t *counts; };


static struct mix *mix_state;

static int by_count_desc(const void *a, const void *b)
{
	const struct mix *m = mix_state;
	uint64_t x = m->counts[*(const unsigned *)a], y = m->counts[*(const unsigned *)b];
	return x < y ? 1 : x > y ? -1 : 0;
}

static void mix_add(struct rtl_sim *sim, const struct rtl_sim_insn *insn, uint64_t count, void *user)
{
	struct mix *m = user;
	const char *name = rtl_sim_insn_name(sim, insn);
	for (unsigned i = 0; i < m->n; i++)
		if (m->names[i] == name) {
			m->counts[i] += count;
			return;
		}
}

static void mix_free(void *user)
{
	struct mix *m = user;
	free(m->counts);
	free(m);
}

static void mix_report(struct rtl_sim *sim, void *user)
{
	struct mix *m = user;
	rtl_sim_for_each_executed(sim, mix_add, m);
	unsigned *order = calloc(m->n, sizeof *order);
	uint64_t total = 0;

	for (unsigned i = 0; i < m->n; i++)
		order[i] = i, total += m->counts[i];
	mix_state = m;
	qsort(order, m->n, sizeof *order, by_count_desc);
	fprintf(m->t.out, "mix: %" PRIu64 " instructions\n", total);
	for (unsigned i = 0; i < m->n && m->counts[order[i]]; i++)
		fprintf(m->t.out, "mix: %-16s %14" PRIu64 " %6.2f%%\n", m->names[order[i]], m->counts[order[i]],
			100.0 * m->counts[order[i]] / (total ? total : 1));
	free(order);
	mix_free(m);
}

/* bbcount: executions of the last instruction of every static block (the
 * seed's definition, 4.2), from the loop's counters; only procedures that
 * ran are analysed into blocks. */
struct exec { uint64_t addr, count; };
struct bbcount { struct tool t; struct exec *v; size_t n, cap; };

static void bb_add(struct rtl_sim *sim, const struct rtl_sim_insn *insn, uint64_t count, void *user)
{
	struct bbcount *s = user;
	if (s->n == s->cap) {
		s->cap = s->cap ? 2 * s->cap : 1024;
		s->v = realloc(s->v, s->cap * sizeof *s->v);
	}
	s->v[s->n++] = (struct exec){ rtl_sim_insn_addr(insn), count };
}

static int by_addr(const void *a, const void *b)
{
	const struct exec *x = a, *y = b;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* The executions counted at addr (records sorted, one address may repeat). */
static uint64_t count_at(const struct bbcount *s, uint64_t addr)
{
	size_t lo = 0, hi = s->n;
	uint64_t n = 0;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (s->v[mid].addr < addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < s->n && s->v[lo].addr == addr; lo++)
		n += s->v[lo].count;
	return n;
}

static void bb_free(void *user)
{
	struct bbcount *s = user;
	free(s->v);
	free(s);
}

static void bb_report(struct rtl_sim *sim, void *user)
{
	struct bbcount *s = user;
	uint64_t total = 0;
	const struct rtl_sim_proc *last = NULL;

	rtl_sim_for_each_executed(sim, bb_add, s);
	if (s->n)
		qsort(s->v, s->n, sizeof *s->v, by_addr);
	struct { const struct rtl_sim_proc *p; uint64_t blocks; } *procs = calloc(s->n + 1, sizeof *procs);
	size_t np = 0;
	for (size_t i = 0; i < s->n && procs; i++) {
		const struct rtl_sim_proc *p = rtl_sim_proc_at(sim, s->v[i].addr);
		if (!p || p == last)
			continue;
		last = p;
		uint64_t sum = 0;
		for (const struct rtl_sim_block *b = rtl_sim_first_block(sim, p); b; b = rtl_sim_next_block(sim, b))
			sum += count_at(s, rtl_sim_last_insn(b));
		procs[np].p = p;
		procs[np++].blocks = sum;
		total += sum;
	}
	fprintf(s->t.out, "bbcount: %" PRIu64 " blocks traversed\n", total);
	for (size_t i = 0; i < np; i++)
		if (procs[i].blocks)
			fprintf(s->t.out, "bbcount: proc %-32s %14" PRIu64 "\n", rtl_sim_proc_name(procs[i].p),
				procs[i].blocks);
	free(procs);
	bb_free(s);
}

/* branch: taken / not taken per conditional branch, hooked after each. */
struct br { uint64_t addr, taken, not_taken; struct br *next; };
struct branch { struct tool t; struct br *list; };

static void br_after(struct rtl_sim *sim, const struct rtl_sim_insn *insn, void *user)
{
	struct br *b = user;
	if (!rtl_sim_insn_is_cond_branch(insn))
		return;
	if (rtl_sim_pc(sim) != rtl_sim_insn_addr(insn) + rtl_sim_insn_len(insn))
		b->taken++;
	else
		b->not_taken++;
}

static void br_free(void *user)
{
	struct branch *s = user;
	for (struct br *b = s->list, *n; b; b = n) {
		n = b->next;
		free(b);
	}
	free(s);
}

static void br_report(struct rtl_sim *sim, void *user)
{
	struct branch *s = user;
	uint64_t t = 0, nt = 0, sites = 0;
	for (struct br *b = s->list; b; b = b->next)
		if (b->taken + b->not_taken)
			t += b->taken, nt += b->not_taken, sites++;
	fprintf(s->t.out, "branch: %" PRIu64 " conditional branch sites executed: %" PRIu64 " taken, %" PRIu64 " not taken\n",
		sites, t, nt);
	br_free(s);
}


static int setup_branch(struct rtl_sim *sim, FILE *out)
{
	struct branch *s = calloc(1, sizeof *s);
	if (!s)
		return -ENOMEM;
	s->t.out = out;
	for (const struct rtl_sim_proc *p = rtl_sim_first_proc(sim); p; p = rtl_sim_next_proc(sim, p))
		for (const struct rtl_sim_block *b = rtl_sim_first_block(sim, p); b; b = rtl_sim_next_block(sim, b)) {
			uint64_t a = rtl_sim_last_insn(b);
			struct br *r = calloc(1, sizeof *r);
			if (!r)
				return -ENOMEM;
			r->addr = a;
			r->next = s->list;
			s->list = r;
			rtl_sim_add_call(sim, a, RTL_SIM_AFTER, br_after, r);
		}
	return sim_add_trailer_drop(sim, br_report, br_free, s);
}

/* cache: one set-associative LRU data cache over every memory access. */
struct cache {
	struct tool t;
	unsigned size, ways, line, sets;
	uint64_t *tags, *stamps, clock;
	uint64_t acc[2], miss[2];     /* [0] reads, [1] writes */
};

static void cache_access(struct rtl_sim *sim, uint64_t pc, uint64_t addr, unsigned size, int is_write, void *user)
{
	struct cache *c = user;
	uint64_t first = addr / c->line, last = (addr + size - 1) / c->line;

	for (uint64_t l = first; l <= last; l++) {   /* an access may straddle two lines */
		uint64_t *tags = &c->tags[(l % c->sets) * c->ways], *st = &c->stamps[(l % c->sets) * c->ways];
		unsigned victim = 0;
		c->acc[is_write]++;
		for (unsigned w = 0; w < c->ways; w++) {
			if (st[w] && tags[w] == l) {
				st[w] = ++c->clock;
				goto next;
			}
			if (st[w] < st[victim])
				victim = w;
		}
		c->miss[is_write]++;
		tags[victim] = l;
		st[victim] = ++c->clock;
next:		;
	}
}

static void cache_free(void *user)
{
	struct cache *c = user;
	free(c->tags);
	free(c->stamps);
	free(c);
}

static void cache_report(struct rtl_sim *sim, void *user)
{
	struct cache *c = user;
	uint64_t a = c->acc[0] + c->acc[1], m = c->miss[0] + c->miss[1];
	fprintf(c->t.out, "cache: %u bytes, %u-way, %u-byte lines: %" PRIu64 " accesses (%" PRIu64 " reads, %" PRIu64
		" writes), %" PRIu64 " misses (%" PRIu64 " read, %" PRIu64 " write), miss rate %.2f%%\n",
		c->size, c->ways, c->line, a, c->acc[0], c->acc[1], m, c->miss[0], c->miss[1], a ? 100.0 * m / a : 0.0);
	cache_free(c);
}

static int setup_cache(struct rtl_sim *sim, const char *args, FILE *out)
{
	unsigned size = 32768, ways = 8, line = 64;
	if (*args && sscanf(args, ":%u:%u:%u", &size, &ways, &line) != 3)
		return -RTL_ERR_BAD_OPTION;
	if (!ways || !line || (line & (line - 1)) || size % (ways * line) || !size)
		return -RTL_ERR_BAD_OPTION;
	struct cache *c = calloc(1, sizeof *c);
	if (!c)
		return -ENOMEM;
	c->t.out = out;
	c->size = size, c->ways = ways, c->line = line, c->sets = size / (ways * line);
	c->tags = calloc((size_t)c->sets * ways, sizeof *c->tags);
	c->stamps = calloc((size_t)c->sets * ways, sizeof *c->stamps);
	if (!c->tags || !c->stamps)
		return -ENOMEM;
	int err = rtl_sim_add_mem_call(sim, cache_access, c);
	return err ? err : sim_add_trailer_drop(sim, cache_report, cache_free, c);
}

/* mix needs only the description's names: counts come from the loop. */
static int setup_mix(struct rtl_sim *sim, FILE *out)
{
	struct mix *m = calloc(1, sizeof *m);
	if (!m)
		return -ENOMEM;
	m->t.out = out;
	m->n = (unsigned)rtl_sim_insn_names(sim, &m->names);
	m->counts = calloc(m->n + 1, sizeof *m->counts);
	if (!m->counts) {
		free(m);
		return -ENOMEM;
	}
	return sim_add_trailer_drop(sim, mix_report, mix_free, m);
}

static int setup_bbcount(struct rtl_sim *sim, FILE *out)
{
	struct bbcount *s = calloc(1, sizeof *s);
	if (!s)
		return -ENOMEM;
	s->t.out = out;
	return sim_add_trailer_drop(sim, bb_report, bb_free, s);
}

int rtl_sim_tool_builtin(struct rtl_sim *sim, const char *name, void *out_file)
{
	FILE *out = out_file ? out_file : stderr;

	if (!strncmp(name, "cache", 5) && (name[5] == 0 || name[5] == ':'))
		return setup_cache(sim, name + 5, out);
	if (!strcmp(name, "icount")) {
		struct tool *t = calloc(1, sizeof *t);
		if (!t)
			return -ENOMEM;
		t->out = out;
		return sim_add_trailer_drop(sim, icount_report, free, t);
	}
	if (!strcmp(name, "mix"))
		return setup_mix(sim, out);
	if (!strcmp(name, "bbcount"))
		return setup_bbcount(sim, out);
	if (!strcmp(name, "branch"))
		return setup_branch(sim, out);
	return -RTL_ERR_UNKNOWN_COLLECTOR;
}
