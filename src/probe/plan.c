/* Plans: the collectors' snippets for one function, checked against its
 * cfg and merged (two collectors counting one point share a counter). */
#include <dlfcn.h>       /* dladdr: _GNU_SOURCE comes from the build */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <reticle/error.h>
#include "probe/plan.h"
#include "util/array.h"
#include "util/hash.h"

struct rtl_plan {
	const struct rtl_function_cfg *cfg;
	uint64_t bias;
	struct probe_plan *out;
};

/* A plug-in's plans are fixed by its file as well as its name: a rebuilt
 * one must not find the copies its last build planned. */
static uint64_t hash_plugin_file(uint64_t h, const struct rtl_collector *c)
{
	Dl_info info;
	struct stat st;
	if (rtl_collector_find(c->name) == c || !dladdr(c, &info) || !info.dli_fname ||
	    stat(info.dli_fname, &st))
		return h;
	uint64_t id[5] = { st.st_dev, st.st_ino, (uint64_t)st.st_size, (uint64_t)st.st_mtim.tv_sec,
			   (uint64_t)st.st_mtim.tv_nsec };
	return fnv1a(h, id, sizeof(id));
}

static const struct rtl_cfg_block check_blocks[] = {   /* one of every kind */
	{ 0x1000, 0x1004, 2, RTL_END_BRANCH, 0x1040 },
	{ 0x1006, 0x1006, 1, RTL_END_FALL, 0 },
	{ 0x1008, 0x100c, 2, RTL_END_CALL, 0x2000 },
	{ 0x1011, 0x1011, 1, RTL_END_INDIRECT_CALL, 0 },
	{ 0x1013, 0x1018, 2, RTL_END_JUMP, 0x1040 },
	{ 0x101a, 0x101a, 1, RTL_END_INDIRECT_JUMP, 0 },
	{ 0x101c, 0x1020, 3, RTL_END_STOP, 0 },
	{ 0x1040, 0x1044, 2, RTL_END_RETURN, 0 },
};
static const struct rtl_function_cfg check_cfg = { "/check/module", "check_function", 0x1000, 0x48, check_blocks,
						   sizeof(check_blocks) / sizeof(*check_blocks) };

/* Whether C's plan of a made-up function traces memory: then copies are
 * made for the run only (their records number the run's accesses). */
static bool plans_memory(const struct rtl_collector *c)
{
	struct probe_plan out = { 0 };
	struct rtl_plan plan = { &check_cfg, 0, &out };
	bool memory = false;
	if (c->plan && !c->plan(&check_cfg, &plan))
		for (size_t i = 0; i < out.n; i++)
			memory |= out.pts[i].kind == RTL_POINT_MEMORY;
	probe_plan_free(&out);
	return memory;
}

void probe_set_init(struct probe_set *s, const struct rtl_collector *const *cs, size_t n)
{
	/* FNV-1a of the names: built-in plans are fixed by their name; a
	 * plug-in's name is its own (cmd_run refuses two of one name) */
	uint64_t h = FNV1A_INIT;
	for (size_t i = 0; i < n; i++) {   /* each name with its NUL: "ab","c" is not "a","bc" */
		h = fnv1a(h, cs[i]->name, strlen(cs[i]->name) + 1);
		if (cs[i]->plan_key)
			h = fnv1a(h, cs[i]->plan_key, strlen(cs[i]->plan_key) + 1);
		h = hash_plugin_file(h, cs[i]);
	}
	s->cs = cs;
	s->n = n;
	s->timers = s->memory = false;
	for (size_t i = 0; i < n; i++) {
		s->timers |= cs[i]->timers;
		s->memory |= plans_memory(cs[i]);
	}
	s->whole_lines = false;
	s->structure = true;
	s->sample_leaf_timers = s->timers;
	snprintf(s->key, sizeof(s->key), "%016llx", (unsigned long long)h);
}

