/* reticle/profile.h, report.h and error.h in Lua (script.h), and the
 * shorter forms scripts had first.
 *
 * Profiles (class reticle.profile; every reticle.profile_X(p, ...) is also
 * p:X(...)). Ids are integers; tables have the C structs' field names;
 * flags (all, instrumented, disasm) are booleans or integers. Entries that
 * only return 0 in C return nothing.
 *   reticle.profile_create(path), reticle.profile_open(path) -> a profile
 *   reticle.profile_commit(p), reticle.profile_close(p) (twice: harmless)
 *   reticle.profile_set_meta(p, key, value)
 *   reticle.profile_get_meta(p, key)                     -> string or nil
 *   reticle.profile_add_process(p, {id, parent, pid, kind, command,
 *                                   exit_status, start_ns, end_ns})
 *   reticle.profile_add_module(p, path, load_bias)       -> module id
 *   reticle.profile_add_process_module(p, process, path, load_bias) -> module id
 *   reticle.profile_add_function(p, module, name, addr, size, instrumented
 *                                [, reason])             -> function id
 *   reticle.profile_set_function_counts(p, function, have, calls, instrs)
 *   reticle.profile_add_block(p, function, addr, ninstrs, count)
 *   reticle.profile_add_call(p, caller, site, callee, count)
 *   reticle.profile_add_branch(p, function, site, taken, not_taken)
 *   reticle.profile_add_time(p, function, tid, calls, inclusive, exclusive)
 *   reticle.profile_add_context(p, {id, parent, function, tid, calls, inclusive, exclusive})
 *   reticle.profile_add_sample(p, {id, parent, function, tid, samples, weight})
 *   reticle.profile_add_signal_run(p, {process, tid, value, start_ns, end_ns})
 *   reticle.profile_add_metric(p, function, name, site, value)
 *   reticle.profile_get_totals(p)   -> {have, calls, instrs, functions, counted,
 *                                       uninstrumented, modules, blocks, call_sites, processes}
 *   reticle.profile_sample_unit(p)  -> seconds per unit of a sample's weight
 *   reticle.profile_select_process(p, process)
 *   reticle.profile_selected_process(p) -> process id (0: all merged)
 *   reticle.profile_merge(output, {inputs...} [, progress]) -> nil, or progress's stop value
 *       progress(i): i inputs merged so far; a value other than nil/false stops
 *       the merge (no output is written)
 *   Foreach entries call fn with one row table (foreach_meta: fn(key, value));
 *   fn returning a value other than nil/false stops the walk, and the
 *   entry returns that value (nil when every row was visited):
 *   reticle.profile_foreach_function(p, all, fn)          {id, module, name, addr, size,
 *   reticle.profile_foreach_function_by_addr(p, all, fn)   have, calls, instrs, instrumented,
 *                                                          module_id, reason}
 *   reticle.profile_foreach_meta(p, fn)                    fn(key, value)
 *   reticle.profile_foreach_module(p, fn)                  {id, path, load_bias, process}
 *   reticle.profile_foreach_block(p, function, fn)         {function, addr, ninstrs, count}
 *   reticle.profile_foreach_call(p, fn)                    {caller, site, callee, count}
 *   reticle.profile_foreach_branch(p, fn)                  {function, site, taken, not_taken}
 *   reticle.profile_foreach_time(p, fn)                    {function, tid, calls, inclusive, exclusive}
 *   reticle.profile_foreach_context(p, fn)                 {id, parent, function, tid, calls, ...}
 *   reticle.profile_foreach_sample(p, fn)                  {id, parent, function, tid, samples, weight}
 *   reticle.profile_foreach_signal_run(p, fn)              {process, tid, value, start_ns, end_ns}
 *   reticle.profile_foreach_metric(p, fn)                  {function, name, site, value}
 *   reticle.profile_foreach_process(p, fn)                 {id, parent, pid, kind, command,
 *                                                          exit_status, start_ns, end_ns, calls, instrs}
 *   reticle.profile_foreach_rank_count(p, fn)              {module, name, addr, rank, have, calls, instrs}
 *   Constants: HAVE_CALLS, HAVE_INSTRS, PROCESS_RUNNING, PROFILE_SCHEMA_VERSION.
 *
 * Reports: O is nil or {top, all, no_demangle, module, inlined, samples};
 * each writer returns the document as a string, or writes it to PATH and
 * returns true.
 *   reticle.report_format_parse(name)            -> a REPORT_* constant
 *   reticle.report_write(p, format, o [, path])
 *   reticle.report_text / json / callgrind / lcov / fdata / folded / chrome /
 *          pprof / svg / cachegrind(p, o [, path])
 *   reticle.report_diff(a, b, o [, path])
 *   reticle.report_tree(p [, path])
 *   reticle.report_annotate(p, function, disasm [, path])
 *   Constants: REPORT_TEXT ... REPORT_CACHEGRIND.
 *
 * Errors and the log:
 *   reticle.strerror(err)          -> the message of a (negative) code
 *   reticle.set_log(fn)            fn(level, message) gets libreticle's log
 *                                  (nil: none, also for the command line's)
 *   reticle.set_log_level(level)   0 error ... 3 debug
 *   Constants: ERR_NOT_ELF ... ERR_TARGET_STOPPED (positive: errors are -ERR_X).
 *
 * The first forms:
 *   reticle.open(path)                -> a profile, or an error
 *     p:totals()                      -> reticle.profile_get_totals(p)
 *     p:functions([all])              -> { {name, module, addr, size, calls, instrs}, ... }
 *     p:samples()                     -> { {name, module, samples, seconds}, ... } by seconds
 *     p:meta(key)                     -> string or nil
 *     p:report(format [, output])     -> the report as a string, or written to output
 *   reticle.diff(a, b [, top])        -> `reticle diff`'s text
 *   reticle.merge(output, {inputs})   -> true */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <reticle/error.h>
#include <reticle/profile.h>
#include <reticle/report.h>
#include "script.h"

#define PROFILE_MT "reticle.profile"
#define LOG_MT "reticle.log"

/* ---- Arguments */

static rtl_profile *check_profile_at(lua_State *L, int idx)
{
	return script_check_object(L, idx, PROFILE_MT);
}

static rtl_profile *check_profile(lua_State *L)
{
	return check_profile_at(L, 1);
}

