/* The run's context: scope and span (span.h). */
#include <errno.h>
#include <fnmatch.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <reticle/error.h>
#include "engine/engine.h"
#include "engine/span.h"
#include "runtime/arc_table.h"
#include "util/log.h"

/* A copy of every window's counters and of its arc table. */
struct span_snap {
	size_t nwins;
	struct { uint64_t base; size_t n; uint64_t *words; } *w;
	struct arcs arcs;
};

static char **copy_list(const char *const *v)
{
	size_t n = 0;
	while (v && v[n])
		n++;
	if (!n)
		return NULL;
	char **c = calloc(n + 1, sizeof(*c));
	for (size_t i = 0; c && i < n; i++)
		if (!(c[i] = strdup(v[i])))
			return NULL;   /* leaks on ENOMEM: the session fails anyway */
	return c;
}

static void free_list(char **v)
{
	for (size_t i = 0; v && v[i]; i++)
		free(v[i]);
	free(v);
}

/* "5s", "2.5", "300ms": nanoseconds; false when it is no duration. */
static bool parse_seconds(const char *t, uint64_t *ns)
{
	char *end;
	double v = strtod(t, &end);
	if (end == t || !(v >= 0) || v > 1e9)
		return false;
	double unit = 1e9;
	if (!strcmp(end, "ms"))
		unit = 1e6;
	else if (*end && strcmp(end, "s"))
		return false;
	*ns = (uint64_t)(v * unit);
	return true;
}

static int parse_edge(const char *t, bool stop, struct span_edge *e, const char **why)
{
	memset(e, 0, sizeof(*e));
	if (!t || !*t)
		return 0;
	if (!strncmp(t, "call:", 5) && t[5]) {
		e->kind = SPAN_CALL;
		return (e->function = strdup(t + 5)) ? 0 : -ENOMEM;
	}
	static const struct { const char *name; uint8_t kind; } events[] = {
		{ "fork", SPAN_FORK }, { "exec", SPAN_EXEC }, { "dlopen", SPAN_DLOPEN }, { "signal", SPAN_SIGNAL },
	};
	for (size_t i = 0; i < sizeof(events) / sizeof(*events); i++) {
		size_t len = strlen(events[i].name);
		if (strncmp(t, events[i].name, len))
			continue;
		e->kind = events[i].kind;
		if (!t[len])
			return 0;
		if (e->kind == SPAN_SIGNAL && t[len] == ':') {
			char *end;
			long sig = strtol(t + len + 1, &end, 10);
			if (end != t + len + 1 && !*end && sig > 0 && sig < NSIG) {
				e->signo = (int)sig;
				return 0;
			}
		}
		break;
	}
	e->kind = SPAN_TIME;
	e->relative = stop && *t == '+';
	if (parse_seconds(t + e->relative, &e->ns))
		return 0;
	e->kind = SPAN_NONE;
	*why = "an edge is SECONDS (5s, 300ms; +SECONDS after the start for the stop), call:FUNCTION, "
	       "fork, exec, dlopen, signal or signal:N";
	return -RTL_ERR_BAD_OPTION;
}

int span_def_init(struct span_def *d, const char *const *modules, const char *const *functions,
		  const char *from, const char *to, const char **why)
{
	memset(d, 0, sizeof(*d));
	*why = NULL;
	d->modules = copy_list(modules);
	d->functions = copy_list(functions);
	int err = parse_edge(from, false, &d->from, why);
	if (!err)
		err = parse_edge(to, true, &d->to, why);
	if (!err && d->from.kind == SPAN_TIME && d->to.kind == SPAN_TIME && !d->to.relative &&
	    d->to.ns <= d->from.ns) {
		*why = "the stop time is not after the start time";
		err = -RTL_ERR_BAD_OPTION;
	}
	if (err)
		span_def_free(d);
	return err;
}

void span_def_free(struct span_def *d)
{
	free_list(d->modules);
	free_list(d->functions);
	free(d->from.function);
	free(d->to.function);
	memset(d, 0, sizeof(*d));
}

bool span_def_any(const struct span_def *d)
{
	return d->modules || d->functions || d->from.kind || d->to.kind;
}