/* S's key with TAG mixed in: its copies are kept apart */
static void mix_key(struct probe_set *s, const char *tag)
{
	uint64_t h = strtoull(s->key, NULL, 16);
	snprintf(s->key, sizeof(s->key), "%016llx", (unsigned long long)fnv1a(h, tag, strlen(tag) + 1));
}

void probe_set_sweeps(struct probe_set *s)
{
	s->whole_lines = true;
	mix_key(s, "sweeps");
}

void probe_set_time_all(struct probe_set *s)
{
	s->sample_leaf_timers = false;
	mix_key(s, "time all");
}

int probe_plan_push_op(struct probe_plan *p, enum rtl_point_kind kind, uint64_t addr, enum rtl_primitive op)
{
	if (rtl_grow(&p->pts, &p->cap, p->n + 1, sizeof(*p->pts)))
		return -ENOMEM;
	p->pts[p->n++] = (struct plan_point){ addr, (uint8_t)kind, (uint8_t)op, 0, 0, 0 };
	return 0;
}

int probe_plan_push(struct probe_plan *p, enum rtl_point_kind kind, uint64_t addr)
{
	return probe_plan_push_op(p, kind, addr, RTL_PRIM_COUNT);
}

static int cmp_point(const void *a, const void *b)
{
	const struct plan_point *x = a, *y = b;
	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	if (x->kind != y->kind)
		return x->kind < y->kind ? -1 : 1;
	if ((x->id != 0) != (y->id != 0))   /* the shared ones first at a point */
		return x->id ? 1 : -1;
	if (x->op != y->op)
		return x->op < y->op ? -1 : 1;
	return (x->id > y->id) - (x->id < y->id);
}

void probe_plan_finish(struct probe_plan *p)
{
	if (p->n > 1)
		qsort(p->pts, p->n, sizeof(*p->pts), cmp_point);
	size_t k = 0;
	for (size_t i = 0; i < p->n; i++)
		if (!k || cmp_point(&p->pts[k - 1], &p->pts[i]))
			p->pts[k++] = p->pts[i];
	p->n = k;
}

bool probe_plan_has_op(const struct probe_plan *p, enum rtl_point_kind kind, uint64_t addr,
		       enum rtl_primitive op)
{
	struct plan_point key = { addr, (uint8_t)kind, (uint8_t)op, 0, 0, 0 };
	return p->n && bsearch(&key, p->pts, p->n, sizeof(key), cmp_point);
}

const struct plan_point *probe_plan_own(const struct probe_plan *p, enum rtl_point_kind kind, uint64_t addr,
					size_t *n)
{
	size_t lo = 0, hi = p->n;
	while (lo < hi) {   /* the first at KIND/ADDR with an id */
		size_t mid = (lo + hi) / 2;
		const struct plan_point *x = &p->pts[mid];
		bool before = x->addr != addr ? x->addr < addr : x->kind != kind ? x->kind < kind : !x->id;
		if (before)
			lo = mid + 1;
		else
			hi = mid;
	}
	size_t end = lo;
	while (end < p->n && p->pts[end].addr == addr && p->pts[end].kind == kind)
		end++;
	*n = end - lo;
	return &p->pts[lo];
}

bool probe_plan_has(const struct probe_plan *p, enum rtl_point_kind kind, uint64_t addr)
{
	return probe_plan_has_op(p, kind, addr, RTL_PRIM_COUNT);
}

void probe_plan_free(struct probe_plan *p)
{
	free(p->pts);
	free(p->preds);
	memset(p, 0, sizeof(*p));
}

/* The block of CFG whose first (or, with BY_LAST, last) instruction is
 * at ADDR, or NULL: blocks are in address order, so both keys ascend. */