/* A C int flag: a boolean or an integer (0 is false, as in C). */
static int check_flag(lua_State *L, int idx)
{
	if (lua_isnoneornil(L, idx) || lua_isboolean(L, idx))
		return lua_toboolean(L, idx);
	return luaL_checkinteger(L, idx) != 0;
}

static int flag_field(lua_State *L, int idx, const char *k)
{
	lua_getfield(L, idx, k);
	int boolean = lua_isboolean(L, -1), v = lua_toboolean(L, -1);
	lua_pop(L, 1);
	return boolean ? v : script_opt_int(L, idx, k, 0) != 0;
}

static int check_int(lua_State *L, int idx)
{
	lua_Integer v = luaL_checkinteger(L, idx);
	luaL_argcheck(L, v >= INT_MIN && v <= INT_MAX, idx, "out of the range of a C int");
	return (int)v;
}

static int int_field(lua_State *L, int idx, const char *k, int def)
{
	int64_t v = script_opt_int(L, idx, k, def);
	if (v < INT_MIN || v > INT_MAX)
		luaL_error(L, "field '%s': out of the range of a C int", k);
	return (int)v;
}

static uint64_t check_u64(lua_State *L, int idx)
{
	return (uint64_t)luaL_checkinteger(L, idx);   /* wraps as script_set_uint does */
}

/* Raises the entry's error for a negative ERR; else returns 0 values. */
static int done(lua_State *L, int err, const char *what)
{
	return err < 0 ? script_fail(L, what, err) : 0;
}

/* ---- Rows as tables */

static void push_function(lua_State *L, const void *row)
{
	const rtl_profile_function *f = row;
	lua_createtable(L, 0, 11);
	script_set_int(L, "id", f->id);
	script_set_str(L, "module", f->module);
	script_set_str(L, "name", f->name);
	script_set_uint(L, "addr", f->addr);
	script_set_uint(L, "size", f->size);
	script_set_uint(L, "have", f->have);
	script_set_uint(L, "calls", f->calls);
	script_set_uint(L, "instrs", f->instrs);
	script_set_int(L, "instrumented", f->instrumented);
	script_set_int(L, "module_id", f->module_id);
	script_set_str(L, "reason", f->reason);
}

static void push_module(lua_State *L, const void *row)
{
	const rtl_profile_module *m = row;
	lua_createtable(L, 0, 4);
	script_set_int(L, "id", m->id);
	script_set_str(L, "path", m->path);
	script_set_uint(L, "load_bias", m->load_bias);
	script_set_int(L, "process", m->process);
}

static void push_block(lua_State *L, const void *row)
{
	const rtl_profile_block *b = row;
	lua_createtable(L, 0, 4);
	script_set_int(L, "function", b->function);
	script_set_uint(L, "addr", b->addr);
	script_set_uint(L, "ninstrs", b->ninstrs);
	script_set_uint(L, "count", b->count);
}

static void push_call(lua_State *L, const void *row)
{
	const rtl_profile_call *c = row;
	lua_createtable(L, 0, 4);
	script_set_int(L, "caller", c->caller);
	script_set_uint(L, "site", c->site);
	script_set_int(L, "callee", c->callee);
	script_set_uint(L, "count", c->count);
}

static void push_branch(lua_State *L, const void *row)
{
	const rtl_profile_branch *b = row;
	lua_createtable(L, 0, 4);
	script_set_int(L, "function", b->function);
	script_set_uint(L, "site", b->site);
	script_set_uint(L, "taken", b->taken);
	script_set_uint(L, "not_taken", b->not_taken);
}

static void push_time(lua_State *L, const void *row)
{
	const rtl_profile_time *t = row;
	lua_createtable(L, 0, 5);
	script_set_int(L, "function", t->function);
	script_set_int(L, "tid", t->tid);
	script_set_uint(L, "calls", t->calls);
	script_set_num(L, "inclusive", t->inclusive);
	script_set_num(L, "exclusive", t->exclusive);
}

static void push_context(lua_State *L, const void *row)
{
	const rtl_profile_context *c = row;
	lua_createtable(L, 0, 7);
	script_set_uint(L, "id", c->id);
	script_set_uint(L, "parent", c->parent);
	script_set_int(L, "function", c->function);
	script_set_int(L, "tid", c->tid);
	script_set_uint(L, "calls", c->calls);
	script_set_num(L, "inclusive", c->inclusive);
	script_set_num(L, "exclusive", c->exclusive);
}

static void push_sample(lua_State *L, const void *row)
{
	const rtl_profile_sample *s = row;
	lua_createtable(L, 0, 6);
	script_set_uint(L, "id", s->id);
	script_set_uint(L, "parent", s->parent);
	script_set_int(L, "function", s->function);
	script_set_int(L, "tid", s->tid);
	script_set_uint(L, "samples", s->samples);
	script_set_num(L, "weight", s->weight);
}

static void push_signal_run(lua_State *L, const void *row)
{
	const rtl_profile_signal_run *r = row;
	lua_createtable(L, 0, 5);
	script_set_int(L, "process", r->process);
	script_set_int(L, "tid", r->tid);
	script_set_uint(L, "value", r->value);
	script_set_uint(L, "start_ns", r->start_ns);
	script_set_uint(L, "end_ns", r->end_ns);
}

static void push_metric(lua_State *L, const void *row)
{
	const rtl_profile_metric *m = row;
	lua_createtable(L, 0, 4);
	script_set_int(L, "function", m->function);
	script_set_str(L, "name", m->name);
	script_set_uint(L, "site", m->site);
	script_set_num(L, "value", m->value);
}

static void push_process(lua_State *L, const void *row)
{
	const rtl_profile_process *p = row;
	lua_createtable(L, 0, 10);
	script_set_int(L, "id", p->id);
	script_set_int(L, "parent", p->parent);
	script_set_int(L, "pid", p->pid);
	script_set_str(L, "kind", p->kind);
	script_set_str(L, "command", p->command);
	script_set_int(L, "exit_status", p->exit_status);
	script_set_uint(L, "start_ns", p->start_ns);
	script_set_uint(L, "end_ns", p->end_ns);
	script_set_uint(L, "calls", p->calls);
	script_set_uint(L, "instrs", p->instrs);
}

