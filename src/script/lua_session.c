/* reticle/session.h in Lua (script.h); collectors and plans: lua_collector.c.
 *
 * Sessions
 *   reticle.session_create{ collectors = {"fcount", c, ...}, output = P, warm_cache = DIR,
 *       warm_cache_max = N, meta = {k = v}, sample_event = E, sample_freq = HZ,
 *       sample_stack = N, shim_period = N, caches = {SPEC...}, bbv_interval = N,
 *       bbv_path = P, memtrace_trace = P, memtrace_on = N, memtrace_off = N,
 *       memtrace_points = {N...}, memtrace_weights = {W...}, memtrace_interval = N,
 *       dynamic_probes = B, modules = {GLOB...}, functions = {GLOB...},
 *       from = EDGE, to = EDGE, memtrace_no_chain = B }   -> a session (names or collector objects)
 *   reticle.session_launch(s, {path, args...})
 *   reticle.session_attach(s, pid [, duration])
 *   reticle.session_run(s)                   -> the first process's exit status
 *   reticle.session_stop(s)
 *   reticle.session_live(s)                  -> { {pid, module, name, addr, calls, instrs, self, total}... }
 *   reticle.session_live_points(s)           -> { {pid, module, name, kind, op, id, key, value, seconds}... }
 *   reticle.session_reinstrument(s, want(module, name, addr) -> bool) -> copies made
 *   reticle.session_tsc_hz(s)                -> ticks per second
 *   reticle.session_on_tick(s, seconds, fn(s))
 *   reticle.session_tick_on_fd(s, fd)
 *   reticle.session_pid(s), reticle.session_profile_count(s),
 *   reticle.session_profile_path(s, i)       -> (i from 0, as in C)
 *   reticle.session_points_unreached(s)      -> SimPoint points no image reached
 *   reticle.session_stats(s)                 -> the fields of struct rtl_session_stats
 *   reticle.session_destroy(s)               (also when collected)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <reticle/collector.h>
#include <reticle/error.h>
#include <reticle/session.h>
#include "script.h"

#define SESSION_MT "reticle.session"

/* ---- sessions ---- */

struct lua_session {
	rtl_session *s;
	lua_State *L;             /* the main thread's state */
	int tick;                 /* registry ref of the on_tick function */
	int self;                 /* registry ref of the object while a tick can come */
	int want;                 /* reinstrument's function, during the call */
};

static struct lua_session *check_session(lua_State *L, int idx)
{
	struct lua_session *ls = luaL_checkudata(L, idx, SESSION_MT);
	if (!ls->s)
		luaL_argerror(L, idx, "the session is destroyed");
	return ls;
}

/* Strings of field K of table T (a list) into a NULL-ended array kept in
 * the object's user value table U under K. */
static const char *const *strings_field(lua_State *L, int t, const char *k, int u, size_t *n)
{
	*n = 0;
	if (lua_getfield(L, t, k) == LUA_TNIL) {
		lua_pop(L, 1);
		return NULL;
	}
	char what[64];
	snprintf(what, sizeof(what), "session_create: %s", k);
	const char **v = script_check_strings(L, -1, what, true, n);
	char key[64];
	snprintf(key, sizeof(key), "%s.array", k);
	lua_setfield(L, u, key);
	lua_setfield(L, u, k);   /* the list, which holds the strings */
	return v;
}