static const struct rtl_cfg_block *block_with(const struct rtl_function_cfg *cfg, uint64_t addr,
					      bool by_last)
{
	size_t lo = 0, hi = cfg->nblocks;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		const struct rtl_cfg_block *b = &cfg->blocks[mid];
		if ((by_last ? b->last : b->addr) < addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == cfg->nblocks)
		return NULL;
	const struct rtl_cfg_block *b = &cfg->blocks[lo];
	return (by_last ? b->last : b->addr) == addr ? b : NULL;
}

static bool predicate_ok(const struct rtl_predicate *q, enum rtl_point_kind kind)
{
	if (q->cmp > RTL_CMP_GE || (q->size != 1 && q->size != 2 && q->size != 4 && q->size != 8))
		return false;
	switch (q->operand) {
	case RTL_OPND_ARG: return q->index < 6;
	case RTL_OPND_RETVAL: return kind == RTL_POINT_EXIT;
	case RTL_OPND_REG: return q->index < 16 && q->index != 4;
	case RTL_OPND_GLOBAL: return q->where != 0;
	case RTL_OPND_ONSTACK: return q->where >= 1 && q->where <= RTL_MAX_TIMER_ID;
	case RTL_OPND_LATENCY:
		return kind == RTL_POINT_EXIT && q->where >= 1 && q->where <= RTL_MAX_TIMER_ID && q->size == 8;
	default: return false;
	}
}

/* A snippet with an id of its own, and its predicates (global addresses
 * made run-time). */
static int push_own(rtl_plan *plan, enum rtl_point_kind kind, uint64_t addr, const struct rtl_snippet *s)
{
	struct probe_plan *out = plan->out;
	bool counter = (s->op == RTL_PRIM_COUNT || s->op == RTL_PRIM_COUNT_BY || s->op == RTL_PRIM_CALL) &&
		       (kind == RTL_POINT_ENTRY || kind == RTL_POINT_EXIT);
	bool keyed = s->op == RTL_PRIM_COUNT_BY;
	if (!s->id || s->id > (s->op == RTL_PRIM_TIMER_START ? RTL_MAX_TIMER_ID : RTL_MAX_SNIPPET_ID) ||
	    s->npred > RTL_MAX_PREDICATES ||
	    (!counter && s->op != RTL_PRIM_TIMER_START) || (s->npred && !s->pred) ||
	    (keyed && (!s->key || !predicate_ok(s->key, kind) || s->key->operand == RTL_OPND_ONSTACK)))
		return -RTL_ERR_UNSUPPORTED;
	for (size_t i = 0; i < s->npred; i++)
		if (!predicate_ok(&s->pred[i], kind))
			return -RTL_ERR_UNSUPPORTED;
	if (rtl_grow(&out->preds, &out->cappreds, out->npreds + s->npred + keyed, sizeof(*out->preds)) ||
	    probe_plan_push_op(out, kind, addr + plan->bias, s->op))
		return -ENOMEM;
	struct plan_point *pt = &out->pts[out->n - 1];
	pt->id = s->id;
	pt->pred = (uint32_t)out->npreds;
	pt->npred = (uint8_t)s->npred;
	for (size_t i = 0; i < s->npred + keyed; i++) {   /* the key after the predicates */
		struct rtl_predicate q = i < s->npred ? s->pred[i] : *s->key;
		if (q.operand == RTL_OPND_GLOBAL)
			q.where += plan->bias;
		out->preds[out->npreds++] = q;
	}
	return 0;
}