static void push_rank_count(lua_State *L, const void *row)
{
	const rtl_profile_rank_count *r = row;
	lua_createtable(L, 0, 7);
	script_set_str(L, "module", r->module);
	script_set_str(L, "name", r->name);
	script_set_uint(L, "addr", r->addr);
	script_set_int(L, "rank", r->rank);
	script_set_uint(L, "have", r->have);
	script_set_uint(L, "calls", r->calls);
	script_set_uint(L, "instrs", r->instrs);
}

/* ---- Callbacks: the Lua function FN (a stack index of L) per row */

struct visit {
	lua_State *L;
	int fn;
};

/* Calls FN with the NARGS values pushed after it. A result other than
 * nil/false stops the walk and stays on the stack: the entry's result. */
static int visit_call(struct visit *v, int nargs)
{
	if (script_call(v->L, nargs, 1))
		return -1;
	if (lua_toboolean(v->L, -1))
		return 1;
	lua_pop(v->L, 1);
	return 0;
}

static int visit(struct visit *v, void (*push)(lua_State *L, const void *row), const void *row)
{
	lua_pushvalue(v->L, v->fn);
	push(v->L, row);
	return visit_call(v, 1);
}

static int on_function(const rtl_profile_function *f, void *v) { return visit(v, push_function, f); }
static int on_module(const rtl_profile_module *m, void *v) { return visit(v, push_module, m); }
static int on_block(const rtl_profile_block *b, void *v) { return visit(v, push_block, b); }
static int on_call(const rtl_profile_call *c, void *v) { return visit(v, push_call, c); }
static int on_branch(const rtl_profile_branch *b, void *v) { return visit(v, push_branch, b); }
static int on_time(const rtl_profile_time *t, void *v) { return visit(v, push_time, t); }
static int on_context(const rtl_profile_context *c, void *v) { return visit(v, push_context, c); }
static int on_sample(const rtl_profile_sample *s, void *v) { return visit(v, push_sample, s); }
static int on_signal_run(const rtl_profile_signal_run *r, void *v) { return visit(v, push_signal_run, r); }
static int on_metric(const rtl_profile_metric *m, void *v) { return visit(v, push_metric, m); }
static int on_process(const rtl_profile_process *p, void *v) { return visit(v, push_process, p); }
static int on_rank_count(const rtl_profile_rank_count *r, void *v) { return visit(v, push_rank_count, r); }

static int on_meta(const char *key, const char *value, void *user)
{
	struct visit *v = user;
	lua_pushvalue(v->L, v->fn);
	lua_pushstring(v->L, key);
	lua_pushstring(v->L, value);
	return visit_call(v, 2);
}

/* The profile's user value is true while a walk runs: closing it from a
 * callback would free the statement being stepped. */
static void set_busy(lua_State *L, bool busy)
{
	lua_pushboolean(L, busy);
	lua_setiuservalue(L, 1, 1);
}

/* The result of a walk of profile 1: the callback's error, the entry's,
 * the callback's stop value (left on the stack by visit_call) or nil. */
static int walked(lua_State *L, int err, const char *what)
{
	set_busy(L, false);
	script_rethrow(L);
	if (err < 0)
		return script_fail(L, what, err);
	if (!err)
		lua_pushnil(L);
	return 1;
}

/* Starts a walk of profile 1 with the Lua function at FN_IDX, once the
 * other arguments are checked (an error after this would leave it busy). */
static struct visit begin_walk(lua_State *L, int fn_idx)
{
	luaL_checktype(L, fn_idx, LUA_TFUNCTION);
	lua_settop(L, fn_idx);
	set_busy(L, true);
	return (struct visit){ L, fn_idx };
}

static int l_foreach_function(lua_State *L)
{
	rtl_profile *p = check_profile(L);
	int all = check_flag(L, 2);
	struct visit v = begin_walk(L, 3);
	return walked(L, rtl_profile_foreach_function(p, all, on_function, &v), "profile_foreach_function");
}

static int l_foreach_function_by_addr(lua_State *L)
{
	rtl_profile *p = check_profile(L);
	int all = check_flag(L, 2);
	struct visit v = begin_walk(L, 3);
	return walked(L, rtl_profile_foreach_function_by_addr(p, all, on_function, &v), "profile_foreach_function_by_addr");
}

static int l_foreach_meta(lua_State *L)
{
	rtl_profile *p = check_profile(L);
	struct visit v = begin_walk(L, 2);
	return walked(L, rtl_profile_foreach_meta(p, on_meta, &v), "profile_foreach_meta");
}

static int l_foreach_module(lua_State *L)
{
	rtl_profile *p = check_profile(L);
	struct visit v = begin_walk(L, 2);
	return walked(L, rtl_profile_foreach_module(p, on_module, &v), "profile_foreach_module");
}

static int l_foreach_block(lua_State *L)
{
	rtl_profile *p = check_profile(L);
	int64_t function = luaL_checkinteger(L, 2);
	struct visit v = begin_walk(L, 3);
	return walked(L, rtl_profile_foreach_block(p, function, on_block, &v), "profile_foreach_block");
}

static int l_foreach_call(lua_State *L)
{
	rtl_profile *p = check_profile(L);
	struct visit v = begin_walk(L, 2);
	return walked(L, rtl_profile_foreach_call(p, on_call, &v), "profile_foreach_call");
}

static int l_foreach_branch(lua_State *L)
{
	rtl_profile *p = check_profile(L);
	struct visit v = begin_walk(L, 2);
	return walked(L, rtl_profile_foreach_branch(p, on_branch, &v), "profile_foreach_branch");
}

static int l_foreach_time(lua_State *L)
{
	rtl_profile *p = check_profile(L);
	struct visit v = begin_walk(L, 2);
	return walked(L, rtl_profile_foreach_time(p, on_time, &v), "profile_foreach_time");
}

static int l_foreach_context(lua_State *L)
{
	rtl_profile *p = check_profile(L);
	struct visit v = begin_walk(L, 2);
	return walked(L, rtl_profile_foreach_context(p, on_context, &v), "profile_foreach_context");
}

static int l_foreach_sample(lua_State *L)
{
	rtl_profile *p = check_profile(L);
	struct visit v = begin_walk(L, 2);
	return walked(L, rtl_profile_foreach_sample(p, on_sample, &v), "profile_foreach_sample");
}