static int l_session_create(lua_State *L)
{
	luaL_checktype(L, 1, LUA_TTABLE);
	lua_settop(L, 1);
	lua_newtable(L);   /* 2: what the session's options point into */
	int u = 2;
	struct rtl_session_opts o = { .sz = sizeof(o) };
	const struct rtl_collector **colls = lua_newuserdatauv(L, 32 * sizeof(*colls), 0);
	lua_setfield(L, u, "collectors.array");
	if (lua_getfield(L, 1, "collectors") != LUA_TTABLE)
		return luaL_error(L, "session_create: collectors = {NAME or collector...} expected");
	lua_Integer nc = luaL_len(L, -1);
	for (lua_Integer i = 1; i <= nc && o.ncollectors < 32; i++) {
		lua_geti(L, -1, i);
		if (lua_type(L, -1) == LUA_TSTRING) {
			const struct rtl_collector *c = rtl_collector_find(lua_tostring(L, -1));
			if (!c)
				return luaL_error(L, "session_create: no collector '%s'", lua_tostring(L, -1));
			colls[o.ncollectors++] = c;
		} else {
			colls[o.ncollectors++] = script_check_collector(L, -1);
		}
		lua_pop(L, 1);
	}
	lua_setfield(L, u, "collectors");
	o.collectors = colls;
	o.output = script_opt_str(L, 1, "output", NULL);
	o.warm_cache = script_opt_str(L, 1, "warm_cache", NULL);
	o.warm_cache_max = (uint64_t)script_opt_int(L, 1, "warm_cache_max", 0);
	o.sample_event = script_opt_str(L, 1, "sample_event", NULL);
	o.sample_freq = (unsigned)script_opt_int(L, 1, "sample_freq", 0);
	o.sample_stack = (unsigned)script_opt_int(L, 1, "sample_stack", 0);
	o.shim_period = (unsigned)script_opt_int(L, 1, "shim_period", 0);
	o.bbv_interval = (uint64_t)script_opt_int(L, 1, "bbv_interval", 0);
	o.bbv_path = script_opt_str(L, 1, "bbv_path", NULL);
	o.memtrace_trace = script_opt_str(L, 1, "memtrace_trace", NULL);
	o.memtrace_on = (uint64_t)script_opt_int(L, 1, "memtrace_on", 0);
	o.memtrace_off = (uint64_t)script_opt_int(L, 1, "memtrace_off", 0);
	o.memtrace_interval = (uint64_t)script_opt_int(L, 1, "memtrace_interval", 0);
	o.dynamic_probes = script_opt_bool(L, 1, "dynamic_probes", false);
	o.memtrace_no_chain = script_opt_bool(L, 1, "memtrace_no_chain", false);
	o.from = script_opt_str(L, 1, "from", NULL);
	o.to = script_opt_str(L, 1, "to", NULL);
	size_t n;
	o.caches = strings_field(L, 1, "caches", u, &o.ncaches);
	o.modules = strings_field(L, 1, "modules", u, &n);
	o.functions = strings_field(L, 1, "functions", u, &n);
	/* meta: {key = value} pairs, as key, value, ..., NULL */
	if (lua_getfield(L, 1, "meta") == LUA_TTABLE) {
		size_t count = 0;
		for (lua_pushnil(L); lua_next(L, -2); lua_pop(L, 1))
			count++;
		const char **meta = lua_newuserdatauv(L, (2 * count + 1) * sizeof(*meta), 0);
		lua_newtable(L);   /* the values as strings */
		size_t k = 0;
		for (lua_pushnil(L); lua_next(L, -4); lua_pop(L, 1)) {
			if (lua_type(L, -2) != LUA_TSTRING || !lua_isstring(L, -1))
				return luaL_error(L, "session_create: meta: string keys and values expected");
			lua_pushvalue(L, -1);
			meta[k++] = lua_tostring(L, -3);
			meta[k++] = lua_tostring(L, -1);   /* a number made a string: kept below */
			lua_setfield(L, -4, meta[k - 2]);
		}
		meta[k] = NULL;
		o.meta = meta;
		lua_setfield(L, u, "meta.strings");
		lua_setfield(L, u, "meta.array");
	}
	lua_pop(L, 1);
	if (lua_getfield(L, 1, "memtrace_points") == LUA_TTABLE) {
		size_t np = (size_t)luaL_len(L, -1);
		uint64_t *pts = lua_newuserdatauv(L, (np ? np : 1) * sizeof(*pts), 0);
		double *wts = lua_newuserdatauv(L, (np ? np : 1) * sizeof(*wts), 0);
		lua_getfield(L, 1, "memtrace_weights");
		if (!lua_istable(L, -1) || (size_t)luaL_len(L, -1) != np)
			return luaL_error(L, "session_create: memtrace_weights: one per memtrace_points expected");
		for (size_t i = 0; i < np; i++) {
			lua_geti(L, -4, (lua_Integer)i + 1);
			pts[i] = (uint64_t)luaL_checkinteger(L, -1);
			lua_geti(L, -2, (lua_Integer)i + 1);
			wts[i] = luaL_checknumber(L, -1);
			lua_pop(L, 2);
		}
		lua_pop(L, 1);
		lua_setfield(L, u, "weights.array");
		lua_setfield(L, u, "points.array");
		o.memtrace_points = pts;
		o.memtrace_weights = wts;
		o.memtrace_npoints = np;
	}
	lua_pop(L, 1);
	struct lua_session *ls = lua_newuserdatauv(L, sizeof(*ls), 1);
	*ls = (struct lua_session){ NULL, NULL, LUA_NOREF, LUA_NOREF, LUA_NOREF };
	luaL_setmetatable(L, SESSION_MT);
	lua_pushvalue(L, u);   /* the collectors stay alive with it */
	lua_setiuservalue(L, -2, 1);
	lua_rawgeti(L, LUA_REGISTRYINDEX, LUA_RIDX_MAINTHREAD);
	ls->L = lua_tothread(L, -1);
	lua_pop(L, 1);
	int err = rtl_session_create(&o, &ls->s);
	script_rethrow(L);   /* a Lua collector's plan() failed its check */
	if (err)
		return script_fail(L, "session_create", err);
	return 1;
}

