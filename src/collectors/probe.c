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
#include <fnmatch.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <reticle/binary.h>
#include <reticle/collector.h>
#include <reticle/session.h>
#include "collectors/builtin.h"
#include "collectors/probe.h"
#include "probe/lang.h"
#include "probe/plan.h"
#include "util/hash.h"
#include "util/log.h"

struct keyed_count {
	char *name;               /* PROBE_KEY_FUNC */
	int64_t value;            /* PROBE_KEY_VALUE */
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
	struct keyed_count *byk;
	size_t nbyk;
	struct thread_time *times;
	size_t ntimes;
};

struct alias {
	uint64_t addr;
	const char *name;         /* the binary's */
};

struct symbols {
	char *module;
	rtl_binary *bin;          /* NULL: it could not be read */
	struct alias *funcs;      /* its function symbols by address (aliases side by side) */
	size_t nfuncs;
	bool listed;
	int go;                   /* a Go program (its functions take Go's register ABI): -1 not known yet */
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
	double tsc_hz;            /* the last image's: hist(latency)'s ticks to seconds */
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

/* MODULE's symbols, opened at the first question (under the lock). */
static struct symbols *module_symbols(const char *module)
{
	for (size_t i = 0; i < st.nmods; i++)
		if (!strcmp(st.mods[i].module, module))
			return &st.mods[i];
	struct symbols *a = realloc(st.mods, (st.nmods + 1) * sizeof(*a));
	if (!a)
		return NULL;
	st.mods = a;
	struct symbols *m = &a[st.nmods];
	*m = (struct symbols){ strdup(module), NULL, NULL, 0, false, -1 };
	if (!m->module)
		return NULL;
	st.nmods++;
	if (rtl_binary_open_image(module, &m->bin))
		m->bin = NULL;
	return m;
}

/* The global NAME of MODULE: its link-time address and size (under the
 * lock). */
static bool global_of(const char *module, const char *name, uint64_t *addr, uint64_t *size)
{
	struct symbols *m = module_symbols(module);
	struct sym_find f = { name, NULL };
	if (!m || !m->bin || rtl_binary_foreach_symbol(m->bin, sym_match, &f) != 1)
		return false;
	*addr = f.found->addr;
	*size = f.found->size;
	return true;
}

/* Go's ABIInternal: the integer arguments' registers (rax, rbx, rcx, rdi,
 * rsi, r8), where C's are rdi, rsi, rdx, rcx, r8, r9. */
static const uint8_t go_args[6] = { 0, 3, 1, 7, 6, 8 };

/* Whether function NAME of MODULE is Go code: a Go program's (its
 * runtime.buildVersion, or when stripped its Go sections) function with a
 * package in its name (its C functions, cgo's, take C's convention). Under
 * the lock. */
static bool go_function(const char *module, const char *name)
{
	struct symbols *m = module_symbols(module);
	if (m && m->go < 0) {
		uint64_t addr, size;
		m->go = global_of(module, "runtime.buildVersion", &addr, &size) ||
			(m->bin && rtl_binary_is_go(m->bin));
	}
	return m && m->go > 0 && name && strchr(name, '.');
}

/* T's operand for function NAME of MODULE (C's) in Q; false (and a
 * warning) when it reads a variable MODULE does not have. Under the lock. */
static bool resolve_test(const struct probe_clause *c, const struct probe_test *t, const char *module,
			 const char *name, struct rtl_predicate *q)
{
	*q = t->q;
	if (q->operand == RTL_OPND_ARG && go_function(module, name)) {
		q->operand = RTL_OPND_REG;
		q->index = go_args[q->index];
	}
	if (q->operand != RTL_OPND_GLOBAL)
		return true;
	uint64_t addr, size;
	if (!global_of(module, t->symbol, &addr, &size)) {
		char msg[512];
		snprintf(msg, sizeof(msg), "line %d: no variable '%s' in %s: its clause leaves that module's "
			 "functions out", c->line, t->symbol, module);
		warn_once(msg);
		return false;
	}
	q->where = addr;
	if (!t->typed && (size == 1 || size == 2 || size == 4))
		q->size = (uint8_t)size;
	return true;
}

/* C's predicates for function CFG in Q, and the keys of its actions in
 * KEYS (when not NULL); false when one cannot be read there. */
static bool resolve(const struct probe_clause *c, const struct rtl_function_cfg *cfg, struct rtl_predicate *q,
		    struct rtl_predicate *keys)
{
	bool ok = true;
	pthread_mutex_lock(&st.lock);
	for (size_t i = 0; i < c->ntests && ok; i++)
		ok = resolve_test(c, &c->tests[i], cfg->module, cfg->name, &q[i]);
	for (size_t k = 0; keys && k < c->nacts && ok; k++)
		if (c->acts[k].agg != SIZE_MAX && (st.prog.aggs[c->acts[k].agg].key == PROBE_KEY_VALUE ||
						  (st.prog.aggs[c->acts[k].agg].kind == PROBE_HIST && !c->acts[k].latency)))
			ok = resolve_test(c, &c->acts[k].key, cfg->module, cfg->name, &keys[k]);
	pthread_mutex_unlock(&st.lock);
	return ok;
}

static int list_func(const rtl_symbol *s, void *user)
{
	struct symbols *m = user;
	if ((s->type != 2 /* STT_FUNC */ && s->type != 10 /* STT_GNU_IFUNC */) || !s->addr)
		return 0;
	struct alias *a = realloc(m->funcs, (m->nfuncs + 1) * sizeof(*a));
	if (!a)
		return -1;
	m->funcs = a;
	a[m->nfuncs++] = (struct alias){ s->addr, s->name };
	return 0;
}

static int by_addr(const void *a, const void *b)
{
	const struct alias *x = a, *y = b;
	return (x->addr > y->addr) - (x->addr < y->addr);
}

/* M's function symbols, listed and sorted at the first question (under
 * the lock). */
static void list_funcs(struct symbols *m)
{
	if (!m->bin || m->listed)
		return;
	m->listed = true;
	rtl_binary_foreach_symbol(m->bin, list_func, m);
	if (m->nfuncs > 1)
		qsort(m->funcs, m->nfuncs, sizeof(*m->funcs), by_addr);
}

/* Whether PATTERN matches symbol NAME without its @VERSION. */
static bool symbol_matches(const char *pattern, const char *name)
{
	char plain[256];
	snprintf(plain, sizeof(plain), "%.*s", (int)strcspn(name, "@"), name);
	return probe_name_matches(pattern, plain);
}

/* Whether PATTERN matches another name of the function at link-time ADDR
 * of MODULE (libc's __mmap is also mmap and mmap64). */
static bool alias_matches(const char *pattern, const char *module, uint64_t addr)
{
	bool yes = false;
	pthread_mutex_lock(&st.lock);
	struct symbols *m = module_symbols(module);
	if (m)
		list_funcs(m);
	size_t lo = 0, hi = m ? m->nfuncs : 0;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (m->funcs[mid].addr < addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = lo; m && i < m->nfuncs && m->funcs[i].addr == addr && !yes; i++)
		yes = symbol_matches(pattern, m->funcs[i].name);
	pthread_mutex_unlock(&st.lock);
	return yes;
}

/* Whether POINT names function CFG: its name, or another it has. */
static bool point_names(const struct probe_point *pt, const struct rtl_function_cfg *cfg)
{
	if (probe_point_matches(pt, cfg->module, cfg->name))
		return true;
	struct probe_point any_name = *pt;
	any_name.func = "*";
	return probe_point_matches(&any_name, cfg->module, cfg->name) && alias_matches(pt->func, cfg->module, cfg->addr);
}

static bool matches(const struct probe_clause *c, bool exit_, const struct rtl_function_cfg *cfg)
{
	bool any = false;
	for (size_t i = 0; i < c->npts; i++)
		if (c->pts[i].exit == exit_ && point_names(&c->pts[i], cfg)) {
			__atomic_store_n(&c->pts[i].matched, true, __ATOMIC_RELAXED);
			any = true;
		}
	return any;
}

/* The function's numbered timers: each onstack group's that names it
 * (started always), each time() clause's that enters it (behind its
 * predicate); all stopped at its returns. */
static int plan_timers(const struct rtl_function_cfg *cfg, rtl_plan *plan)
{
	bool timed = false;
	int err = 0;
	for (size_t i = 0; i < st.prog.nonstack && !err; i++) {
		char buf[512];
		struct probe_point pt = probe_onstack_point(&st.prog, i, buf, sizeof(buf));
		if (point_names(&pt, cfg)) {
			struct rtl_snippet start = { .op = RTL_PRIM_TIMER_START, .id = st.prog.onstack_timer[i] };
			timed = true;
			/* a cold part runs inside its function's frame: no frame of its own */
			if (!probe_cold_part(cfg->name))
				err = rtl_plan_add(plan, RTL_POINT_ENTRY, cfg->addr, &start);
		}
	}
	for (size_t i = 0; i < st.prog.ncl && !err; i++) {
		const struct probe_clause *c = &st.prog.cl[i];
		struct rtl_predicate q[RTL_MAX_PREDICATES];
		for (size_t k = 0; k < c->nacts && !err && !c->removed; k++) {
			if (c->acts[k].agg == SIZE_MAX)
				continue;   /* a printf() */
			enum probe_agg_kind kind = st.prog.aggs[c->acts[k].agg].kind;
			if ((kind != PROBE_TIME && !(kind == PROBE_HIST && c->acts[k].latency)) ||
			    !matches(c, false, cfg) || !resolve(c, cfg, q, NULL))
				continue;
			struct rtl_snippet start = { .op = RTL_PRIM_TIMER_START, .id = c->acts[k].id, .pred = q,
						     .npred = c->ntests };
			timed = true;
			if (!probe_cold_part(cfg->name))
				err = rtl_plan_add(plan, RTL_POINT_ENTRY, cfg->addr, &start);
		}
	}
	static const struct rtl_snippet stop = { .op = RTL_PRIM_TIMER_STOP };
	for (size_t b = 0; b < cfg->nblocks && timed && !err; b++)
		if (cfg->blocks[b].end == RTL_END_RETURN)
			err = rtl_plan_add(plan, RTL_POINT_EXIT, cfg->blocks[b].last, &stop);
	return err;
}

/* hist(latency): at each return, the ticks since the entry of the frame
 * timer ID pushed (when its predicate held there), by power of two. */
static int plan_latency(const struct rtl_function_cfg *cfg, rtl_plan *plan, uint32_t id)
{
	const struct rtl_predicate key = { .operand = RTL_OPND_LATENCY, .size = 8, .where = id, .log2 = true };
	const struct rtl_predicate framed = { .operand = RTL_OPND_LATENCY, .size = 8, .where = id,
					      .cmp = RTL_CMP_GE, .value = 0 };
	struct rtl_snippet s = { .op = RTL_PRIM_COUNT_BY, .id = id, .pred = &framed, .npred = 1, .key = &key };
	int err = 0;
	for (size_t b = 0; b < cfg->nblocks && !err; b++)
		if (cfg->blocks[b].end == RTL_END_RETURN)
			err = rtl_plan_add(plan, RTL_POINT_EXIT, cfg->blocks[b].last, &s);
	return err;
}

static int probe_plan(const struct rtl_function_cfg *cfg, rtl_plan *plan)
{
	if (!st.loaded || !cfg->name)
		return 0;
	int err = plan_timers(cfg, plan);
	for (size_t i = 0; i < st.prog.ncl && !err; i++) {
		const struct probe_clause *c = &st.prog.cl[i];
		if (c->removed)
			continue;
		bool at_entry = matches(c, false, cfg), at_exit = matches(c, true, cfg);
		struct rtl_predicate q[RTL_MAX_PREDICATES], *keys = calloc(c->nacts, sizeof(*keys));
		if (!keys)
			return -ENOMEM;
		if ((!at_entry && !at_exit) || !resolve(c, cfg, q, keys)) {
			free(keys);
			continue;
		}
		for (size_t k = 0; k < c->nacts && !err; k++) {
			if (c->acts[k].agg == SIZE_MAX) {   /* printf(): reticle prints at each hit */
				struct rtl_snippet s = { .op = RTL_PRIM_CALL, .id = c->acts[k].id, .pred = q,
							 .npred = c->ntests };
				if (at_entry)
					err = rtl_plan_add(plan, RTL_POINT_ENTRY, cfg->addr, &s);
				for (size_t b = 0; b < cfg->nblocks && at_exit && !err; b++)
					if (cfg->blocks[b].end == RTL_END_RETURN)
						err = rtl_plan_add(plan, RTL_POINT_EXIT, cfg->blocks[b].last, &s);
				continue;
			}
			const struct probe_agg *g = &st.prog.aggs[c->acts[k].agg];
			if (g->kind == PROBE_TIME)
				continue;
			if (g->kind == PROBE_HIST && c->acts[k].latency) {
				if (at_entry && !probe_cold_part(cfg->name))
					err = plan_latency(cfg, plan, c->acts[k].id);
				continue;
			}
			bool keyed = g->key == PROBE_KEY_VALUE || g->kind == PROBE_HIST;
			struct rtl_snippet s = { .op = keyed ? RTL_PRIM_COUNT_BY : RTL_PRIM_COUNT,
						 .id = c->acts[k].id, .pred = q, .npred = c->ntests,
						 .key = keyed ? &keys[k] : NULL };
			if (at_entry)
				err = rtl_plan_add(plan, RTL_POINT_ENTRY, cfg->addr, &s);
			for (size_t b = 0; b < cfg->nblocks && at_exit && !err; b++)
				if (cfg->blocks[b].end == RTL_END_RETURN)
					err = rtl_plan_add(plan, RTL_POINT_EXIT, cfg->blocks[b].last, &s);
		}
		free(keys);
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

/* printf()'s lines go where the aggregations go (reticle probe -r). */
static FILE *print_out;

void probe_collector_set_output(FILE *out)
{
	print_out = out;
}

/* Operand T's value in EV, read at its size (a cast: sign-extended unless
 * unsigned). */
static int64_t fmt_value(const struct probe_test *t, const struct rtl_call_event *ev)
{
	int64_t v = t->q.operand == RTL_OPND_RETVAL ? ev->retval : ev->args[t->q.index < 6 ? t->q.index : 0];
	unsigned bits = t->q.size ? t->q.size * 8u : 64u;
	if (bits < 64) {
		uint64_t mask = (1ull << bits) - 1, u = (uint64_t)v & mask;
		v = t->q.is_unsigned || !(u >> (bits - 1)) ? (int64_t)u : (int64_t)(u | ~mask);
	}
	return v;
}

/* The string at ADDR in process PID (at most LEN - 1 bytes). */
static void read_string(pid_t pid, uint64_t addr, char *buf, size_t len)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/mem", (int)pid);
	FILE *f = addr ? fopen(path, "re") : NULL;
	size_t n = 0;
	if (f && !fseeko(f, (off_t)addr, SEEK_SET))
		n = fread(buf, 1, len - 1, f);
	if (f)
		fclose(f);
	if (!n) {
		snprintf(buf, len, "(unreadable %#llx)", (unsigned long long)addr);
		return;
	}
	buf[n] = 0;
}

/* One printf() line of action A for the hit EV. */
static void print_line(const struct probe_action *a, const struct rtl_call_event *ev)
{
	char line[4096], spec[32], str[512];
	size_t n = 0, arg = 0;
	for (const char *f = a->fmt; *f && n < sizeof(line) - 1; f++) {
		if (*f != '%' || f[1] == '%') {
			line[n++] = *f;
			f += *f == '%';
			continue;
		}
		/* the spec up to its conversion, its length modifier made 'll' */
		size_t k = 0;
		spec[k++] = *f++;
		while (*f && strchr("-+ #0123456789.", *f) && k < sizeof(spec) - 4)
			spec[k++] = *f++;
		f += strspn(f, "hljzt");
		char conv = *f;
		if (!conv)
			break;
		int w = 0;
		size_t room = sizeof(line) - n;
		const struct probe_test *t = &a->fargs[arg];
		uint8_t kind = arg < a->nfargs ? a->fkind[arg] : PROBE_FMT_VALUE;
		arg++;
		if (conv == 's') {
			spec[k++] = 's';
			spec[k] = 0;
			if (kind == PROBE_FMT_FUNC) {
				char *d = ev->name ? rtl_demangle(ev->name) : NULL;
				snprintf(str, sizeof(str), "%s", d ? d : ev->name ? ev->name : "?");
				free(d);
			} else {
				read_string(ev->pid, (uint64_t)fmt_value(t, ev), str, sizeof(str));
			}
			w = snprintf(line + n, room, spec, str);
		} else {
			int64_t v = kind == PROBE_FMT_TID ? ev->tid : kind == PROBE_FMT_PID ? ev->pid : fmt_value(t, ev);
			if (conv == 'c' || conv == 'p') {
				spec[k++] = conv;
				spec[k] = 0;
				w = conv == 'c' ? snprintf(line + n, room, spec, (int)v)
						: snprintf(line + n, room, spec, (void *)(uintptr_t)v);
			} else {
				spec[k++] = 'l';
				spec[k++] = 'l';
				spec[k++] = conv;
				spec[k] = 0;
				w = snprintf(line + n, room, spec, (long long)v);
			}
		}
		n += w > 0 ? ((size_t)w < room ? (size_t)w : room - 1) : 0;
	}
	line[n] = 0;
	FILE *out = print_out ? print_out : stdout;
	fputs(line, out);
	fflush(out);
}

static const struct probe_action *action_of(uint32_t id);

static void probe_on_call(const struct rtl_call_event *ev)
{
	pthread_mutex_lock(&st.lock);
	const struct probe_action *a = action_of(ev->id);
	if (a && a->agg == SIZE_MAX)
		print_line(a, ev);
	pthread_mutex_unlock(&st.lock);
}

/* Adds V to the count of key NAME (a function's) or VALUE (NAME NULL). */
/* A function's key as people read it: C++ and Rust names demangled, as
 * c++filt prints them. */
static int add_func_keyed(struct result *r, const char *name, uint64_t v);

static int add_keyed(struct result *r, const char *name, int64_t value, uint64_t v)
{
	for (size_t i = 0; i < r->nbyk; i++)
		if (name ? r->byk[i].name && !strcmp(r->byk[i].name, name) : r->byk[i].value == value) {
			r->byk[i].count += v;
			return 0;
		}
	struct keyed_count *a = realloc(r->byk, (r->nbyk + 1) * sizeof(*a));
	if (!a)
		return -ENOMEM;
	r->byk = a;
	a[r->nbyk] = (struct keyed_count){ name ? strdup(name) : NULL, value, v };
	if (name && !a[r->nbyk].name)
		return -ENOMEM;
	r->nbyk++;
	return 0;
}

static int add_func_keyed(struct result *r, const char *name, uint64_t v)
{
	char *d = name ? rtl_demangle(name) : NULL;
	int err = add_keyed(r, d ? d : name ? name : "?", 0, v);
	free(d);
	return err;
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
		if (g->key == PROBE_KEY_FUNC)
			err = add_func_keyed(r, f->name, v->value);
		char metric[300];
		snprintf(metric, sizeof(metric), "@%s", g->name);
		if (!err)
			err = rtl_profile_add_metric(p, f->id, metric, f->addr, (double)v->value);
	}
	for (size_t i = 0; i < f->nkeys && !err; i++) {
		const struct rtl_key_view *k = &f->keys[i];
		const struct probe_action *a = action_of(k->id);
		if (a)
			err = add_keyed(&st.res[a->agg], NULL, k->key, k->count);
		char metric[300];
		if (!err && a) {
			snprintf(metric, sizeof(metric), "@%s[%lld]", st.prog.aggs[a->agg].name, (long long)k->key);
			err = rtl_profile_add_metric(p, f->id, metric, f->addr, (double)k->count);
		}
	}
	return err;
}

static int probe_finish_image(const struct rtl_image_view *v, rtl_profile *p)
{
	int err = 0;
	if (v->tsc_hz > 0)
		st.tsc_hz = v->tsc_hz;
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
	.on_call = probe_on_call,
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

/* Whether a function of binary M's is named by PATTERN: its symbols
 * first (cheap), then the functions reticle finds (debug files, ...). */
static bool module_has(struct symbols *m, const char *pattern)
{
	list_funcs(m);
	for (size_t i = 0; i < m->nfuncs; i++)
		if (symbol_matches(pattern, m->funcs[i].name))
			return true;
	rtl_binary *bin;
	bool yes = false;
	if (rtl_binary_open(m->module, &bin))
		return false;
	for (size_t i = 0; i < rtl_binary_function_count(bin) && !yes; i++)
		yes = probe_name_matches(pattern, rtl_binary_function(bin, i)->name);
	rtl_binary_close(bin);
	return yes;
}

/* Whether FUNC (in modules matching MODULE, NULL: any) names a function
 * of MODULES; *NONE: no module of them matches MODULE. */
static bool some_module_has(char *const *modules, size_t n, const char *module, const char *func, bool *none)
{
	*none = true;
	for (size_t i = 0; i < n; i++) {
		struct probe_point pt = { false, (char *)module, (char *)"*", false };
		if (!probe_point_matches(&pt, modules[i], "x"))
			continue;
		*none = false;
		struct symbols *m = module_symbols(modules[i]);
		if (m && module_has(m, func))
			return true;
	}
	return false;
}

/* probe_collector_check for the clauses from FROM on, and the onstack
 * patterns from ONSTACK on. */
static int check_from(const struct probe_mark *from, char *const *modules, size_t n, const char *what, char *err,
		      size_t len)
{
	int rc = 0;
	bool none;
	pthread_mutex_lock(&st.lock);
	for (size_t i = from->ncl; i < st.prog.ncl && !rc; i++)
		for (size_t k = 0; k < st.prog.cl[i].npts && !rc; k++) {
			const struct probe_point *pt = &st.prog.cl[i].pts[k];
			if (some_module_has(modules, n, pt->module, pt->func, &none) || (pt->module && none))
				continue;
			if (pt->module)
				snprintf(err, len, "line %d: no function of %s in %s matches '%s'", st.prog.cl[i].line,
					 pt->module, what, pt->func);
			else
				snprintf(err, len, "line %d: no function of %s matches '%s' (one loaded later: "
					 "write %s:MODULE:%s)", st.prog.cl[i].line, what, pt->func,
					 pt->exit ? "exit" : "entry", pt->func);
			rc = -ENOENT;
		}
	for (size_t i = from->nonstack; i < st.prog.nonstack && !rc; i++) {
		char buf[512];
		struct probe_point pt = probe_onstack_point(&st.prog, i, buf, sizeof(buf));
		if (some_module_has(modules, n, pt.module, pt.func, &none) || (pt.module && none))
			continue;
		snprintf(err, len, "onstack(%s): no function of %s matches it%s", st.prog.onstack[i], what,
			 pt.module ? "" : " (one loaded later: write onstack(MODULE:F))");
		rc = -ENOENT;
	}
	pthread_mutex_unlock(&st.lock);
	return rc;
}

int probe_collector_check(char *const *modules, size_t n, const char *what, char *err, size_t len)
{
	const struct probe_mark all = { 0 };
	return check_from(&all, modules, n, what, err, len);
}

/* Whether clause C names function NAME at link-time ADDR of MODULE: a
 * point, or an onstack() of its predicate (whose functions get a timer). */
static bool clause_names(const struct probe_clause *c, const char *module, const char *name, uint64_t addr)
{
	struct rtl_function_cfg cfg = { module, name, addr, 0, NULL, 0 };
	for (size_t i = 0; i < c->npts; i++)
		if (point_names(&c->pts[i], &cfg))
			return true;
	for (size_t i = 0; i < c->ntests; i++) {
		char buf[512];
		struct probe_point pt = probe_onstack_point(&st.prog, c->tests[i].onstack, buf, sizeof(buf));
		if (c->tests[i].q.operand == RTL_OPND_ONSTACK && point_names(&pt, &cfg))
			return true;
	}
	return false;
}

struct changed {
	size_t from, to;          /* the clauses added or removed */
};

static bool changed_names(const char *module, const char *name, uint64_t addr, void *ctx)
{
	const struct changed *ch = ctx;
	for (size_t i = ch->from; i < ch->to; i++)
		if (clause_names(&st.prog.cl[i], module, name, addr))
			return true;
	return false;
}

int probe_collector_add(rtl_session *s, const char *text, char *const *modules, size_t nmodules, const char *what,
			char *msg, size_t len)
{
	struct probe_mark mark = probe_prog_mark(&st.prog);
	size_t ncl = st.prog.ncl, naggs = st.prog.naggs;
	int err = probe_parse_more(text, &st.prog, msg, len);
	if (!err && nmodules && (err = check_from(&mark, modules, nmodules, what, msg, len)))
		probe_prog_truncate(&st.prog, &mark);
	if (err)
		return err;
	struct result *res = realloc(st.res, (st.prog.naggs ? st.prog.naggs : 1) * sizeof(*res));
	if (!res) {
		snprintf(msg, len, "out of memory");
		return -ENOMEM;
	}
	memset(res + naggs, 0, (st.prog.naggs - naggs) * sizeof(*res));
	st.res = res;
	struct changed ch = { ncl, st.prog.ncl };
	long made = rtl_session_reinstrument(s, changed_names, &ch);
	int n = snprintf(msg, len, "added");
	for (size_t i = ncl; i < st.prog.ncl && n >= 0 && (size_t)n < len; i++)
		n += snprintf(msg + n, len - (size_t)n, " %zu", i + 1);
	if (n >= 0 && (size_t)n < len)
		snprintf(msg + n, len - (size_t)n, " (%ld functions that ran made again)", made < 0 ? 0 : made);
	return 0;
}

static bool removed_names(const char *module, const char *name, uint64_t addr, void *ctx)
{
	(void)ctx;
	for (size_t i = 0; i < st.prog.ncl; i++)
		if (st.prog.cl[i].removing && clause_names(&st.prog.cl[i], module, name, addr))
			return true;
	return false;
}

int probe_collector_remove(rtl_session *s, const size_t *ids, size_t n, char *msg, size_t len)
{
	for (size_t i = 0; i < n; i++)
		if (!ids[i] || ids[i] > st.prog.ncl || st.prog.cl[ids[i] - 1].removed) {
			snprintf(msg, len, "no clause %zu in the program", ids[i]);
			return -ENOENT;
		}
	for (size_t i = 0; i < n; i++)
		st.prog.cl[ids[i] - 1].removed = st.prog.cl[ids[i] - 1].removing = true;
	long made = rtl_session_reinstrument(s, removed_names, NULL);
	for (size_t i = 0; i < n; i++)
		st.prog.cl[ids[i] - 1].removing = false;
	int k = snprintf(msg, len, "removed");
	for (size_t i = 0; i < n && k >= 0 && (size_t)k < len; i++)
		k += snprintf(msg + k, len - (size_t)k, " %zu", ids[i]);
	if (k >= 0 && (size_t)k < len)
		snprintf(msg + k, len - (size_t)k, " (%ld functions made again)", made < 0 ? 0 : made);
	return 0;
}

void probe_collector_list(FILE *out)
{
	for (size_t i = 0; st.loaded && i < st.prog.ncl; i++)
		fprintf(out, "%zu%s\t%s\n", i + 1, st.prog.cl[i].removed ? " (removed)" : "", st.prog.cl[i].text);
}

const struct rtl_collector *probe_collector(void)
{
	return st.loaded ? &collector_probe : NULL;
}

static int by_value(const void *a, const void *b)
{
	const struct keyed_count *x = a, *y = b;
	return (x->value > y->value) - (x->value < y->value);
}

/* A time as a short string: 850ns, 1.2us, 35ms, 2.1s. */
static const char *fmt_time(double s, char *buf, size_t len)
{
	static const struct { double unit; const char *name; } units[] = {
		{ 1, "s" }, { 1e-3, "ms" }, { 1e-6, "us" }, { 1e-9, "ns" },
	};
	size_t u = 0;
	while (u + 1 < sizeof(units) / sizeof(*units) && s < units[u].unit)
		u++;
	double v = s / units[u].unit;
	snprintf(buf, len, v < 10 ? "%.1f%s" : "%.0f%s", v, units[u].name);
	return buf;
}

/* A histogram as bpftrace draws one: a row per power of two that counted,
 * its bounds (as times with LATENCY), count and bar. */
static void print_hist(FILE *out, const char *name, struct result *r, bool latency)
{
	fprintf(out, "@%s:\n", name);
	if (!r->nbyk) {
		fprintf(out, "  (none)\n");
		return;
	}
	qsort(r->byk, r->nbyk, sizeof(*r->byk), by_value);
	uint64_t max = 1;
	for (size_t k = 0; k < r->nbyk; k++)
		max = r->byk[k].count > max ? r->byk[k].count : max;
	double hz = st.tsc_hz > 0 ? st.tsc_hz : 1e9;
	for (size_t k = 0; k < r->nbyk; k++) {
		int64_t b = r->byk[k].value;
		char range[64], lo[24], hi[24];
		if (b < 0)
			snprintf(range, sizeof(range), "(..., 0)");
		else if (b == 0)
			snprintf(range, sizeof(range), "[0]");
		else if (latency)
			snprintf(range, sizeof(range), "[%s, %s)", fmt_time((double)(1ull << (b - 1)) / hz, lo, sizeof(lo)),
				 fmt_time((double)(1ull << (b < 63 ? b : 63)) / hz, hi, sizeof(hi)));
		else if (b == 1)
			snprintf(range, sizeof(range), "[1]");
		else
			snprintf(range, sizeof(range), "[%llu, %llu)", 1ull << (b - 1), 1ull << (b < 63 ? b : 63));
		int bar = (int)(40.0 * (double)r->byk[k].count / (double)max + 0.5);
		fprintf(out, "%-20s %10llu |%-40.*s|\n", range, (unsigned long long)r->byk[k].count, bar,
			"@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@");
	}
}

static int by_count(const void *a, const void *b)
{
	const struct keyed_count *x = a, *y = b;
	if (x->count != y->count)
		return x->count < y->count ? 1 : -1;
	if (x->name && y->name)
		return strcmp(x->name, y->name);
	return (x->value > y->value) - (x->value < y->value);
}

/* The aggregations of RES (one per aggregation of the program); LIVE:
 * while the program runs, times without their exclusive part. */
static void print_results(FILE *out, struct result *res, bool live)
{
	for (size_t i = 0; st.loaded && i < st.prog.naggs; i++) {
		const struct probe_agg *g = &st.prog.aggs[i];
		struct result *r = &res[i];
		if (g->kind == PROBE_TIME && live) {
			uint64_t calls = 0;
			double inc = 0;
			for (size_t k = 0; k < r->ntimes; k++) {
				calls += r->times[k].calls;
				inc += r->times[k].inclusive;
			}
			fprintf(out, "@%s: calls %llu, inclusive %.6f s (frames closed so far)\n", g->name,
				(unsigned long long)calls, inc);
		} else if (g->kind == PROBE_TIME) {
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
		} else if (g->kind == PROBE_HIST) {
			bool latency = false;
			for (size_t c = 0; c < st.prog.ncl; c++)
				for (size_t k = 0; k < st.prog.cl[c].nacts; k++)
					latency |= st.prog.cl[c].acts[k].agg == i && st.prog.cl[c].acts[k].latency;
			print_hist(out, g->name, r, latency);
		} else if (g->key != PROBE_KEY_NONE) {
			if (r->nbyk > 1)
				qsort(r->byk, r->nbyk, sizeof(*r->byk), by_count);
			if (!r->nbyk)
				fprintf(out, "@%s: (none)\n", g->name);
			for (size_t k = 0; k < r->nbyk; k++) {
				if (r->byk[k].name)
					fprintf(out, "@%s[%s]: %llu\n", g->name, r->byk[k].name,
						(unsigned long long)r->byk[k].count);
				else
					fprintf(out, "@%s[%lld]: %llu\n", g->name, (long long)r->byk[k].value,
						(unsigned long long)r->byk[k].count);
			}
		} else {
			fprintf(out, "@%s: %llu\n", g->name, (unsigned long long)r->count);
		}
	}
}

static void free_results(struct result *res)
{
	for (size_t i = 0; res && i < st.prog.naggs; i++) {
		for (size_t k = 0; k < res[i].nbyk; k++)
			free(res[i].byk[k].name);
		free(res[i].byk);
		free(res[i].times);
	}
	free(res);
}

void probe_collector_print(FILE *out)
{
	for (size_t i = 0; st.loaded && i < st.prog.ncl; i++)
		for (size_t k = 0; k < st.prog.cl[i].npts; k++) {
			const struct probe_point *pt = &st.prog.cl[i].pts[k];
			if (!pt->matched)
				rtl_warn("probe: line %d: %s:%s%s%s matched no function that ran", st.prog.cl[i].line,
					 pt->exit ? "exit" : "entry", pt->module ? pt->module : "",
					 pt->module ? ":" : "", pt->func);
		}
	print_results(out, st.res, false);
}

void probe_collector_print_live(FILE *out, rtl_session *s)
{
	struct rtl_live_point *pts;
	size_t n = rtl_session_live_points(s, &pts);
	st.tsc_hz = rtl_session_tsc_hz(s);
	struct result *res = calloc(st.prog.naggs ? st.prog.naggs : 1, sizeof(*res));
	int err = res ? 0 : -ENOMEM;
	for (size_t i = 0; i < n && !err; i++) {
		const struct rtl_live_point *pt = &pts[i];
		const struct probe_action *a = action_of(pt->id);
		if (!a)
			continue;
		const struct probe_agg *g = &st.prog.aggs[a->agg];
		struct result *r = &res[a->agg];
		if (pt->op == RTL_PRIM_TIMER_START) {
			if (g->kind == PROBE_TIME) {
				struct rtl_timer_view t = { (int)pt->key, pt->value, pt->seconds, 0, pt->id };
				err = add_time(r, NULL, &t);
			}
		} else if (pt->op == RTL_PRIM_COUNT_BY) {
			err = add_keyed(r, NULL, pt->key, pt->value);
		} else if (pt->value) {
			r->count += pt->value;
			if (g->key == PROBE_KEY_FUNC)
				err = add_func_keyed(r, pt->name, pt->value);
		}
	}
	if (!err)
		print_results(out, res, true);
	fflush(out);
	free_results(res);
	free(pts);
}

void probe_collector_unload(void)
{
	free_results(st.res);
	st.res = NULL;
	probe_prog_free(&st.prog);
	for (size_t i = 0; i < st.nmods; i++) {
		free(st.mods[i].module);
		free(st.mods[i].funcs);
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