static int l_foreach_signal_run(lua_State *L)
{
	rtl_profile *p = check_profile(L);
	struct visit v = begin_walk(L, 2);
	return walked(L, rtl_profile_foreach_signal_run(p, on_signal_run, &v), "profile_foreach_signal_run");
}

static int l_foreach_metric(lua_State *L)
{
	rtl_profile *p = check_profile(L);
	struct visit v = begin_walk(L, 2);
	return walked(L, rtl_profile_foreach_metric(p, on_metric, &v), "profile_foreach_metric");
}

static int l_foreach_process(lua_State *L)
{
	rtl_profile *p = check_profile(L);
	struct visit v = begin_walk(L, 2);
	return walked(L, rtl_profile_foreach_process(p, on_process, &v), "profile_foreach_process");
}

static int l_foreach_rank_count(lua_State *L)
{
	rtl_profile *p = check_profile(L);
	struct visit v = begin_walk(L, 2);
	return walked(L, rtl_profile_foreach_rank_count(p, on_rank_count, &v), "profile_foreach_rank_count");
}

/* ---- Opening, closing, meta */

/* The box is made first so that the profile is never without an owner. */
static int open_with(lua_State *L, int (*open)(const char *path, rtl_profile **out), const char *what)
{
	const char *path = luaL_checkstring(L, 1);
	rtl_profile **box = (rtl_profile **)script_new_object(L, PROFILE_MT, NULL);
	int err = open(path, box);
	if (err)
		return luaL_error(L, "%s: %s: %s", what, path, rtl_strerror(err));
	return 1;
}

static int l_profile_create(lua_State *L)
{
	return open_with(L, rtl_profile_create, "profile_create");
}

static int l_profile_open(lua_State *L)
{
	return open_with(L, rtl_profile_open, "profile_open");
}

static int l_open(lua_State *L)
{
	return open_with(L, rtl_profile_open, "reticle.open");
}

static int l_close(lua_State *L)
{
	rtl_profile **box = (rtl_profile **)script_check_box(L, 1, PROFILE_MT);
	lua_getiuservalue(L, 1, 1);
	if (lua_toboolean(L, -1))
		return luaL_error(L, "profile_close: the profile is being walked (close it after the foreach)");
	rtl_profile_close(*box);
	*box = NULL;
	return 0;
}

static int l_commit(lua_State *L)
{
	return done(L, rtl_profile_commit(check_profile(L)), "profile_commit");
}

static int l_set_meta(lua_State *L)
{
	rtl_profile *p = check_profile(L);
	return done(L, rtl_profile_set_meta(p, luaL_checkstring(L, 2), luaL_checkstring(L, 3)), "profile_set_meta");
}

/* The string is P's until its next call: copied at once. */
static int l_get_meta(lua_State *L)
{
	const char *v = rtl_profile_get_meta(check_profile(L), luaL_checkstring(L, 2));
	if (v)
		lua_pushstring(L, v);
	else
		lua_pushnil(L);
	return 1;
}

/* ---- Writing */

static int l_add_process(lua_State *L)
{
	rtl_profile *p = check_profile(L);
	luaL_checktype(L, 2, LUA_TTABLE);
	rtl_profile_process proc = {
		.id = script_opt_int(L, 2, "id", 0),
		.parent = script_opt_int(L, 2, "parent", 0),
		.pid = int_field(L, 2, "pid", 0),
		.kind = script_opt_str(L, 2, "kind", NULL),
		.command = script_opt_str(L, 2, "command", NULL),
		.exit_status = int_field(L, 2, "exit_status", 0),
		.start_ns = (uint64_t)script_opt_int(L, 2, "start_ns", 0),
		.end_ns = (uint64_t)script_opt_int(L, 2, "end_ns", 0),
	};
	return done(L, rtl_profile_add_process(p, &proc), "profile_add_process");
}

static int push_id(lua_State *L, int err, int64_t id, const char *what)
{
	if (err)
		return script_fail(L, what, err);
	lua_pushinteger(L, id);
	return 1;
}

static int l_add_module(lua_State *L)
{
	rtl_profile *p = check_profile(L);
	int64_t id = 0;
	int err = rtl_profile_add_module(p, luaL_checkstring(L, 2), check_u64(L, 3), &id);
	return push_id(L, err, id, "profile_add_module");
}

static int l_add_process_module(lua_State *L)
{
	rtl_profile *p = check_profile(L);
	int64_t id = 0;
	int err = rtl_profile_add_process_module(p, luaL_checkinteger(L, 2), luaL_checkstring(L, 3),
						 check_u64(L, 4), &id);
	return push_id(L, err, id, "profile_add_process_module");
}

static int l_add_function(lua_State *L)
{
	rtl_profile *p = check_profile(L);
	int64_t id = 0;
	int err = rtl_profile_add_function(p, luaL_checkinteger(L, 2), luaL_checkstring(L, 3), check_u64(L, 4),
					   check_u64(L, 5), check_flag(L, 6), luaL_optstring(L, 7, NULL), &id);
	return push_id(L, err, id, "profile_add_function");
}

static int l_set_function_counts(lua_State *L)
{
	rtl_profile *p = check_profile(L);
	lua_Integer have = luaL_checkinteger(L, 3);
	luaL_argcheck(L, have >= 0 && have <= UINT_MAX, 3, "HAVE_* bits expected");
	return done(L, rtl_profile_set_function_counts(p, luaL_checkinteger(L, 2), (unsigned)have, check_u64(L, 4),
						       check_u64(L, 5)), "profile_set_function_counts");
}

static int l_add_block(lua_State *L)
{
	rtl_profile *p = check_profile(L);
	lua_Integer ninstrs = luaL_checkinteger(L, 4);
	luaL_argcheck(L, ninstrs >= 0 && ninstrs <= UINT32_MAX, 4, "out of the range of a uint32_t");
	return done(L, rtl_profile_add_block(p, luaL_checkinteger(L, 2), check_u64(L, 3), (uint32_t)ninstrs,
					     check_u64(L, 5)), "profile_add_block");
}

static int l_add_call(lua_State *L)
{
	rtl_profile *p = check_profile(L);
	return done(L, rtl_profile_add_call(p, luaL_checkinteger(L, 2), check_u64(L, 3), luaL_checkinteger(L, 4),
					    check_u64(L, 5)), "profile_add_call");
}

