/* probe: the collector of a probe program (probe/lang.h, docs/probe.md).
 *
 * Each clause becomes, at each function its points match, snippets with
 * ids of their own behind its predicates: a counter per count() at the
 * entry or at every return, the function's timer for a time() (numbered
 * by the action, so every function of the clause shares it). Functions
 * that onstack(F) names get a timer of their own group, started without a
 * predicate: the predicate reads its open frames. At the end the counters
 * and timers are summed per aggregation. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <reticle/binary.h>
#include <reticle/collector.h>
#include "collectors/builtin.h"
#include "collectors/probe.h"
#include "probe/lang.h"
#include "util/hash.h"
#include "util/log.h"

struct func_count {
	char *name;
	uint64_t count;
};

struct thread_time {
	const void *image;        /* the profile of its process image */
	int tid;
	uint64_t calls;
	double inclusive, exclusive;
};

struct result {
	uint64_t count;
	struct func_count *byf;
	size_t nbyf;
	struct thread_time *times;
	size_t ntimes;
};

struct symbols {
	char *module;
	rtl_binary *bin;          /* NULL: it could not be read */
};

static struct {
	struct probe_prog prog;
	bool loaded;
	char key[17];
	struct result *res;       /* per aggregation */
	pthread_mutex_t lock;     /* plan() may run on another thread */
	struct symbols *mods;
	size_t nmods;
	char **warned;
	size_t nwarned;
} st = { .lock = PTHREAD_MUTEX_INITIALIZER };

/* Says WHAT once per run (under the lock). */
static void warn_once(const char *what)
{
	for (size_t i = 0; i < st.nwarned; i++)
		if (!strcmp(st.warned[i], what))
			return;
	char **w = realloc(st.warned, (st.nwarned + 1) * sizeof(*w));
	if (!w)
		return;
	st.warned = w;
	if ((w[st.nwarned] = strdup(what)))
		st.nwarned++;
	rtl_warn("probe: %s", what);
}

struct sym_find {
	const char *name;
	const rtl_symbol *found;
};

static int sym_match(const rtl_symbol *s, void *user)
{
	struct sym_find *f = user;
	if (strcmp(s->name, f->name) || !s->addr || s->type == 2 /* STT_FUNC */)
		return 0;
	f->found = s;
	return 1;
}

/* The global NAME of MODULE: its link-time address and size (under the
 * lock). */
static bool global_of(const char *module, const char *name, uint64_t *addr, uint64_t *size)
{
	struct symbols *m = NULL;
	for (size_t i = 0; i < st.nmods && !m; i++)
		if (!strcmp(st.mods[i].module, module))
			m = &st.mods[i];
	if (!m) {
		struct symbols *a = realloc(st.mods, (st.nmods + 1) * sizeof(*a));
		if (!a)
			return false;
		st.mods = a;
		m = &a[st.nmods];
		if (!(m->module = strdup(module)))
			return false;
		st.nmods++;
		if (rtl_binary_open(module, &m->bin))
			m->bin = NULL;
	}
	struct sym_find f = { name, NULL };
	if (!m->bin || rtl_binary_foreach_symbol(m->bin, sym_match, &f) != 1)
		return false;
	*addr = f.found->addr;
	*size = f.found->size;
	return true;
}

/* C's predicates for a function of MODULE in Q; false (and a warning)
 * when a variable it reads is not in MODULE. */
static bool resolve(const struct probe_clause *c, const char *module, struct rtl_predicate *q)
{
	bool ok = true;
	pthread_mutex_lock(&st.lock);
	for (size_t i = 0; i < c->ntests; i++) {
		q[i] = c->tests[i].q;
		if (q[i].operand != RTL_OPND_GLOBAL)
			continue;
		uint64_t addr, size;
		if (!global_of(module, c->tests[i].symbol, &addr, &size)) {
			char msg[512];
			snprintf(msg, sizeof(msg), "line %d: no variable '%s' in %s: its clause leaves that module's "
				 "functions out", c->line, c->tests[i].symbol, module);
			warn_once(msg);
			ok = false;
			break;
		}
		q[i].where = addr;
		if (!c->tests[i].typed && (size == 1 || size == 2 || size == 4))
			q[i].size = (uint8_t)size;
	}
	pthread_mutex_unlock(&st.lock);
	return ok;
}

static bool matches(const struct probe_clause *c, bool exit_, const char *module, const char *name)
{
	for (size_t i = 0; i < c->npts; i++)
		if (c->pts[i].exit == exit_ && probe_point_matches(&c->pts[i], module, name))
			return true;
	return false;
}

static bool cold_part(const char *name)
{
	const char *cold = name ? strstr(name, ".cold") : NULL;
	return cold && (!cold[5] || (cold[5] == '.' && cold[6] >= '0' && cold[6] <= '9'));
}