bool span_def_has_time(const struct span_def *d)
{
	return d->from.kind == SPAN_TIME || d->to.kind == SPAN_TIME;
}

/* Whether NAME (a path: its file name too) matches a glob of V. */
static bool matches(char *const *v, const char *name, bool path)
{
	const char *base = path && strrchr(name, '/') ? strrchr(name, '/') + 1 : name;
	for (size_t i = 0; v[i]; i++)
		if (!fnmatch(v[i], name, 0) || (path && !fnmatch(v[i], base, 0)))
			return true;
	return false;
}

bool span_module_in_scope(const struct span_def *d, const char *path)
{
	return !d->modules || matches(d->modules, path, true);
}

bool span_function_in_scope(const struct span_def *d, const char *path, const rtl_function *f)
{
	if (!span_module_in_scope(d, path))
		return false;
	return !d->functions || (f->name && matches(d->functions, f->name, false));
}

static bool is_edge_function(const struct span_def *d, const rtl_function *f)
{
	return f->name && ((d->from.kind == SPAN_CALL && !strcmp(f->name, d->from.function)) ||
			   (d->to.kind == SPAN_CALL && !strcmp(f->name, d->to.function)));
}

void span_mark_module(struct proc *p, struct module *m)
{
	const struct span_def *d = session_span(p->s);
	if (!span_def_any(d))
		return;
	/* the loader is armed whole: its r_brk tells of dlopen, its first
	 * trap starts the warm start; and the main program's entry, which
	 * says the program has started. Their counts are left out at the end. */
	bool loader = proc_is_loader(p, m) ||   /* r_debug is not known yet when it is added */
		      (rtl_binary_kind(m->bin) == RTL_BIN_SHARED && rtl_binary_exports(m->bin, "_r_debug"));
	uint64_t entry = m->is_main ? rtl_binary_entry(m->bin) : 0;
	size_t n = rtl_binary_function_count(m->bin), matched = 0;
	for (size_t k = 0; k < n; k++) {
		const rtl_function *f = rtl_binary_function(m->bin, k);
		bool in = span_function_in_scope(d, m->path, f);
		m->fs[k].edge = is_edge_function(d, f);
		m->fs[k].outside = !loader && !m->fs[k].edge && !(entry && f->addr <= entry && entry < f->addr + (f->size ? f->size : 1)) &&
				   !in;
		matched += in;
	}
	session_scope_matched(p->s, matched);
}

/* ---- snapshots ---- */

static void snap_free(struct span_snap *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->nwins; i++)
		free(s->w[i].words);
	free(s->w);
	arcs_free(&s->arcs);
	free(s);
}

/* Every counter of P now (an empty snapshot with EMPTY: all zero). */
static struct span_snap *snap_take(struct proc *p, bool empty)
{
	struct span_snap *s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	if (empty)
		return s;
	s->w = calloc(p->shm.nwins ? p->shm.nwins : 1, sizeof(*s->w));
	if (!s->w || arcs_collect(p, &s->arcs)) {
		snap_free(s);
		return NULL;
	}
	s->nwins = p->shm.nwins;
	for (size_t i = 0; i < s->nwins; i++) {
		const struct window *w = &p->shm.wins[i];
		size_t n = w->ctr_used / 8;
		s->w[i].base = w->addr + w->code_cap;
		s->w[i].n = n;
		if (n && !(s->w[i].words = malloc(n * 8))) {
			snap_free(s);
			return NULL;
		}
		if (n)
			proc_read_counters(p, w, n, s->w[i].words);
	}
	return s;
}

static uint64_t snap_value(const struct span_snap *s, uint64_t addr)
{
	for (size_t i = 0; s && i < s->nwins; i++)
		if (addr >= s->w[i].base && (addr - s->w[i].base) / 8 < s->w[i].n)
			return s->w[i].words[(addr - s->w[i].base) / 8];
	return 0;
}

static const char *kind_name(uint8_t kind)
{
	static const char *const names[] = { "start", "time", "call", "fork", "exec", "dlopen", "signal" };
	return kind < sizeof(names) / sizeof(*names) ? names[kind] : "?";
}