static int l_session_destroy(lua_State *L)
{
	struct lua_session *ls = luaL_checkudata(L, 1, SESSION_MT);
	script_unlock();   /* a copy being planned ahead, by a collector in Lua, finishes */
	rtl_session_destroy(ls->s);
	script_lock();
	ls->s = NULL;
	luaL_unref(L, LUA_REGISTRYINDEX, ls->tick);
	luaL_unref(L, LUA_REGISTRYINDEX, ls->self);
	ls->tick = ls->self = LUA_NOREF;
	return 0;
}

static int l_session_launch(lua_State *L)
{
	struct lua_session *ls = check_session(L, 1);
	size_t n;
	char **argv = (char **)script_check_strings(L, 2, "session_launch: argv", true, &n);
	if (n < 1)
		return luaL_error(L, "session_launch: {PROGRAM, ARGS...} expected");
	script_unlock();
	int err = rtl_session_launch(ls->s, argv);
	script_lock();
	script_rethrow(L);
	if (err)
		return luaL_error(L, "session_launch: %s: %s", argv[0], rtl_strerror(err));
	return 0;
}

static int l_session_attach(lua_State *L)
{
	struct lua_session *ls = check_session(L, 1);
	lua_Integer pid = luaL_checkinteger(L, 2);
	double duration = luaL_optnumber(L, 3, 0);
	script_unlock();
	int err = rtl_session_attach(ls->s, (pid_t)pid, duration);
	script_lock();
	script_rethrow(L);
	if (err)
		return luaL_error(L, "session_attach: pid %d: %s", (int)pid, rtl_strerror(err));
	return 0;
}

static int l_session_run(lua_State *L)
{
	struct lua_session *ls = check_session(L, 1);
	int status = 0;
	lua_pushvalue(L, 1);   /* alive while ticks come */
	ls->self = luaL_ref(L, LUA_REGISTRYINDEX);
	script_unlock();
	int err = rtl_session_run(ls->s, &status);
	script_lock();
	luaL_unref(L, LUA_REGISTRYINDEX, ls->self);
	ls->self = LUA_NOREF;
	script_rethrow(L);   /* a callback's error */
	if (err)
		return script_fail(L, "session_run", err);
	lua_pushinteger(L, status);
	return 1;
}

static int l_session_stop(lua_State *L)
{
	rtl_session_stop(check_session(L, 1)->s);
	return 0;
}