int rtl_plan_add(rtl_plan *plan, enum rtl_point_kind kind, uint64_t addr, const struct rtl_snippet *s)
{
	const struct rtl_function_cfg *cfg = plan->cfg;
	const struct rtl_cfg_block *b;
	if (!s || (unsigned)kind >= RTL_POINT_KIND_COUNT)
		return -RTL_ERR_UNSUPPORTED;
	/* the function's timer: started at its entry, stopped at its exits */
	if ((s->op == RTL_PRIM_TIMER_START && kind != RTL_POINT_ENTRY) ||
	    (s->op == RTL_PRIM_TIMER_STOP && kind != RTL_POINT_EXIT) ||
	    (s->op == RTL_PRIM_SLOT_SET && kind != RTL_POINT_ENTRY && kind != RTL_POINT_CALL_AFTER) ||
	    (s->op == RTL_PRIM_COUNT && (kind == RTL_POINT_CALL_AFTER || kind == RTL_POINT_MEMORY)) ||
	    (s->op == RTL_PRIM_BUFFER_APPEND && kind != RTL_POINT_MEMORY) ||
	    (s->op == RTL_PRIM_COUNTDOWN && kind != RTL_POINT_BLOCK) ||
	    (s->op == RTL_PRIM_COUNT_BY && !s->id) ||
	    (s->op == RTL_PRIM_CALL && (!s->id || (kind != RTL_POINT_ENTRY && kind != RTL_POINT_EXIT))) ||
	    (s->op != RTL_PRIM_COUNT && s->op != RTL_PRIM_TIMER_START && s->op != RTL_PRIM_TIMER_STOP &&
	     s->op != RTL_PRIM_SLOT_SET && s->op != RTL_PRIM_BUFFER_APPEND && s->op != RTL_PRIM_COUNTDOWN &&
	     s->op != RTL_PRIM_COUNT_BY && s->op != RTL_PRIM_CALL))
		return -RTL_ERR_UNSUPPORTED;
	switch (kind) {
	case RTL_POINT_ENTRY:
		if (addr != cfg->addr)
			return -EINVAL;
		break;
	case RTL_POINT_BLOCK:
	case RTL_POINT_REP_ITERATIONS:
	case RTL_POINT_MEMORY:
		if (!block_with(cfg, addr, false))
			return -EINVAL;
		break;
	case RTL_POINT_BRANCH_TAKEN:
	case RTL_POINT_BRANCH_NOT_TAKEN:
		if (!(b = block_with(cfg, addr, true)) || b->end != RTL_END_BRANCH)
			return -EINVAL;
		break;
	case RTL_POINT_CALL_BEFORE:
	case RTL_POINT_CALL_AFTER:
		if (!(b = block_with(cfg, addr, true)) ||
		    (b->end != RTL_END_CALL && b->end != RTL_END_INDIRECT_CALL))
			return -EINVAL;
		break;
	case RTL_POINT_INDIRECT_TARGET:
		if (!(b = block_with(cfg, addr, true)) || b->end != RTL_END_INDIRECT_CALL)
			return -EINVAL;
		break;
	case RTL_POINT_EXIT:
		if (!(b = block_with(cfg, addr, true)) || b->end != RTL_END_RETURN)
			return -EINVAL;
		break;
	case RTL_POINT_BACK_EDGE:
		if (!(b = block_with(cfg, addr, true)) || !rtl_cfg_back_edge(cfg, b))
			return -EINVAL;
		break;
	default:
		return -RTL_ERR_UNSUPPORTED;
	}
	if (s->id || s->npred)
		return push_own(plan, kind, addr, s);
	return probe_plan_push_op(plan->out, kind, addr + plan->bias, s->op);
}

bool rtl_cfg_back_edge(const struct rtl_function_cfg *cfg, const struct rtl_cfg_block *b)
{
	return (b->end == RTL_END_BRANCH || b->end == RTL_END_JUMP) && b->target && b->target <= b->last &&
	       b->target >= cfg->addr && b->target < cfg->addr + cfg->size;
}

int rtl_plan_count_back_edges(const struct rtl_function_cfg *cfg, rtl_plan *plan)
{
	static const struct rtl_snippet count = { .op = RTL_PRIM_COUNT };
	int err = 0;
	for (size_t b = 0; b < cfg->nblocks && !err; b++)
		if (rtl_cfg_back_edge(cfg, &cfg->blocks[b]))
			err = rtl_plan_add(plan, RTL_POINT_BACK_EDGE, cfg->blocks[b].last, &count);
	return err;
}