static int l_add_branch(lua_State *L)
{
	rtl_profile *p = check_profile(L);
	return done(L, rtl_profile_add_branch(p, luaL_checkinteger(L, 2), check_u64(L, 3), check_u64(L, 4),
					      check_u64(L, 5)), "profile_add_branch");
}

static int l_add_time(lua_State *L)
{
	rtl_profile *p = check_profile(L);
	return done(L, rtl_profile_add_time(p, luaL_checkinteger(L, 2), check_int(L, 3), check_u64(L, 4),
					    luaL_checknumber(L, 5), luaL_checknumber(L, 6)), "profile_add_time");
}

static int l_add_context(lua_State *L)
{
	rtl_profile *p = check_profile(L);
	luaL_checktype(L, 2, LUA_TTABLE);
	rtl_profile_context c = {
		.id = (uint64_t)script_opt_int(L, 2, "id", 0),
		.parent = (uint64_t)script_opt_int(L, 2, "parent", 0),
		.function = script_opt_int(L, 2, "function", 0),
		.tid = int_field(L, 2, "tid", 0),
		.calls = (uint64_t)script_opt_int(L, 2, "calls", 0),
		.inclusive = script_opt_num(L, 2, "inclusive", 0),
		.exclusive = script_opt_num(L, 2, "exclusive", 0),
	};
	return done(L, rtl_profile_add_context(p, &c), "profile_add_context");
}

static int l_add_sample(lua_State *L)
{
	rtl_profile *p = check_profile(L);
	luaL_checktype(L, 2, LUA_TTABLE);
	rtl_profile_sample s = {
		.id = (uint64_t)script_opt_int(L, 2, "id", 0),
		.parent = (uint64_t)script_opt_int(L, 2, "parent", 0),
		.function = script_opt_int(L, 2, "function", 0),
		.tid = int_field(L, 2, "tid", 0),
		.samples = (uint64_t)script_opt_int(L, 2, "samples", 0),
		.weight = script_opt_num(L, 2, "weight", 0),
	};
	return done(L, rtl_profile_add_sample(p, &s), "profile_add_sample");
}

static int l_add_signal_run(lua_State *L)
{
	rtl_profile *p = check_profile(L);
	luaL_checktype(L, 2, LUA_TTABLE);
	rtl_profile_signal_run r = {
		.process = script_opt_int(L, 2, "process", 0),
		.tid = int_field(L, 2, "tid", 0),
		.value = (uint64_t)script_opt_int(L, 2, "value", 0),
		.start_ns = (uint64_t)script_opt_int(L, 2, "start_ns", 0),
		.end_ns = (uint64_t)script_opt_int(L, 2, "end_ns", 0),
	};
	return done(L, rtl_profile_add_signal_run(p, &r), "profile_add_signal_run");
}

static int l_add_metric(lua_State *L)
{
	rtl_profile *p = check_profile(L);
	return done(L, rtl_profile_add_metric(p, luaL_checkinteger(L, 2), luaL_checkstring(L, 3), check_u64(L, 4),
					      luaL_checknumber(L, 5)), "profile_add_metric");
}

/* ---- Reading */

static int l_get_totals(lua_State *L)
{
	rtl_profile_totals t;
	int err = rtl_profile_get_totals(check_profile(L), &t);
	if (err)
		return script_fail(L, "profile_get_totals", err);
	lua_createtable(L, 0, 10);
	script_set_uint(L, "have", t.have);
	script_set_uint(L, "calls", t.calls);
	script_set_uint(L, "instrs", t.instrs);
	script_set_uint(L, "functions", t.functions);
	script_set_uint(L, "counted", t.counted);
	script_set_uint(L, "uninstrumented", t.uninstrumented);
	script_set_uint(L, "modules", t.modules);
	script_set_uint(L, "blocks", t.blocks);
	script_set_uint(L, "call_sites", t.call_sites);
	script_set_uint(L, "processes", t.processes);
	return 1;
}

static int l_sample_unit(lua_State *L)
{
	lua_pushnumber(L, rtl_profile_sample_unit(check_profile(L)));
	return 1;
}

static int l_select_process(lua_State *L)
{
	rtl_profile *p = check_profile(L);
	return done(L, rtl_profile_select_process(p, luaL_checkinteger(L, 2)), "profile_select_process");
}

static int l_selected_process(lua_State *L)
{
	lua_pushinteger(L, rtl_profile_selected_process(check_profile(L)));
	return 1;
}

/* merge's i is the index of the input just merged: inputs done, for Lua. */
static int on_progress(size_t i, void *user)
{
	struct visit *v = user;
	lua_pushvalue(v->L, v->fn);
	lua_pushinteger(v->L, (lua_Integer)i + 1);
	return visit_call(v, 1);
}

static int l_profile_merge(lua_State *L)
{
	const char *out = luaL_checkstring(L, 1);
	bool progress = !lua_isnoneornil(L, 3);
	if (progress)
		luaL_checktype(L, 3, LUA_TFUNCTION);
	lua_settop(L, 3);
	size_t n;
	const char **inputs = script_check_strings(L, 2, "inputs", false, &n);
	struct visit v = { L, 3 };
	int err = rtl_profile_merge(out, inputs, n, progress ? on_progress : NULL, &v);
	script_rethrow(L);
	if (err < 0)
		return script_fail(L, "profile_merge", err);
	if (!err)
		lua_pushnil(L);
	return 1;
}

static int l_merge(lua_State *L)
{
	const char *out = luaL_checkstring(L, 1);
	size_t n;
	const char **inputs = script_check_strings(L, 2, "inputs", false, &n);
	int err = rtl_profile_merge(out, inputs, n, NULL, NULL);
	if (err)
		return luaL_error(L, "merge: %s", rtl_strerror(err));
	lua_pushboolean(L, 1);
	return 1;
}

/* ---- The first forms: p:functions(), p:samples(), p:meta() */

static int add_function(const rtl_profile_function *f, void *user)
{
	lua_State *L = user;
	lua_createtable(L, 0, 7);
	lua_pushstring(L, f->name ? f->name : "");
	lua_setfield(L, -2, "name");
	lua_pushstring(L, f->module ? f->module : "");
	lua_setfield(L, -2, "module");
	script_set_uint(L, "addr", f->addr);
	script_set_uint(L, "size", f->size);
	if (f->have & RTL_HAVE_CALLS)
		script_set_uint(L, "calls", f->calls);
	if (f->have & RTL_HAVE_INSTRS)
		script_set_uint(L, "instrs", f->instrs);
	lua_seti(L, -2, luaL_len(L, -2) + 1);
	return 0;
}