/* The function's numbered timers: each onstack group's that names it
 * (started always), each time() clause's that enters it (behind its
 * predicate); all stopped at its returns. */
static int plan_timers(const struct rtl_function_cfg *cfg, rtl_plan *plan)
{
	bool timed = false;
	int err = 0;
	for (size_t i = 0; i < st.prog.nonstack && !err; i++)
		if (probe_onstack_matches(&st.prog, i, cfg->name)) {
			struct rtl_snippet start = { .op = RTL_PRIM_TIMER_START, .id = st.prog.onstack_timer[i] };
			timed = true;
			/* a cold part runs inside its function's frame: no frame of its own */
			if (!cold_part(cfg->name))
				err = rtl_plan_add(plan, RTL_POINT_ENTRY, cfg->addr, &start);
		}
	for (size_t i = 0; i < st.prog.ncl && !err; i++) {
		const struct probe_clause *c = &st.prog.cl[i];
		struct rtl_predicate q[RTL_MAX_PREDICATES];
		for (size_t k = 0; k < c->nacts && !err; k++) {
			if (st.prog.aggs[c->acts[k].agg].kind != PROBE_TIME || !matches(c, false, cfg->module, cfg->name) ||
			    !resolve(c, cfg->module, q))
				continue;
			struct rtl_snippet start = { .op = RTL_PRIM_TIMER_START, .id = c->acts[k].id, .pred = q,
						     .npred = c->ntests };
			timed = true;
			if (!cold_part(cfg->name))
				err = rtl_plan_add(plan, RTL_POINT_ENTRY, cfg->addr, &start);
		}
	}
	static const struct rtl_snippet stop = { .op = RTL_PRIM_TIMER_STOP };
	for (size_t b = 0; b < cfg->nblocks && timed && !err; b++)
		if (cfg->blocks[b].end == RTL_END_RETURN)
			err = rtl_plan_add(plan, RTL_POINT_EXIT, cfg->blocks[b].last, &stop);
	return err;
}

static int probe_plan(const struct rtl_function_cfg *cfg, rtl_plan *plan)
{
	if (!st.loaded || !cfg->name)
		return 0;
	int err = plan_timers(cfg, plan);
	for (size_t i = 0; i < st.prog.ncl && !err; i++) {
		const struct probe_clause *c = &st.prog.cl[i];
		bool at_entry = matches(c, false, cfg->module, cfg->name),
		     at_exit = matches(c, true, cfg->module, cfg->name);
		struct rtl_predicate q[RTL_MAX_PREDICATES];
		if ((!at_entry && !at_exit) || !resolve(c, cfg->module, q))
			continue;
		for (size_t k = 0; k < c->nacts && !err; k++) {
			if (st.prog.aggs[c->acts[k].agg].kind != PROBE_COUNT)
				continue;
			struct rtl_snippet s = { .op = RTL_PRIM_COUNT, .id = c->acts[k].id, .pred = q,
						 .npred = c->ntests };
			if (at_entry)
				err = rtl_plan_add(plan, RTL_POINT_ENTRY, cfg->addr, &s);
			for (size_t b = 0; b < cfg->nblocks && at_exit && !err; b++)
				if (cfg->blocks[b].end == RTL_END_RETURN)
					err = rtl_plan_add(plan, RTL_POINT_EXIT, cfg->blocks[b].last, &s);
		}
	}
	return err;
}

/* The aggregation of snippet ID, or NULL. */
static const struct probe_action *action_of(uint32_t id)
{
	for (size_t i = 0; i < st.prog.ncl; i++)
		for (size_t k = 0; k < st.prog.cl[i].nacts; k++)
			if (st.prog.cl[i].acts[k].id == id)
				return &st.prog.cl[i].acts[k];
	return NULL;
}

static int add_by_func(struct result *r, const char *name, uint64_t v)
{
	for (size_t i = 0; i < r->nbyf; i++)
		if (!strcmp(r->byf[i].name, name)) {
			r->byf[i].count += v;
			return 0;
		}
	struct func_count *a = realloc(r->byf, (r->nbyf + 1) * sizeof(*a));
	if (!a)
		return -ENOMEM;
	r->byf = a;
	if (!(a[r->nbyf].name = strdup(name)))
		return -ENOMEM;
	a[r->nbyf++].count = v;
	return 0;
}

static int add_time(struct result *r, const void *image, const struct rtl_timer_view *t)
{
	struct thread_time *a = realloc(r->times, (r->ntimes + 1) * sizeof(*a));
	if (!a)
		return -ENOMEM;
	r->times = a;
	a[r->ntimes++] = (struct thread_time){ image, t->tid, t->calls, t->inclusive, t->exclusive };
	return 0;
}