static void begin(struct proc *p, uint64_t now, const char *why)
{
	p->span.from = snap_take(p, false);
	if (!p->span.from) {
		rtl_warn("pid %d: no counter snapshot at the span's start: counts from the process's start",
			 (int)p->pid);
	}
	p->span.state = SPAN_INSIDE;
	p->span.from_ns = now;
	session_span_started(p->s);
	rtl_debug("pid %d: span starts (%s)", (int)p->pid, why);
}

static void end(struct proc *p, const char *why)
{
	p->span.to = snap_take(p, false);
	if (!p->span.to)
		rtl_warn("pid %d: no counter snapshot at the span's stop: counts to the process's end", (int)p->pid);
	p->span.state = SPAN_AFTER;
	rtl_debug("pid %d: span stops (%s)", (int)p->pid, why);
}

/* Edge E met in P (kind KIND, signal SIGNO): whether it is E's. */
static bool is_edge(const struct span_edge *e, enum span_kind kind, int signo)
{
	if (e->kind != kind)
		return false;
	if (kind == SPAN_SIGNAL)
		return e->signo ? e->signo == signo : signo != SIGTRAP;
	return true;
}

static void reach(struct proc *p, enum span_kind kind, int signo, const char *why)
{
	const struct span_def *d = session_span(p->s);
	if (p->span.state == SPAN_BEFORE && is_edge(&d->from, kind, signo))
		begin(p, session_clock(p->s), why);
	else if (p->span.state == SPAN_INSIDE && is_edge(&d->to, kind, signo))
		end(p, why);
}

void span_proc_start(struct proc *p, int parent_state, bool exec)
{
	const struct span_def *d = session_span(p->s);
	memset(&p->span, 0, sizeof(p->span));
	if (parent_state < 0)   /* launched (or attached): at the start edge's mercy */
		p->span.state = d->from.kind && !(d->from.kind == SPAN_TIME && !d->from.ns) ? SPAN_BEFORE
											       : SPAN_INSIDE;
	else if (exec && parent_state == SPAN_BEFORE && d->from.kind == SPAN_EXEC)
		p->span.state = SPAN_INSIDE;
	else if (exec && parent_state == SPAN_INSIDE && d->to.kind == SPAN_EXEC)
		p->span.state = SPAN_AFTER;
	else   /* as its parent: its counters start at zero */
		p->span.state = (uint8_t)parent_state;
	p->span.from_ns = session_clock(p->s);
	if (p->span.state == SPAN_INSIDE)
		session_span_started(p->s);
	if (p->span.state == SPAN_AFTER)
		p->span.to = snap_take(p, true);   /* nothing counts */
}

void span_proc_free(struct proc *p)
{
	snap_free(p->span.from);
	snap_free(p->span.to);
	memset(&p->span, 0, sizeof(p->span));
}

void span_event(struct proc *p, enum span_kind kind, int signo)
{
	static const char *const why[] = { [SPAN_FORK] = "fork", [SPAN_EXEC] = "exec", [SPAN_DLOPEN] = "dlopen",
					   [SPAN_SIGNAL] = "signal" };
	if (span_def_any(session_span(p->s)))
		reach(p, kind, signo, why[kind]);
}

void span_first_call(struct proc *p, struct module *m, uint64_t addr)
{
	const struct span_def *d = session_span(p->s);
	if (d->from.kind != SPAN_CALL && d->to.kind != SPAN_CALL)
		return;   /* every first call comes here */
	const rtl_function *f = rtl_binary_find_function(m->bin, addr - m->bias);
	if (f && f->addr == addr - m->bias && m->fs[f - rtl_binary_function(m->bin, 0)].edge) {
		if (p->span.state == SPAN_BEFORE && d->from.kind == SPAN_CALL && !strcmp(f->name, d->from.function))
			begin(p, session_clock(p->s), f->name);
		else if (p->span.state == SPAN_INSIDE && d->to.kind == SPAN_CALL && !strcmp(f->name, d->to.function))
			end(p, f->name);
	}
}

void span_tick(struct proc *const *procs, size_t n, uint64_t now)
{
	for (size_t i = 0; i < n; i++) {
		struct proc *p = procs[i];
		const struct span_def *d = session_span(p->s);
		if (p->span.state == SPAN_BEFORE && d->from.kind == SPAN_TIME && now >= d->from.ns)
			begin(p, now, "time");
		if (p->span.state == SPAN_INSIDE && d->to.kind == SPAN_TIME &&
		    now >= d->to.ns + (d->to.relative ? p->span.from_ns : 0))
			end(p, "time");
	}
}