/* p:samples(): the sampled time per function (sample, shim): a list of
 * {name, module, samples, seconds}, samples taken in the function itself,
 * by seconds. */
struct sample_sums {
	lua_State *L;
	int names;                /* stack index: function id -> {name, module} */
	int sums;                 /* function id -> {samples, seconds} */
	double unit;              /* seconds per unit of weight */
};

static int name_function(const rtl_profile_function *f, void *user)
{
	struct sample_sums *s = user;
	lua_createtable(s->L, 0, 2);
	lua_pushstring(s->L, f->name ? f->name : "");
	lua_setfield(s->L, -2, "name");
	lua_pushstring(s->L, f->module ? f->module : "");
	lua_setfield(s->L, -2, "module");
	lua_seti(s->L, s->names, f->id);
	return 0;
}

static int sum_sample(const rtl_profile_sample *row, void *user)
{
	struct sample_sums *s = user;
	lua_State *L = s->L;
	if (lua_geti(L, s->sums, row->function) == LUA_TNIL) {
		lua_pop(L, 1);
		if (lua_geti(L, s->names, row->function) == LUA_TNIL) {
			lua_pop(L, 1);
			lua_createtable(L, 0, 4);
		}
		lua_pushvalue(L, -1);
		lua_seti(L, s->sums, row->function);
	}
	lua_getfield(L, -1, "samples");
	lua_Integer n = lua_tointeger(L, -1) + (lua_Integer)row->samples;
	lua_pop(L, 1);
	script_set_uint(L, "samples", (uint64_t)n);
	lua_getfield(L, -1, "seconds");
	double sec = lua_tonumber(L, -1) + row->weight * s->unit;
	lua_pop(L, 1);
	lua_pushnumber(L, sec);
	lua_setfield(L, -2, "seconds");
	lua_pop(L, 1);
	return 0;
}

static int by_seconds(lua_State *L)
{
	lua_getfield(L, 1, "seconds");
	lua_getfield(L, 2, "seconds");
	lua_pushboolean(L, lua_tonumber(L, -2) > lua_tonumber(L, -1));
	return 1;
}

static int l_samples(lua_State *L)
{
	rtl_profile *p = check_profile(L);
	lua_settop(L, 1);
	struct sample_sums s = { L, 2, 3, rtl_profile_sample_unit(p) };
	lua_newtable(L);
	lua_newtable(L);
	int err = rtl_profile_foreach_function(p, 1, name_function, &s);
	if (!err)
		err = rtl_profile_foreach_sample(p, sum_sample, &s);
	if (err)
		return luaL_error(L, "samples: %s", rtl_strerror(err));
	lua_newtable(L);   /* the list, sorted */
	lua_pushnil(L);
	while (lua_next(L, 3)) {
		lua_seti(L, 4, luaL_len(L, 4) + 1);
	}
	lua_getglobal(L, "table");
	lua_getfield(L, -1, "sort");
	lua_pushvalue(L, 4);
	lua_pushcfunction(L, by_seconds);
	lua_call(L, 2, 0);
	lua_pop(L, 1);
	return 1;
}

static int l_functions(lua_State *L)
{
	rtl_profile *p = check_profile(L);
	int all = lua_toboolean(L, 2);
	lua_settop(L, 1);
	lua_newtable(L);
	int err = rtl_profile_foreach_function(p, all, add_function, L);
	if (err)
		return luaL_error(L, "functions: %s", rtl_strerror(err));
	return 1;
}

/* ---- Reports: to a string, or to a file */

/* Runs WRITE into a memory stream and pushes what it wrote. */
static int push_written(lua_State *L, int (*write)(void *ctx, FILE *out), void *ctx, const char *what)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *mem = open_memstream(&buf, &len);
	if (!mem)
		return luaL_error(L, "%s: %s", what, strerror(errno));
	int err = write(ctx, mem);
	fclose(mem);
	if (err) {
		free(buf);
		return script_fail(L, what, err);
	}
	lua_pushlstring(L, buf, len);
	free(buf);
	return 1;
}

/* WRITE's document: the string, or written to PATH (when not NULL; a
 * failed write leaves no file) and true. */
static int report_out(lua_State *L, const char *path, int (*write)(void *ctx, FILE *out), void *ctx,
		      const char *what)
{
	if (!path)
		return push_written(L, write, ctx, what);
	FILE *f = fopen(path, "w");
	if (!f)
		return luaL_error(L, "%s: %s: %s", what, path, strerror(errno));
	int err = write(ctx, f);
	if (fclose(f) && !err)
		err = -errno;
	if (err) {
		remove(path);
		return luaL_error(L, "%s: %s: %s", what, path, rtl_strerror(err));
	}
	lua_pushboolean(L, 1);
	return 1;
}

/* Options from the table at IDX (nil: the defaults); its strings live
 * while the table is on the stack. */
static rtl_report_options check_options(lua_State *L, int idx)
{
	rtl_report_options o = { 0 };
	if (lua_isnoneornil(L, idx))
		return o;
	luaL_checktype(L, idx, LUA_TTABLE);
	int64_t top = script_opt_int(L, idx, "top", 0);
	if (top < 0)
		luaL_error(L, "field 'top': a count expected, got %I", (lua_Integer)top);
	o.top = (unsigned long)top;
	o.all = flag_field(L, idx, "all");
	o.no_demangle = flag_field(L, idx, "no_demangle");
	o.module = script_opt_str(L, idx, "module", NULL);
	o.inlined = flag_field(L, idx, "inlined");
	o.samples = flag_field(L, idx, "samples");
	return o;
}

typedef int (*report_fn)(rtl_profile *p, const rtl_report_options *o, FILE *out);

struct report_call {
	rtl_profile *p, *b;
	int format;
	rtl_report_options o;
	report_fn fn;
	const char *function;
	int disasm;
};

static int write_fn(void *ctx, FILE *out)
{
	struct report_call *c = ctx;
	return c->fn(c->p, &c->o, out);
}

static int write_format(void *ctx, FILE *out)
{
	struct report_call *c = ctx;
	return rtl_report_write(c->p, c->format, &c->o, out);
}