int rtl_plan_count_entry(const struct rtl_function_cfg *cfg, rtl_plan *plan)
{
	static const struct rtl_snippet count = { .op = RTL_PRIM_COUNT };
	return rtl_plan_add(plan, RTL_POINT_ENTRY, cfg->addr, &count);
}

int rtl_plan_count_blocks(const struct rtl_function_cfg *cfg, rtl_plan *plan)
{
	static const struct rtl_snippet count = { .op = RTL_PRIM_COUNT };
	int err = 0;
	for (size_t b = 0; b < cfg->nblocks && !err; b++)
		err = rtl_plan_add(plan, RTL_POINT_BLOCK, cfg->blocks[b].addr, &count);
	return err;
}

int rtl_plan_count_branches(const struct rtl_function_cfg *cfg, rtl_plan *plan)
{
	static const struct rtl_snippet count = { .op = RTL_PRIM_COUNT };
	int err = 0;
	for (size_t b = 0; b < cfg->nblocks && !err; b++)
		if (cfg->blocks[b].end == RTL_END_BRANCH &&
		    !(err = rtl_plan_add(plan, RTL_POINT_BRANCH_TAKEN, cfg->blocks[b].last, &count)))
			err = rtl_plan_add(plan, RTL_POINT_BRANCH_NOT_TAKEN, cfg->blocks[b].last, &count);
	return err;
}

int rtl_plan_count_calls(const struct rtl_function_cfg *cfg, rtl_plan *plan)
{
	static const struct rtl_snippet count = { .op = RTL_PRIM_COUNT };
	int err = 0;
	for (size_t b = 0; b < cfg->nblocks && !err; b++) {
		uint8_t end = cfg->blocks[b].end;
		if (end == RTL_END_CALL || end == RTL_END_INDIRECT_CALL)
			err = rtl_plan_add(plan, RTL_POINT_CALL_BEFORE, cfg->blocks[b].last, &count);
		if (!err && end == RTL_END_INDIRECT_CALL)
			err = rtl_plan_add(plan, RTL_POINT_INDIRECT_TARGET, cfg->blocks[b].last, &count);
	}
	return err;
}

/* Whether NAME has the part suffix SUFFIX at its end, or followed by
 * '.' and a number. */
static bool has_part_suffix(const char *name, const char *suffix)
{
	size_t n = strlen(suffix);
	for (const char *at = name ? strstr(name, suffix) : NULL; at; at = strstr(at + 1, suffix))
		if (!at[n] || (at[n] == '.' && at[n + 1] >= '0' && at[n + 1] <= '9'))
			return true;
	return false;
}

bool probe_cold_part(const char *name)
{
	/* BOLT's split functions too: a leaf's '.warm' part keeps its data in
	 * the red zone across the jump (rust-lld's libLLVM XXH3 hash), where
	 * an entry snippet would write */
	return has_part_suffix(name, ".cold") || has_part_suffix(name, ".warm");
}

int rtl_plan_time_function(const struct rtl_function_cfg *cfg, rtl_plan *plan)
{
	static const struct rtl_snippet start = { .op = RTL_PRIM_TIMER_START }, stop = { .op = RTL_PRIM_TIMER_STOP };
	/* a cold part: no frame of its own, but its returns close the function's */
	int err = probe_cold_part(cfg->name) ? 0 : rtl_plan_add(plan, RTL_POINT_ENTRY, cfg->addr, &start);
	for (size_t b = 0; b < cfg->nblocks && !err; b++)
		if (cfg->blocks[b].end == RTL_END_RETURN)
			err = rtl_plan_add(plan, RTL_POINT_EXIT, cfg->blocks[b].last, &stop);
	return err;
}

