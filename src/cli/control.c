/* Control files (reticle run -f FILE): Caliper's simplified model of a run,
 * a Lua 5.4 file of plain assignments,
 *
 *   application = "./a.out"
 *   arguments = { "-n", 10 }
 *   collect = { "fcount", "calltime" }
 *   output = "x.db"
 *
 * run in an environment of its own (strings, tables, math and os.getenv
 * to compute values with; nothing that writes or runs programs). Each
 * assignment is checked as it happens, so an unknown key or a value of
 * the wrong type is reported with its line. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>
#include "cli.h"
#include "control.h"

enum kind { STRING, STRINGS, STRING_OR_STRINGS, BOOLEAN, COUNT };

static const struct key {
	const char *name;
	enum kind kind;
	const char *what;
} keys[] = {
	{ "application", STRING, "the program to run (a path, or a name looked up in PATH)" },
	{ "arguments", STRINGS, "its arguments (strings or numbers)" },
	{ "collect", STRING_OR_STRINGS, "built-in collectors, as -c" },
	{ "collectors", STRINGS, "plug-ins, each \"./x.so[:ARGS]\" as --collector" },
	{ "output", STRING, "the profile, as -o" },
	{ "cold", BOOLEAN, "as --cold" },
	{ "stats", BOOLEAN, "as --stats" },
	{ "debug_dirs", STRINGS, "folders of separate debug files, as --debug-dir" },
	{ "freq", COUNT, "samples per second (the sample collector), as --freq" },
	{ "event", STRING, "what the sample collector samples on, as --event" },
	{ "modules", STRING_OR_STRINGS, "the modules measured (globs), as --modules" },
	{ "functions", STRING_OR_STRINGS, "the functions measured (globs), as --functions" },
	{ "from", STRING, "where counting starts (5s, call:NAME, fork, exec, dlopen, signal), as --from" },
	{ "to", STRING, "where it stops (+5s, call:NAME, ...), as --to" },
};

static const struct key *key_named(const char *name)
{
	for (size_t i = 0; i < sizeof(keys) / sizeof(*keys); i++)
		if (!strcmp(keys[i].name, name))
			return &keys[i];
	return NULL;
}

/* Raises an error at the assignment's line (level 1: the chunk whose
 * assignment called this metamethod). */
static int fail_here(lua_State *L, const char *fmt, const char *a, const char *b)
{
	luaL_where(L, 1);
	lua_pushfstring(L, fmt, a, b);
	lua_concat(L, 2);
	return lua_error(L);
}

/* Whether the value at IDX is a string, or (for arguments) a number,
 * which Lua turns into one. */
static int stringy(lua_State *L, int idx, int numbers)
{
	return lua_type(L, idx) == LUA_TSTRING || (numbers && lua_type(L, idx) == LUA_TNUMBER);
}

/* A sequence of strings: {"a", "b"} with no holes and nothing else. */
static int strings(lua_State *L, int idx, int numbers)
{
	if (!lua_istable(L, idx))
		return 0;
	lua_Integer n = luaL_len(L, idx), count = 0;
	for (lua_Integer i = 1; i <= n; i++) {
		lua_geti(L, idx, i);
		int ok = stringy(L, -1, numbers);
		lua_pop(L, 1);
		if (!ok)
			return 0;
	}
	lua_pushnil(L);
	while (lua_next(L, idx)) {
		lua_pop(L, 1);
		count++;
	}
	return count == n;
}

/* __newindex of the file's environment: env (1), key (2), value (3). */
static int assign(lua_State *L)
{
	const char *name = lua_type(L, 2) == LUA_TSTRING ? lua_tostring(L, 2) : "?";
	const struct key *k = key_named(name);
	if (!k) {
		char known[256];
		size_t used = 0;
		for (size_t i = 0; i < sizeof(keys) / sizeof(*keys) && used < sizeof(known); i++)
			used += (size_t)snprintf(known + used, sizeof(known) - used, "%s%s", i ? ", " : "",
						 keys[i].name);
		return fail_here(L, "unknown key '%s' (known: %s)", name, known);
	}
	int ok = lua_isnil(L, 3);
	switch (k->kind) {
	case STRING: ok |= lua_type(L, 3) == LUA_TSTRING; break;
	case STRINGS: ok |= strings(L, 3, !strcmp(name, "arguments")); break;
	case STRING_OR_STRINGS: ok |= lua_type(L, 3) == LUA_TSTRING || strings(L, 3, 0); break;
	case BOOLEAN: ok |= lua_isboolean(L, 3); break;
	case COUNT:
		ok |= lua_isinteger(L, 3) && lua_tointeger(L, 3) > 0 && lua_tointeger(L, 3) <= 1000000;
		break;
	}
	if (!ok)
		return fail_here(L, "%s: %s expected", name,
				 k->kind == STRING ? "a string" : k->kind == BOOLEAN ? "true or false" :
				 k->kind == COUNT ? "a whole number from 1 to 1000000" :
				 k->kind == STRINGS ? "a list of strings" : "a string or a list of strings");
	lua_rawset(L, 1);
	return 0;
}