static int write_diff(void *ctx, FILE *out)
{
	struct report_call *c = ctx;
	return rtl_report_diff(c->p, c->b, &c->o, out);
}

static int write_tree(void *ctx, FILE *out)
{
	struct report_call *c = ctx;
	return rtl_report_tree(c->p, out);
}

static int write_annotate(void *ctx, FILE *out)
{
	struct report_call *c = ctx;
	return rtl_report_annotate(c->p, c->function, c->disasm, out);
}

/* The writers of one profile and options: reticle.report_NAME(p, o [, path]). */
static const struct {
	const char *name;
	report_fn fn;
} writers[] = {
	{ "report_text", rtl_report_text }, { "report_json", rtl_report_json },
	{ "report_callgrind", rtl_report_callgrind }, { "report_lcov", rtl_report_lcov },
	{ "report_fdata", rtl_report_fdata }, { "report_folded", rtl_report_folded },
	{ "report_chrome", rtl_report_chrome }, { "report_pprof", rtl_report_pprof },
	{ "report_svg", rtl_report_svg }, { "report_cachegrind", rtl_report_cachegrind },
};

/* Upvalue 1: the index of the writer in writers[]. */
static int l_report_writer(lua_State *L)
{
	size_t w = (size_t)lua_tointeger(L, lua_upvalueindex(1));
	struct report_call c = { .p = check_profile(L), .o = check_options(L, 2), .fn = writers[w].fn };
	return report_out(L, luaL_optstring(L, 3, NULL), write_fn, &c, writers[w].name);
}

static int l_report_format_parse(lua_State *L)
{
	int format = rtl_report_format_parse(luaL_checkstring(L, 1));
	if (format < 0)
		return script_fail(L, "report_format_parse", format);
	lua_pushinteger(L, format);
	return 1;
}

static int l_report_write(lua_State *L)
{
	struct report_call c = { .p = check_profile(L), .format = check_int(L, 2), .o = check_options(L, 3) };
	return report_out(L, luaL_optstring(L, 4, NULL), write_format, &c, "report_write");
}

static int l_report_diff(lua_State *L)
{
	struct report_call c = { .p = check_profile(L), .b = check_profile_at(L, 2), .o = check_options(L, 3) };
	return report_out(L, luaL_optstring(L, 4, NULL), write_diff, &c, "report_diff");
}

static int l_report_tree(lua_State *L)
{
	struct report_call c = { .p = check_profile(L) };
	return report_out(L, luaL_optstring(L, 2, NULL), write_tree, &c, "report_tree");
}

static int l_report_annotate(lua_State *L)
{
	struct report_call c = { .p = check_profile(L), .function = luaL_checkstring(L, 2), .disasm = check_flag(L, 3) };
	return report_out(L, luaL_optstring(L, 4, NULL), write_annotate, &c, "report_annotate");
}

static int l_report(lua_State *L)
{
	const char *name = luaL_optstring(L, 2, "text");
	struct report_call c = { .p = check_profile(L), .format = rtl_report_format_parse(name) };
	if (c.format < 0)
		return luaL_error(L, "report: unknown format '%s'", name);
	return report_out(L, luaL_optstring(L, 3, NULL), write_format, &c, "report");
}

static int l_diff(lua_State *L)
{
	struct report_call c = { .p = check_profile(L), .b = check_profile_at(L, 2),
				 .o = { .top = (unsigned long)luaL_optinteger(L, 3, 20) } };
	return push_written(L, write_diff, &c, "diff");
}

/* ---- Errors and the log */

static int l_strerror(lua_State *L)
{
	lua_pushstring(L, rtl_strerror(check_int(L, 1)));
	return 1;
}

static int l_set_log_level(lua_State *L)
{
	rtl_set_log_level(check_int(L, 1));
	return 0;
}

/* The log goes to one Lua function, called on a thread of its own (the
 * caller's may be a coroutine that ends). libreticle may log from threads
 * other than the script's: those calls take the script's lock
 * (script_lock). The hook lives in the registry; its __gc (lua_close)
 * unhooks libreticle, which would otherwise call into a closed state. */
struct log_hook {
	lua_State *thread;
	pthread_t owner;   /* the script's thread */
};

static const char log_hook_key = 0, log_fn_key = 0;

static void log_to_lua(int level, const char *msg, void *user)
{
	struct log_hook *h = user;
	bool other = !pthread_equal(pthread_self(), h->owner);
	if (other)
		script_lock();
	lua_State *T = h->thread;
	lua_rawgetp(T, LUA_REGISTRYINDEX, &log_fn_key);
	lua_pushinteger(T, level);
	lua_pushstring(T, msg);
	script_call(T, 2, 0);   /* an error is kept: the next entry with callbacks raises it */
	if (other)
		script_unlock();
}

static int unhook_log(lua_State *L)
{
	(void)L;
	rtl_set_log(NULL, NULL);
	return 0;
}

/* The hook of this state, made the first time. */
static struct log_hook *log_hook(lua_State *L)
{
	if (lua_rawgetp(L, LUA_REGISTRYINDEX, &log_hook_key) == LUA_TNIL) {
		lua_pop(L, 1);
		struct log_hook *h = lua_newuserdatauv(L, sizeof(*h), 1);
		h->thread = lua_newthread(L);
		lua_setiuservalue(L, -2, 1);   /* the hook keeps its thread */
		h->owner = pthread_self();
		script_new_class(L, LOG_MT, NULL, unhook_log);
		luaL_setmetatable(L, LOG_MT);
		lua_pushvalue(L, -1);
		lua_rawsetp(L, LUA_REGISTRYINDEX, &log_hook_key);
	}
	struct log_hook *h = lua_touserdata(L, -1);
	lua_pop(L, 1);
	return h;
}

static int l_set_log(lua_State *L)
{
	if (lua_isnoneornil(L, 1)) {
		rtl_set_log(NULL, NULL);
		lua_pushnil(L);
	} else {
		luaL_checktype(L, 1, LUA_TFUNCTION);
		rtl_set_log(log_to_lua, log_hook(L));
		lua_pushvalue(L, 1);
	}
	lua_rawsetp(L, LUA_REGISTRYINDEX, &log_fn_key);
	return 0;
}

/* ---- The module */