static int probe_finish(const struct rtl_function_view *f, rtl_profile *p)
{
	int err = 0;
	for (size_t i = 0; i < f->ncounters && !err; i++) {
		const struct rtl_counter_view *v = &f->counters[i];
		const struct probe_action *a = v->id ? action_of(v->id) : NULL;
		if (!a || !v->value)
			continue;
		const struct probe_agg *g = &st.prog.aggs[a->agg];
		struct result *r = &st.res[a->agg];
		r->count += v->value;
		if (g->by_func)
			err = add_by_func(r, f->name ? f->name : "?", v->value);
		char metric[300];
		snprintf(metric, sizeof(metric), "@%s", g->name);
		if (!err)
			err = rtl_profile_add_metric(p, f->id, metric, f->addr, (double)v->value);
	}
	return err;
}

static int probe_finish_image(const struct rtl_image_view *v, rtl_profile *p)
{
	int err = 0;
	for (size_t i = 0; i < v->ntimers && !err; i++) {
		const struct probe_action *a = action_of(v->timers[i].id);
		if (a && st.prog.aggs[a->agg].kind == PROBE_TIME)
			err = add_time(&st.res[a->agg], p, &v->timers[i]);
	}
	return err;
}

static const struct rtl_collector collector_probe = {
	.name = "probe",
	.summary = "a probe program's aggregations (reticle probe)",
	.plan = probe_plan,
	.finish = probe_finish,
	.timers = true,
	.plan_key = st.key,
	.finish_image = probe_finish_image,
};

int probe_collector_load(const char *text, char *err, size_t len)
{
	probe_collector_unload();
	int rc = probe_parse(text, &st.prog, err, len);
	if (rc)
		return rc;
	st.res = calloc(st.prog.naggs ? st.prog.naggs : 1, sizeof(*st.res));
	if (!st.res) {
		probe_prog_free(&st.prog);
		snprintf(err, len, "out of memory");
		return -ENOMEM;
	}
	snprintf(st.key, sizeof(st.key), "%016llx",
		 (unsigned long long)fnv1a(FNV1A_INIT, text, strlen(text)));
	st.loaded = true;
	return 0;
}

const struct rtl_collector *probe_collector(void)
{
	return st.loaded ? &collector_probe : NULL;
}

static int by_count(const void *a, const void *b)
{
	const struct func_count *x = a, *y = b;
	if (x->count != y->count)
		return x->count < y->count ? 1 : -1;
	return strcmp(x->name, y->name);
}

void probe_collector_print(FILE *out)
{
	for (size_t i = 0; st.loaded && i < st.prog.naggs; i++) {
		const struct probe_agg *g = &st.prog.aggs[i];
		struct result *r = &st.res[i];
		if (g->kind == PROBE_TIME) {
			uint64_t calls = 0;
			double inc = 0, exc = 0;
			for (size_t k = 0; k < r->ntimes; k++) {
				calls += r->times[k].calls;
				inc += r->times[k].inclusive;
				exc += r->times[k].exclusive;
			}
			fprintf(out, "@%s: calls %llu, inclusive %.6f s, exclusive %.6f s", g->name,
				(unsigned long long)calls, inc, exc);
			if (r->ntimes > 1)
				fprintf(out, " (%zu threads)", r->ntimes);
			fputc('\n', out);
		} else if (g->by_func) {
			if (r->nbyf > 1)
				qsort(r->byf, r->nbyf, sizeof(*r->byf), by_count);
			if (!r->nbyf)
				fprintf(out, "@%s: (none)\n", g->name);
			for (size_t k = 0; k < r->nbyf; k++)
				fprintf(out, "@%s[%s]: %llu\n", g->name, r->byf[k].name,
					(unsigned long long)r->byf[k].count);
		} else {
			fprintf(out, "@%s: %llu\n", g->name, (unsigned long long)r->count);
		}
	}
}

void probe_collector_unload(void)
{
	if (st.res)
		for (size_t i = 0; i < st.prog.naggs; i++) {
			for (size_t k = 0; k < st.res[i].nbyf; k++)
				free(st.res[i].byf[k].name);
			free(st.res[i].byf);
			free(st.res[i].times);
		}
	free(st.res);
	st.res = NULL;
	probe_prog_free(&st.prog);
	for (size_t i = 0; i < st.nmods; i++) {
		free(st.mods[i].module);
		if (st.mods[i].bin)
			rtl_binary_close(st.mods[i].bin);
	}
	free(st.mods);
	st.mods = NULL;
	st.nmods = 0;
	for (size_t i = 0; i < st.nwarned; i++)
		free(st.warned[i]);
	free(st.warned);
	st.warned = NULL;
	st.nwarned = 0;
	st.loaded = false;
}
