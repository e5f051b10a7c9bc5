/* reticle/profile.h, report.h and error.h in Lua (script.h), and the
 * shorter forms scripts had first:
 *
 *   reticle.open(path)                -> a profile, or an error
 *     p:totals()                      -> { functions, counted, calls, instrs, ... }
 *     p:functions([all])              -> { {name, module, addr, size, calls, instrs}, ... }
 *     p:samples()                     -> { {name, module, samples, seconds}, ... } by seconds
 *     p:meta(key)                     -> string or nil
 *     p:report(format [, output])     -> the report as a string, or written to output
 *     p:close()
 *   reticle.diff(a, b [, top])        -> `reticle diff`'s text
 *   reticle.merge(output, {inputs})   -> true */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <reticle/error.h>
#include <reticle/profile.h>
#include <reticle/report.h>
#include "script.h"

#define PROFILE_MT "reticle.profile"

static rtl_profile **check_profile(lua_State *L)
{
	rtl_profile **p = luaL_checkudata(L, 1, PROFILE_MT);
	if (!*p)
		luaL_error(L, "the profile is closed");
	return p;
}

static int l_open(lua_State *L)
{
	const char *path = luaL_checkstring(L, 1);
	rtl_profile **p = lua_newuserdatauv(L, sizeof(*p), 0);
	*p = NULL;
	luaL_setmetatable(L, PROFILE_MT);
	int err = rtl_profile_open(path, p);
	if (err)
		return luaL_error(L, "reticle.open: %s: %s", path, rtl_strerror(err));
	return 1;
}

static int l_close(lua_State *L)
{
	rtl_profile **p = luaL_checkudata(L, 1, PROFILE_MT);
	rtl_profile_close(*p);
	*p = NULL;
	return 0;
}

static int l_totals(lua_State *L)
{
	rtl_profile_totals t;
	int err = rtl_profile_get_totals(*check_profile(L), &t);
	if (err)
		return luaL_error(L, "totals: %s", rtl_strerror(err));
	lua_createtable(L, 0, 9);
	script_set_uint(L, "functions", t.functions);
	script_set_uint(L, "counted", t.counted);
	script_set_uint(L, "calls", t.calls);
	script_set_uint(L, "instrs", t.instrs);
	script_set_uint(L, "modules", t.modules);
	script_set_uint(L, "blocks", t.blocks);
	script_set_uint(L, "call_sites", t.call_sites);
	script_set_uint(L, "processes", t.processes);
	return 1;
}

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
	rtl_profile *p = *check_profile(L);
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
	rtl_profile *p = *check_profile(L);
	int all = lua_toboolean(L, 2);
	lua_settop(L, 1);
	lua_newtable(L);
	int err = rtl_profile_foreach_function(p, all, add_function, L);
	if (err)
		return luaL_error(L, "functions: %s", rtl_strerror(err));
	return 1;
}

static int l_meta(lua_State *L)
{
	const char *v = rtl_profile_get_meta(*check_profile(L), luaL_checkstring(L, 2));
	if (v)
		lua_pushstring(L, v);
	else
		lua_pushnil(L);
	return 1;
}

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
		return luaL_error(L, "%s: %s", what, rtl_strerror(err));
	}
	lua_pushlstring(L, buf, len);
	free(buf);
	return 1;
}

struct report_call { rtl_profile *p; int format; rtl_report_options o; };

static int write_report(void *ctx, FILE *out)
{
	struct report_call *c = ctx;
	return rtl_report_write(c->p, c->format, &c->o, out);
}

static int l_report(lua_State *L)
{
	struct report_call c = { *check_profile(L), rtl_report_format_parse(luaL_optstring(L, 2, "text")), { 0 } };
	if (c.format < 0)
		return luaL_error(L, "report: unknown format '%s'", luaL_optstring(L, 2, "text"));
	const char *path = luaL_optstring(L, 3, NULL);
	if (!path)
		return push_written(L, write_report, &c, "report");
	FILE *f = fopen(path, "w");
	if (!f)
		return luaL_error(L, "report: %s: %s", path, strerror(errno));
	int err = write_report(&c, f);
	if (fclose(f) && !err)
		err = -errno;
	if (err) {
		remove(path);
		return luaL_error(L, "report: %s: %s", path, rtl_strerror(err));
	}
	lua_pushboolean(L, 1);
	return 1;
}

struct diff_call { rtl_profile *a, *b; rtl_report_options o; };

static int write_diff(void *ctx, FILE *out)
{
	struct diff_call *c = ctx;
	return rtl_report_diff(c->a, c->b, &c->o, out);
}

static int l_diff(lua_State *L)
{
	rtl_profile **a = luaL_checkudata(L, 1, PROFILE_MT), **b = luaL_checkudata(L, 2, PROFILE_MT);
	if (!*a || !*b)
		return luaL_error(L, "diff: a profile is closed");
	struct diff_call c = { *a, *b, { .top = (unsigned long)luaL_optinteger(L, 3, 20) } };
	return push_written(L, write_diff, &c, "diff");
}

static int l_merge(lua_State *L)
{
	const char *out = luaL_checkstring(L, 1);
	luaL_checktype(L, 2, LUA_TTABLE);
	const char *in[256];
	size_t n = 0;
	for (lua_Integer i = 1; i <= luaL_len(L, 2) && n < 256; i++) {
		lua_geti(L, 2, i);
		in[n++] = luaL_checkstring(L, -1);
		lua_pop(L, 1);
	}
	int err = rtl_profile_merge(out, in, n, NULL, NULL);
	if (err)
		return luaL_error(L, "merge: %s", rtl_strerror(err));
	lua_pushboolean(L, 1);
	return 1;
}

void script_open_profile(lua_State *L)
{
	static const luaL_Reg methods[] = {
		{ "totals", l_totals }, { "functions", l_functions }, { "meta", l_meta }, { "samples", l_samples },
		{ "report", l_report }, { "close", l_close }, { NULL, NULL },
	};
	static const luaL_Reg funcs[] = {
		{ "open", l_open }, { "diff", l_diff }, { "merge", l_merge }, { NULL, NULL },
	};
	script_new_class(L, PROFILE_MT, methods, l_close);
	script_add_functions(L, funcs);
}