/* The safe part of the standard library, for computing values. */
static void safe_globals(lua_State *L)
{
	static const char *const libs[] = { "string", "table", "math", "tostring", "tonumber", "ipairs",
					    "pairs", "type", "select" };
	lua_newtable(L);
	for (size_t i = 0; i < sizeof(libs) / sizeof(*libs); i++) {
		lua_getglobal(L, libs[i]);
		lua_setfield(L, -2, libs[i]);
	}
	lua_newtable(L);
	lua_getglobal(L, "os");
	lua_getfield(L, -1, "getenv");
	lua_setfield(L, -3, "getenv");
	lua_pop(L, 1);
	lua_setfield(L, -2, "os");
}

static char *dup_field(lua_State *L, int env, const char *name)
{
	lua_getfield(L, env, name);
	char *s = lua_isstring(L, -1) ? strdup(lua_tostring(L, -1)) : NULL;
	lua_pop(L, 1);
	return s;
}

/* NAME's list (or a lone string, as one item) into *OUT, *N. */
static int dup_list(lua_State *L, int env, const char *name, char ***out, size_t *n)
{
	lua_getfield(L, env, name);
	*out = NULL;
	*n = 0;
	if (lua_isnil(L, -1)) {
		lua_pop(L, 1);
		return 0;
	}
	lua_Integer len = lua_isstring(L, -1) ? 1 : luaL_len(L, -1);
	*out = calloc((size_t)len + 1, sizeof(char *));
	if (!*out)
		return -ENOMEM;
	for (lua_Integer i = 1; i <= len; i++) {
		if (lua_istable(L, -1))
			lua_geti(L, -1, i);
		else
			lua_pushvalue(L, -1);
		(*out)[i - 1] = strdup(lua_tostring(L, -1));
		lua_pop(L, 1);
		if (!(*out)[i - 1])
			return -ENOMEM;
		(*n)++;
	}
	lua_pop(L, 1);
	return 0;
}

int control_load(const char *path, struct run_control *c)
{
	memset(c, 0, sizeof(*c));
	c->cold = c->stats = -1;
	lua_State *L = luaL_newstate();
	if (!L)
		return -ENOMEM;
	luaL_openlibs(L);
	int err = 0;
	if (luaL_loadfilex(L, path, "t") != LUA_OK) {
		/* "cannot open F" or "F:LINE: syntax error" */
		cli_error("run: control file: %s", lua_tostring(L, -1));
		err = -EINVAL;
		goto out;
	}
	lua_newtable(L);                       /* the environment */
	int env = lua_gettop(L);
	lua_newtable(L);                       /* its metatable */
	safe_globals(L);
	lua_setfield(L, -2, "__index");
	lua_pushcfunction(L, assign);
	lua_setfield(L, -2, "__newindex");
	lua_setmetatable(L, env);
	lua_pushvalue(L, env);
	if (!lua_setupvalue(L, env - 1, 1))    /* the chunk's _ENV */
		lua_pop(L, 1);
	lua_pushvalue(L, env - 1);
	if (lua_pcall(L, 0, 0, 0) != LUA_OK) {
		cli_error("run: control file: %s", lua_tostring(L, -1));
		err = -EINVAL;
		goto out;
	}
	lua_getfield(L, env, "cold");
	c->cold = lua_isnil(L, -1) ? -1 : lua_toboolean(L, -1);
	lua_getfield(L, env, "stats");
	c->stats = lua_isnil(L, -1) ? -1 : lua_toboolean(L, -1);
	lua_pop(L, 2);
	lua_getfield(L, env, "freq");
	c->freq = lua_isinteger(L, -1) ? (unsigned)lua_tointeger(L, -1) : 0;
	lua_pop(L, 1);
	c->event = dup_field(L, env, "event");
	c->application = dup_field(L, env, "application");
	c->output = dup_field(L, env, "output");
	c->from = dup_field(L, env, "from");
	c->to = dup_field(L, env, "to");
	char **collect = NULL;
	size_t ncollect = 0;
	if ((err = dup_list(L, env, "arguments", &c->arguments, &c->narguments)) ||
	    (err = dup_list(L, env, "collectors", &c->plugins, &c->nplugins)) ||
	    (err = dup_list(L, env, "debug_dirs", &c->debug_dirs, &c->ndebug_dirs)) ||
	    (err = dup_list(L, env, "modules", &c->modules, &c->nmodules)) ||
	    (err = dup_list(L, env, "functions", &c->functions, &c->nfunctions)) ||
	    (err = dup_list(L, env, "collect", &collect, &ncollect)))
		goto out;
	if (collect) {
		size_t len = 1;
		for (size_t i = 0; i < ncollect; i++)
			len += strlen(collect[i]) + 1;
		c->collect = calloc(len, 1);
		for (size_t i = 0; c->collect && i < ncollect; i++) {
			if (i)
				strcat(c->collect, ",");
			strcat(c->collect, collect[i]);
		}
		for (size_t i = 0; i < ncollect; i++)
			free(collect[i]);
		free(collect);
		if (!c->collect)
			err = -ENOMEM;
	}
out:
	lua_close(L);
	if (err)
		control_free(c);
	return err;
}

static void free_list(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

void control_free(struct run_control *c)
{
	free(c->application);
	free(c->output);
	free(c->event);
	free(c->from);
	free(c->to);
	free(c->collect);
	free_list(c->modules, c->nmodules);
	free_list(c->functions, c->nfunctions);
	free_list(c->arguments, c->narguments);
	free_list(c->plugins, c->nplugins);
	free_list(c->debug_dirs, c->ndebug_dirs);
	memset(c, 0, sizeof(*c));
}