uint64_t span_count(struct proc *p, uint64_t addr)
{
	switch (p->span.state) {
	case SPAN_BEFORE:
		return 0;
	case SPAN_AFTER:
		return (p->span.to ? snap_value(p->span.to, addr) : proc_read_counter(p, addr)) -
		       snap_value(p->span.from, addr);
	default:
		return proc_read_counter(p, addr) - snap_value(p->span.from, addr);
	}
}

static const struct arc_entry *arc_find(const struct arcs *a, size_t win, uint64_t key)
{
	if (win >= a->nwins || !a->wins[win].v)
		return NULL;
	const struct arc_entry *v = a->wins[win].v;
	size_t lo = 0, hi = a->wins[win].n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (v[mid].key < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < a->wins[win].n && v[lo].key == key ? &v[lo] : NULL;
}

/* OUT less the counts of BASE, entries of no count dropped. */
static void arcs_subtract(struct arcs *out, const struct arcs *base)
{
	for (size_t i = 0; i < out->nwins; i++) {
		size_t n = 0;
		for (size_t k = 0; k < out->wins[i].n; k++) {
			struct arc_entry e = out->wins[i].v[k];
			const struct arc_entry *b = arc_find(base, i, e.key);
			e.count -= b ? b->count : 0;
			if (e.count)
				out->wins[i].v[n++] = e;
		}
		out->wins[i].n = n;
	}
}

static int arcs_copy(const struct arcs *a, size_t nwins, struct arcs *out)
{
	memset(out, 0, sizeof(*out));
	out->nwins = nwins;
	out->wins = calloc(nwins ? nwins : 1, sizeof(*out->wins));
	if (!out->wins)
		return -ENOMEM;
	for (size_t i = 0; i < a->nwins && i < nwins; i++) {
		size_t n = a->wins[i].n;
		if (!n)
			continue;
		if (!(out->wins[i].v = malloc(n * sizeof(*out->wins[i].v))))
			return -ENOMEM;
		memcpy(out->wins[i].v, a->wins[i].v, n * sizeof(*out->wins[i].v));
		out->wins[i].n = n;
	}
	return 0;
}

int span_arcs(struct proc *p, struct arcs *out)
{
	static const struct arcs none;
	int err;
	switch (p->span.state) {
	case SPAN_BEFORE:
		return arcs_copy(&none, p->shm.nwins, out);
	case SPAN_AFTER:
		err = p->span.to ? arcs_copy(&p->span.to->arcs, p->shm.nwins, out) : arcs_collect(p, out);
		break;
	default:
		err = arcs_collect(p, out);
		break;
	}
	if (!err && p->span.from)
		arcs_subtract(out, &p->span.from->arcs);
	return err;
}

void span_check_started(const struct span_def *d)
{
	char e[300];
	if (d->from.kind && !d->started)
		rtl_warn("the span's start (%s) was never reached: nothing was counted",
			 span_edge_text(&d->from, e, sizeof(e)));
	if ((d->modules || d->functions) && !d->matched)
		rtl_warn("no function of the modules the run loaded is in its scope (%s%s%s): nothing was "
			 "measured ('reticle functions PROGRAM' lists the names)", d->modules ? "--modules" : "",
			 d->modules && d->functions ? ", " : "", d->functions ? "--functions" : "");
}

const char *span_edge_text(const struct span_edge *e, char *buf, size_t len)
{
	switch (e->kind) {
	case SPAN_TIME:
		snprintf(buf, len, "%s%.9gs", e->relative ? "+" : "", (double)e->ns / 1e9);
		break;
	case SPAN_CALL:
		snprintf(buf, len, "call:%s", e->function);
		break;
	case SPAN_SIGNAL:
		if (e->signo)
			snprintf(buf, len, "signal:%d", e->signo);
		else
			snprintf(buf, len, "signal");
		break;
	default:
		snprintf(buf, len, "%s", kind_name(e->kind));
	}
	return buf;
}