static int l_session_live(lua_State *L)
{
	struct rtl_live_count *v;
	size_t n = rtl_session_live(check_session(L, 1)->s, &v);
	lua_createtable(L, (int)n, 0);
	for (size_t i = 0; i < n; i++) {
		lua_createtable(L, 0, 8);
		script_set_int(L, "pid", v[i].pid);
		script_set_str(L, "module", v[i].module);
		script_set_str(L, "name", v[i].name);
		script_set_uint(L, "addr", v[i].addr);
		script_set_uint(L, "calls", v[i].calls);
		script_set_uint(L, "instrs", v[i].instrs);
		script_set_num(L, "self", v[i].self);
		script_set_num(L, "total", v[i].total);
		lua_seti(L, -2, (lua_Integer)i + 1);
	}
	free(v);
	return 1;
}

static int l_session_live_points(lua_State *L)
{
	struct rtl_live_point *v;
	size_t n = rtl_session_live_points(check_session(L, 1)->s, &v);
	lua_createtable(L, (int)n, 0);
	for (size_t i = 0; i < n; i++) {
		lua_createtable(L, 0, 9);
		script_set_int(L, "pid", v[i].pid);
		script_set_str(L, "module", v[i].module);
		script_set_str(L, "name", v[i].name);
		script_set_int(L, "kind", v[i].kind);
		script_set_int(L, "op", v[i].op);
		script_set_int(L, "id", v[i].id);
		script_set_int(L, "key", v[i].key);
		script_set_uint(L, "value", v[i].value);
		script_set_num(L, "seconds", v[i].seconds);
		lua_seti(L, -2, (lua_Integer)i + 1);
	}
	free(v);
	return 1;
}

static bool call_want(const char *module, const char *name, uint64_t addr, void *ctx)
{
	struct lua_session *ls = ctx;
	lua_State *L = ls->L;
	lua_rawgeti(L, LUA_REGISTRYINDEX, ls->want);
	lua_pushstring(L, module);
	lua_pushstring(L, name);
	lua_pushinteger(L, (lua_Integer)addr);
	if (script_call(L, 3, 1))
		return false;
	bool want = lua_toboolean(L, -1);
	lua_pop(L, 1);
	return want;
}

static int l_session_reinstrument(lua_State *L)
{
	struct lua_session *ls = check_session(L, 1);
	luaL_checktype(L, 2, LUA_TFUNCTION);
	lua_pushvalue(L, 2);
	ls->want = luaL_ref(L, LUA_REGISTRYINDEX);
	long n = rtl_session_reinstrument(ls->s, call_want, ls);
	luaL_unref(L, LUA_REGISTRYINDEX, ls->want);
	ls->want = LUA_NOREF;
	script_rethrow(L);
	if (n < 0)
		return script_fail(L, "session_reinstrument", (int)n);
	lua_pushinteger(L, n);
	return 1;
}

static int l_session_tsc_hz(lua_State *L)
{
	lua_pushnumber(L, rtl_session_tsc_hz(check_session(L, 1)->s));
	return 1;
}

/* A tick, from inside rtl_session_run: the script's function with the
 * session; an error in it stops an attached run and is raised when
 * session_run returns. */
static void on_tick(rtl_session *s, void *ctx)
{
	struct lua_session *ls = ctx;
	script_lock();
	lua_State *L = ls->L;
	int top = lua_gettop(L);
	lua_rawgeti(L, LUA_REGISTRYINDEX, ls->tick);
	lua_rawgeti(L, LUA_REGISTRYINDEX, ls->self);
	if (script_call(L, 1, 0))
		rtl_session_stop(s);
	lua_settop(L, top);
	script_unlock();
}

static int l_session_on_tick(lua_State *L)
{
	struct lua_session *ls = check_session(L, 1);
	double seconds = luaL_checknumber(L, 2);
	luaL_checktype(L, 3, LUA_TFUNCTION);
	lua_pushvalue(L, 3);
	luaL_unref(L, LUA_REGISTRYINDEX, ls->tick);
	ls->tick = luaL_ref(L, LUA_REGISTRYINDEX);
	int err = rtl_session_on_tick(ls->s, seconds, on_tick, ls);
	if (err)
		return script_fail(L, "session_on_tick", err);
	return 0;
}

