/* The module table and the helpers every part shares (script.h). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE   /* a recursive mutex's initializer */
#endif
#include <pthread.h>
#include <string.h>
#include <reticle/error.h>
#include "script.h"

void **script_new_object(lua_State *L, const char *mt, void *ptr)
{
	void **box = lua_newuserdatauv(L, sizeof(*box), 1);
	*box = ptr;
	luaL_setmetatable(L, mt);
	return box;
}

void **script_check_box(lua_State *L, int idx, const char *mt)
{
	return luaL_checkudata(L, idx, mt);
}

void *script_check_object(lua_State *L, int idx, const char *mt)
{
	void **box = luaL_checkudata(L, idx, mt);
	if (!*box)
		luaL_argerror(L, idx, lua_pushfstring(L, "the %s is closed", mt));
	return *box;
}

void script_new_class(lua_State *L, const char *mt, const luaL_Reg *methods, lua_CFunction gc)
{
	luaL_newmetatable(L, mt);
	lua_newtable(L);
	if (methods)
		luaL_setfuncs(L, methods, 0);
	lua_setfield(L, -2, "__index");
	if (gc) {
		lua_pushcfunction(L, gc);
		lua_setfield(L, -2, "__gc");
	}
	lua_pop(L, 1);
}

void script_add_functions(lua_State *L, const luaL_Reg *fns)
{
	luaL_setfuncs(L, fns, 0);
}

int script_fail(lua_State *L, const char *what, int err)
{
	return luaL_error(L, "%s: %s", what, rtl_strerror(err));
}

void script_set_int(lua_State *L, const char *k, int64_t v)
{
	lua_pushinteger(L, (lua_Integer)v);
	lua_setfield(L, -2, k);
}

void script_set_uint(lua_State *L, const char *k, uint64_t v)
{
	lua_pushinteger(L, (lua_Integer)v);
	lua_setfield(L, -2, k);
}

void script_set_num(lua_State *L, const char *k, double v)
{
	lua_pushnumber(L, v);
	lua_setfield(L, -2, k);
}

void script_set_str(lua_State *L, const char *k, const char *v)
{
	if (!v)
		return;
	lua_pushstring(L, v);
	lua_setfield(L, -2, k);
}

void script_set_bool(lua_State *L, const char *k, bool v)
{
	lua_pushboolean(L, v);
	lua_setfield(L, -2, k);
}

const char **script_check_strings(lua_State *L, int idx, const char *what, bool numbers, size_t *n)
{
	idx = lua_absindex(L, idx);
	luaL_checktype(L, idx, LUA_TTABLE);
	lua_Integer len = luaL_len(L, idx);
	const char **v = lua_newuserdatauv(L, (size_t)(len + 1) * sizeof(*v), 1);
	int ud = lua_gettop(L);
	lua_newtable(L);   /* the numbers' strings */
	lua_setiuservalue(L, ud, 1);
	for (lua_Integer i = 1; i <= len; i++) {
		int type = lua_geti(L, idx, i);
		if (type == LUA_TNUMBER && numbers) {
			lua_getiuservalue(L, ud, 1);
			lua_insert(L, -2);
			lua_tostring(L, -1);
			lua_rawseti(L, -2, i);
			lua_rawgeti(L, -1, i);
			v[i - 1] = lua_tostring(L, -1);
			lua_pop(L, 2);
			continue;
		}
		if (type != LUA_TSTRING && what)
			luaL_error(L, "%s[%d]: a string expected, got %s", what, (int)i, luaL_typename(L, -1));
		if (type != LUA_TSTRING)
			luaL_argerror(L, idx, lua_pushfstring(L, "[%d] is not a string", (int)i));
		v[i - 1] = lua_tostring(L, -1);
		lua_pop(L, 1);   /* the list keeps it */
	}
	v[len] = NULL;
	*n = (size_t)len;
	return v;
}

/* Pushes field K of the table at IDX; whether it is there. */
static bool field(lua_State *L, int idx, const char *k)
{
	luaL_checktype(L, idx, LUA_TTABLE);
	if (lua_getfield(L, idx, k) != LUA_TNIL)
		return true;
	lua_pop(L, 1);
	return false;
}

int64_t script_opt_int(lua_State *L, int idx, const char *k, int64_t def)
{
	idx = lua_absindex(L, idx);
	if (!field(L, idx, k))
		return def;
	int ok;
	lua_Integer v = lua_tointegerx(L, -1, &ok);
	if (!ok)
		luaL_error(L, "field '%s': an integer expected, got %s", k, luaL_typename(L, -1));
	lua_pop(L, 1);
	return v;
}

double script_opt_num(lua_State *L, int idx, const char *k, double def)
{
	idx = lua_absindex(L, idx);
	if (!field(L, idx, k))
		return def;
	int ok;
	lua_Number v = lua_tonumberx(L, -1, &ok);
	if (!ok)
		luaL_error(L, "field '%s': a number expected, got %s", k, luaL_typename(L, -1));
	lua_pop(L, 1);
	return v;
}

/* The string stays referenced by the table: valid while the table is. */
const char *script_opt_str(lua_State *L, int idx, const char *k, const char *def)
{
	idx = lua_absindex(L, idx);
	if (!field(L, idx, k))
		return def;
	if (lua_type(L, -1) != LUA_TSTRING)
		luaL_error(L, "field '%s': a string expected, got %s", k, luaL_typename(L, -1));
	const char *v = lua_tostring(L, -1);
	lua_pop(L, 1);
	return v;
}

bool script_opt_bool(lua_State *L, int idx, const char *k, bool def)
{
	idx = lua_absindex(L, idx);
	if (!field(L, idx, k))
		return def;
	bool v = lua_toboolean(L, -1);
	lua_pop(L, 1);
	return v;
}

/* The registry key of a callback's kept error. */
static const char kept_error_key = 0;

int script_call(lua_State *L, int nargs, int nresults)
{
	if (lua_pcall(L, nargs, nresults, 0) == LUA_OK)
		return 0;
	lua_rawgetp(L, LUA_REGISTRYINDEX, &kept_error_key);
	bool first = lua_isnil(L, -1);
	lua_pop(L, 1);
	if (first)   /* the first error is the one to tell */
		lua_rawsetp(L, LUA_REGISTRYINDEX, &kept_error_key);
	else
		lua_pop(L, 1);
	return -1;
}

int script_rethrow(lua_State *L)
{
	if (lua_rawgetp(L, LUA_REGISTRYINDEX, &kept_error_key) == LUA_TNIL) {
		lua_pop(L, 1);
		return 0;
	}
	lua_pushnil(L);
	lua_rawsetp(L, LUA_REGISTRYINDEX, &kept_error_key);
	return lua_error(L);
}

/* recursive: a collector's plan() may be called on the script's own
 * thread, from an entry the script called (rtl_collector_check) */
static pthread_mutex_t state_lock = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;

void script_lock(void)
{
	pthread_mutex_lock(&state_lock);
}

void script_unlock(void)
{
	pthread_mutex_unlock(&state_lock);
}

int script_open_reticle(lua_State *L)
{
	lua_newtable(L);
	script_open_binary(L);
	script_open_cachesim(L);
	script_open_sim(L);
	script_open_profile(L);
	script_open_session(L);
	script_open_collector(L);
	script_open_cli(L);
	lua_pushstring(L, "reticle 0.1.0");
	lua_setfield(L, -2, "version");
	return 1;
}