int rtl_plan_count_intervals(const struct rtl_function_cfg *cfg, rtl_plan *plan)
{
	static const struct rtl_snippet down = { .op = RTL_PRIM_COUNTDOWN };
	int err = rtl_plan_count_blocks(cfg, plan);
	for (size_t b = 0; b < cfg->nblocks && !err; b++)
		err = rtl_plan_add(plan, RTL_POINT_BLOCK, cfg->blocks[b].addr, &down);
	return err;
}

int rtl_plan_trace_memory(const struct rtl_function_cfg *cfg, rtl_plan *plan)
{
	static const struct rtl_snippet append = { .op = RTL_PRIM_BUFFER_APPEND };
	int err = 0;
	for (size_t b = 0; b < cfg->nblocks && !err; b++)
		err = rtl_plan_add(plan, RTL_POINT_MEMORY, cfg->blocks[b].addr, &append);
	return err;
}

int rtl_plan_signal_function(const struct rtl_function_cfg *cfg, rtl_plan *plan)
{
	static const struct rtl_snippet set = { .op = RTL_PRIM_SLOT_SET };
	/* a cold part runs in its function's frame: it keeps its signal */
	int err = probe_cold_part(cfg->name) ? 0 : rtl_plan_add(plan, RTL_POINT_ENTRY, cfg->addr, &set);
	for (size_t b = 0; b < cfg->nblocks && !err; b++)
		if (cfg->blocks[b].end == RTL_END_CALL || cfg->blocks[b].end == RTL_END_INDIRECT_CALL)
			err = rtl_plan_add(plan, RTL_POINT_CALL_AFTER, cfg->blocks[b].last, &set);
	return err;
}

int rtl_collector_check(const struct rtl_collector *c, const char **why)
{
	struct probe_plan out = { 0 };
	struct rtl_plan plan = { &check_cfg, 0, &out };
	int err = c->plan ? c->plan(&check_cfg, &plan) : 0;
	*why = NULL;
	if (err == -RTL_ERR_UNSUPPORTED)
		*why = "its plan asks for a point or primitive reticle does not implement (reticle/probe.h)";
	else if (err == -EINVAL)
		*why = "its plan puts a snippet where the function has no such point";
	else if (err)
		*why = "its plan fails";
	for (size_t i = 0; i < out.n && !err && !c->timers; i++)
		if (out.pts[i].op == RTL_PRIM_TIMER_START || out.pts[i].op == RTL_PRIM_TIMER_STOP ||
		    out.pts[i].op == RTL_PRIM_SLOT_SET || out.pts[i].op == RTL_PRIM_BUFFER_APPEND ||
		    out.pts[i].op == RTL_PRIM_COUNTDOWN) {
			err = -EINVAL;
			*why = "its plan uses timers, the signal slot, the trace buffer or the countdown but the "
			       "collector does not set timers";
		}
	probe_plan_free(&out);
	return err;
}

int probe_plan_build(const struct probe_set *set, const struct rtl_function_cfg *rcfg,
		     const char *module, const char *name, uint64_t bias, struct probe_plan *out)
{
	out->n = 0;
	if (!set->n)
		return 0;
	struct rtl_cfg_block *blocks = malloc((rcfg->nblocks + 1) * sizeof(*blocks));
	if (!blocks)
		return -ENOMEM;
	for (size_t b = 0; b < rcfg->nblocks; b++) {
		blocks[b] = rcfg->blocks[b];
		blocks[b].addr -= bias;
		blocks[b].last -= bias;
		if (blocks[b].target)
			blocks[b].target -= bias;
	}
	struct rtl_function_cfg cfg = { module, name, rcfg->addr - bias, rcfg->size, blocks, rcfg->nblocks };
	struct rtl_plan plan = { &cfg, bias, out };
	int err = 0;
	for (size_t i = 0; i < set->n && !err; i++)
		if (set->cs[i]->plan)
			err = set->cs[i]->plan(&cfg, &plan);
	free(blocks);
	probe_plan_finish(out);
	return err;
}