static int l_session_tick_on_fd(lua_State *L)
{
	struct lua_session *ls = check_session(L, 1);
	int err = rtl_session_tick_on_fd(ls->s, (int)luaL_checkinteger(L, 2));
	if (err)
		return script_fail(L, "session_tick_on_fd", err);
	return 0;
}

static int l_session_pid(lua_State *L)
{
	lua_pushinteger(L, rtl_session_pid(check_session(L, 1)->s));
	return 1;
}

static int l_session_profile_count(lua_State *L)
{
	lua_pushinteger(L, (lua_Integer)rtl_session_profile_count(check_session(L, 1)->s));
	return 1;
}

static int l_session_profile_path(lua_State *L)
{
	struct lua_session *ls = check_session(L, 1);
	lua_Integer i = luaL_checkinteger(L, 2);
	const char *p = i >= 0 && (size_t)i < rtl_session_profile_count(ls->s)
				? rtl_session_profile_path(ls->s, (size_t)i) : NULL;
	lua_pushstring(L, p);
	return 1;
}

static int l_session_points_unreached(lua_State *L)
{
	lua_pushinteger(L, (lua_Integer)rtl_session_points_unreached(check_session(L, 1)->s));
	return 1;
}

static int l_session_stats(lua_State *L)
{
	struct rtl_session_stats st;
	rtl_session_stats(check_session(L, 1)->s, &st);
	lua_createtable(L, 0, 10);
	script_set_uint(L, "functions_instrumented", st.functions_instrumented);
	script_set_uint(L, "functions_skipped", st.functions_skipped);
	script_set_uint(L, "traps", st.traps);
	script_set_uint(L, "modules", st.modules);
	script_set_uint(L, "functions_warm", st.functions_warm);
	script_set_num(L, "instrument_seconds", st.instrument_seconds);
	script_set_uint(L, "copies_restored", st.copies_restored);
	script_set_uint(L, "copies_differing", st.copies_differing);
	script_set_uint(L, "profiles_failed", st.profiles_failed);
	script_set_uint(L, "processes", st.processes);
	return 1;
}

void script_open_session(lua_State *L)
{
	static const luaL_Reg session_methods[] = {
		{ "launch", l_session_launch }, { "attach", l_session_attach }, { "run", l_session_run },
		{ "stop", l_session_stop }, { "live", l_session_live }, { "live_points", l_session_live_points },
		{ "reinstrument", l_session_reinstrument }, { "tsc_hz", l_session_tsc_hz },
		{ "on_tick", l_session_on_tick }, { "tick_on_fd", l_session_tick_on_fd }, { "pid", l_session_pid },
		{ "profile_count", l_session_profile_count }, { "profile_path", l_session_profile_path },
		{ "points_unreached", l_session_points_unreached }, { "stats", l_session_stats },
		{ "destroy", l_session_destroy }, { NULL, NULL },
	};
	static const luaL_Reg fns[] = {
		{ "session_create", l_session_create }, { "session_destroy", l_session_destroy },
		{ "session_launch", l_session_launch }, { "session_attach", l_session_attach },
		{ "session_run", l_session_run }, { "session_stop", l_session_stop },
		{ "session_live", l_session_live }, { "session_live_points", l_session_live_points },
		{ "session_reinstrument", l_session_reinstrument }, { "session_tsc_hz", l_session_tsc_hz },
		{ "session_on_tick", l_session_on_tick }, { "session_tick_on_fd", l_session_tick_on_fd },
		{ "session_pid", l_session_pid },
		{ "session_profile_count", l_session_profile_count },
		{ "session_profile_path", l_session_profile_path }, { "session_stats", l_session_stats },
		{ "session_points_unreached", l_session_points_unreached }, { NULL, NULL },
	};
	script_new_class(L, SESSION_MT, session_methods, l_session_destroy);
	script_add_functions(L, fns);
}