static void set_constants(lua_State *L)
{
	static const struct { const char *name; int value; } constants[] = {
		{ "HAVE_CALLS", RTL_HAVE_CALLS }, { "HAVE_INSTRS", RTL_HAVE_INSTRS },
		{ "PROCESS_RUNNING", RTL_PROCESS_RUNNING }, { "PROFILE_SCHEMA_VERSION", RTL_PROFILE_SCHEMA_VERSION },
		{ "REPORT_TEXT", RTL_REPORT_TEXT }, { "REPORT_JSON", RTL_REPORT_JSON },
		{ "REPORT_CALLGRIND", RTL_REPORT_CALLGRIND }, { "REPORT_LCOV", RTL_REPORT_LCOV },
		{ "REPORT_FDATA", RTL_REPORT_FDATA }, { "REPORT_FOLDED", RTL_REPORT_FOLDED },
		{ "REPORT_CHROME", RTL_REPORT_CHROME }, { "REPORT_PPROF", RTL_REPORT_PPROF },
		{ "REPORT_SVG", RTL_REPORT_SVG }, { "REPORT_CACHEGRIND", RTL_REPORT_CACHEGRIND },
		{ "ERR_NOT_ELF", RTL_ERR_NOT_ELF }, { "ERR_WRONG_ARCH", RTL_ERR_WRONG_ARCH },
		{ "ERR_TRUNCATED", RTL_ERR_TRUNCATED }, { "ERR_BAD_ELF", RTL_ERR_BAD_ELF },
		{ "ERR_UNKNOWN_COLLECTOR", RTL_ERR_UNKNOWN_COLLECTOR }, { "ERR_BAD_OPTION", RTL_ERR_BAD_OPTION },
		{ "ERR_TARGET_LAUNCH", RTL_ERR_TARGET_LAUNCH }, { "ERR_PTRACE", RTL_ERR_PTRACE },
		{ "ERR_NO_SPACE", RTL_ERR_NO_SPACE }, { "ERR_DECODE", RTL_ERR_DECODE },
		{ "ERR_UNSUPPORTED", RTL_ERR_UNSUPPORTED }, { "ERR_STORE", RTL_ERR_STORE },
		{ "ERR_BAD_INPUT", RTL_ERR_BAD_INPUT }, { "ERR_NOT_PROFILE", RTL_ERR_NOT_PROFILE },
		{ "ERR_PROFILE_VERSION", RTL_ERR_PROFILE_VERSION }, { "ERR_PROFILE_CORRUPT", RTL_ERR_PROFILE_CORRUPT },
		{ "ERR_NO_SAMPLING", RTL_ERR_NO_SAMPLING }, { "ERR_TARGET_STOPPED", RTL_ERR_TARGET_STOPPED },
	};
	for (size_t i = 0; i < sizeof(constants) / sizeof(constants[0]); i++)
		script_set_int(L, constants[i].name, constants[i].value);
}

/* Entries that take a profile first: reticle.profile_NAME and p:NAME. */
static const luaL_Reg profile_entries[] = {
	{ "commit", l_commit }, { "close", l_close }, { "set_meta", l_set_meta }, { "get_meta", l_get_meta },
	{ "add_process", l_add_process }, { "add_module", l_add_module },
	{ "add_process_module", l_add_process_module }, { "add_function", l_add_function },
	{ "set_function_counts", l_set_function_counts }, { "add_block", l_add_block },
	{ "add_call", l_add_call }, { "add_branch", l_add_branch }, { "add_time", l_add_time },
	{ "add_context", l_add_context }, { "add_sample", l_add_sample }, { "add_signal_run", l_add_signal_run },
	{ "add_metric", l_add_metric }, { "get_totals", l_get_totals }, { "sample_unit", l_sample_unit },
	{ "select_process", l_select_process }, { "selected_process", l_selected_process },
	{ "foreach_function", l_foreach_function }, { "foreach_function_by_addr", l_foreach_function_by_addr },
	{ "foreach_meta", l_foreach_meta }, { "foreach_module", l_foreach_module },
	{ "foreach_block", l_foreach_block }, { "foreach_call", l_foreach_call },
	{ "foreach_branch", l_foreach_branch }, { "foreach_time", l_foreach_time },
	{ "foreach_context", l_foreach_context }, { "foreach_sample", l_foreach_sample },
	{ "foreach_signal_run", l_foreach_signal_run }, { "foreach_metric", l_foreach_metric },
	{ "foreach_process", l_foreach_process }, { "foreach_rank_count", l_foreach_rank_count },
	{ NULL, NULL },
};

static void add_profile_entries(lua_State *L)
{
	for (const luaL_Reg *r = profile_entries; r->name; r++) {
		lua_pushfstring(L, "profile_%s", r->name);
		lua_pushcfunction(L, r->func);
		lua_settable(L, -3);
	}
}

static void add_writers(lua_State *L)
{
	for (size_t i = 0; i < sizeof(writers) / sizeof(writers[0]); i++) {
		lua_pushinteger(L, (lua_Integer)i);
		lua_pushcclosure(L, l_report_writer, 1);
		lua_setfield(L, -2, writers[i].name);
	}
}

void script_open_profile(lua_State *L)
{
	static const luaL_Reg first_forms[] = {
		{ "totals", l_get_totals }, { "functions", l_functions }, { "meta", l_get_meta },
		{ "samples", l_samples }, { "report", l_report }, { NULL, NULL },
	};
	static const luaL_Reg funcs[] = {
		{ "profile_create", l_profile_create }, { "profile_open", l_profile_open },
		{ "profile_merge", l_profile_merge }, { "report_format_parse", l_report_format_parse },
		{ "report_write", l_report_write }, { "report_diff", l_report_diff },
		{ "report_tree", l_report_tree }, { "report_annotate", l_report_annotate },
		{ "strerror", l_strerror }, { "set_log", l_set_log }, { "set_log_level", l_set_log_level },
		{ "open", l_open }, { "diff", l_diff }, { "merge", l_merge }, { NULL, NULL },
	};
	script_new_class(L, PROFILE_MT, profile_entries, l_close);
	luaL_getmetatable(L, PROFILE_MT);
	lua_getfield(L, -1, "__index");
	luaL_setfuncs(L, first_forms, 0);
	lua_pop(L, 2);
	script_add_functions(L, funcs);
	add_profile_entries(L);
	add_writers(L);
	set_constants(L);
}
