/* reticle script FILE.lua [ARGS...]: tools written in Lua 5.4 on reticle.
 * The script gets the standard libraries, its arguments in `arg` (as the
 * lua interpreter gives them) and a module `reticle`:
 *
 *   reticle.run{ program = {"./app", "x"}, collect = {"fcount"}, output = "p.db",
 *                cold = false, freq = 1000, event = "cpu-clock" }
 *                                     -> the program's exit status
 *   reticle.attach{ pid = N, duration = S, output = "p.db", freq = ..., event = ... }
 *                                     -> reticle attach's exit status
 *   reticle.open(path)                -> a profile, or an error
 *     p:totals()                      -> { functions, counted, calls, instrs, ... }
 *     p:functions([all])              -> { {name, module, addr, size, calls, instrs}, ... }
 *     p:samples()                     -> { {name, module, samples, seconds}, ... } by seconds
 *     p:meta(key)                     -> string or nil
 *     p:report(format [, output])     -> the report as a string, or written to output
 *     p:close()
 *   reticle.diff(a, b [, top])        -> `reticle diff`'s text
 *   reticle.merge(output, {inputs})   -> true
 *   reticle.version
 *
 * reticle.run and reticle.attach run this reticle's `run` and `attach`
 * commands (warm start, rank naming and checks as on the command line). A Lua error ends the script with
 * its file and line, status 1. */
#include <errno.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>
#include <reticle/error.h>
#include <reticle/profile.h>
#include <reticle/report.h>
#include "cli.h"

extern char **environ;

#define PROFILE_MT "reticle.profile"

/* The strings of table T's field KEY (a list, or one string), added to V
 * from *N on (at most MAX); the table keeps them alive. */
static int push_strings(lua_State *L, int t, const char *key, const char **v, size_t *n, size_t max)
{
	lua_getfield(L, t, key);
	if (lua_isstring(L, -1)) {
		if (*n < max)
			v[(*n)++] = lua_tostring(L, -1);
		lua_pop(L, 1);
		return 0;
	}
	if (!lua_istable(L, -1)) {
		int nil = lua_isnil(L, -1);
		lua_pop(L, 1);
		return nil ? 0 : luaL_error(L, "%s: a string or a list of strings expected", key);
	}
	lua_Integer len = luaL_len(L, -1);
	for (lua_Integer i = 1; i <= len && *n < max; i++) {
		lua_geti(L, -1, i);
		if (!lua_isstring(L, -1))
			return luaL_error(L, "%s[%d]: a string expected", key, (int)i);
		v[(*n)++] = lua_tostring(L, -1);
		/* the value stays referenced by the table: its string lives */
		lua_pop(L, 1);
	}
	lua_pop(L, 1);
	return 0;
}

/* The sample collector's options of table 1 (freq, event) as arguments
 * into ARGV (FREQ holds the number's text); how many. */
static size_t sample_options(lua_State *L, const char **argv, char freq[32])
{
	size_t n = 0;
	lua_getfield(L, 1, "freq");
	if (!lua_isnil(L, -1)) {
		snprintf(freq, 32, "%lld", (long long)luaL_checkinteger(L, -1));
		argv[n++] = "--freq";
		argv[n++] = freq;
	}
	lua_getfield(L, 1, "event");
	if (!lua_isnil(L, -1)) {
		argv[n++] = "--event";
		argv[n++] = luaL_checkstring(L, -1);
	}
	return n;
}

/* Runs ARGV (reticle's own command line) and pushes its exit status. */
static int spawn_self(lua_State *L, const char **argv, const char *what)
{
	pid_t pid;
	int err = posix_spawn(&pid, "/proc/self/exe", NULL, NULL, (char *const *)argv, environ);
	if (err)
		return luaL_error(L, "%s: %s", what, strerror(err));
	int status;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	lua_pushinteger(L, WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
	return 1;
}

/* reticle.attach{pid = N, duration = S, output = P, freq = HZ, event = E}:
 * samples a running process (reticle attach); its exit status. */
static int l_attach(lua_State *L)
{
	luaL_checktype(L, 1, LUA_TTABLE);
	const char *argv[16];
	char pid[32], dur[64], freq[32];
	size_t n = 0;
	argv[n++] = "reticle";
	argv[n++] = "attach";
	lua_getfield(L, 1, "duration");
	if (!lua_isnil(L, -1)) {
		snprintf(dur, sizeof(dur), "%.9g", (double)luaL_checknumber(L, -1));
		argv[n++] = "--duration";
		argv[n++] = dur;
	}
	lua_getfield(L, 1, "output");
	if (!lua_isnil(L, -1)) {
		argv[n++] = "-o";
		argv[n++] = luaL_checkstring(L, -1);
	}
	n += sample_options(L, argv + n, freq);
	lua_getfield(L, 1, "pid");
	snprintf(pid, sizeof(pid), "%lld", (long long)luaL_checkinteger(L, -1));
	argv[n++] = pid;
	argv[n] = NULL;
	return spawn_self(L, argv, "reticle.attach");
}

static int l_run(lua_State *L)
{
	luaL_checktype(L, 1, LUA_TTABLE);
	enum { MAX = 256 };
	const char *argv[MAX + 16];
	size_t n = 0;
	argv[n++] = "reticle";
	argv[n++] = "run";
	lua_getfield(L, 1, "collect");
	if (lua_istable(L, -1)) {   /* {"a", "b"}: "a,b" */
		int t = lua_gettop(L);
		lua_Integer len = luaL_len(L, t);
		luaL_checkstack(L, (int)(2 * len + 1), "collect");
		for (lua_Integer i = 1; i <= len; i++) {
			if (i > 1)
				lua_pushliteral(L, ",");
			lua_geti(L, t, i);
		}
		lua_concat(L, len ? (int)(2 * len - 1) : 0);
		lua_replace(L, t);
	}
	if (!lua_isnil(L, -1)) {
		argv[n++] = "-c";
		argv[n++] = luaL_checkstring(L, -1);
	}
	lua_getfield(L, 1, "output");
	if (!lua_isnil(L, -1)) {
		argv[n++] = "-o";
		argv[n++] = luaL_checkstring(L, -1);
	}
	lua_getfield(L, 1, "cold");
	if (lua_toboolean(L, -1))
		argv[n++] = "--cold";
	char freq[32];
	n += sample_options(L, argv + n, freq);
	argv[n++] = "--";
	size_t before = n;
	push_strings(L, 1, "program", argv, &n, MAX);
	if (n == before)
		return luaL_error(L, "reticle.run: program = {PATH, ARGS...} expected");
	argv[n] = NULL;
	return spawn_self(L, argv, "reticle.run");
}

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

static void set_int(lua_State *L, const char *k, uint64_t v)
{
	lua_pushinteger(L, (lua_Integer)v);
	lua_setfield(L, -2, k);
}

static int l_totals(lua_State *L)
{
	rtl_profile_totals t;
	int err = rtl_profile_get_totals(*check_profile(L), &t);
	if (err)
		return luaL_error(L, "totals: %s", rtl_strerror(err));
	lua_createtable(L, 0, 9);
	set_int(L, "functions", t.functions);
	set_int(L, "counted", t.counted);
	set_int(L, "calls", t.calls);
	set_int(L, "instrs", t.instrs);
	set_int(L, "modules", t.modules);
	set_int(L, "blocks", t.blocks);
	set_int(L, "call_sites", t.call_sites);
	set_int(L, "processes", t.processes);
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
	set_int(L, "addr", f->addr);
	set_int(L, "size", f->size);
	if (f->have & RTL_HAVE_CALLS)
		set_int(L, "calls", f->calls);
	if (f->have & RTL_HAVE_INSTRS)
		set_int(L, "instrs", f->instrs);
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
	set_int(L, "samples", (uint64_t)n);
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

static int open_module(lua_State *L)
{
	static const luaL_Reg methods[] = {
		{ "totals", l_totals }, { "functions", l_functions }, { "meta", l_meta }, { "samples", l_samples },
		{ "report", l_report }, { "close", l_close }, { NULL, NULL },
	};
	static const luaL_Reg funcs[] = {
		{ "run", l_run }, { "attach", l_attach }, { "open", l_open }, { "diff", l_diff },
		{ "merge", l_merge }, { NULL, NULL },
	};
	luaL_newmetatable(L, PROFILE_MT);
	luaL_newlib(L, methods);
	lua_setfield(L, -2, "__index");
	lua_pushcfunction(L, l_close);
	lua_setfield(L, -2, "__gc");
	lua_pop(L, 1);
	luaL_newlib(L, funcs);
	lua_pushstring(L, "reticle 0.1.0");
	lua_setfield(L, -2, "version");
	return 1;
}

int cmd_script(int argc, char **argv)
{
	if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		fputs("usage: reticle script FILE.lua [ARGS...]\n"
		      "\n"
		      "Runs a Lua 5.4 script with the standard libraries, ARGS in `arg` (arg[0]\n"
		      "is FILE) and the module `reticle` (also require \"reticle\"):\n"
		      "  reticle.run{program = {PATH, ARGS...}, collect = {...}, output = P, cold = B}\n"
		      "      runs 'reticle run', returns the program's exit status\n"
		      "  reticle.open(P): a profile, with p:totals(), p:functions([all]) (name,\n"
		      "      module, addr, size, calls, instrs), p:meta(key), p:report(format\n"
		      "      [, output]) (the text unless written to output), p:close()\n"
		      "  reticle.diff(a, b [, top]), reticle.merge(output, {inputs...}),\n"
		      "  reticle.version\n"
		      "Examples: examples/scripts/. A Lua error ends the script with its file\n"
		      "and line, status 1.\n", argc < 2 ? stderr : stdout);
		return argc < 2 ? CLI_EXIT_USAGE : 0;
	}
	lua_State *L = luaL_newstate();
	if (!L) {
		cli_error("script: out of memory");
		return CLI_EXIT_FAIL;
	}
	luaL_openlibs(L);
	luaL_requiref(L, "reticle", open_module, 1);
	lua_pop(L, 1);
	lua_createtable(L, argc - 2, 1);   /* arg, as lua(1) makes it */
	for (int i = 1; i < argc; i++) {
		lua_pushstring(L, argv[i]);
		lua_seti(L, -2, i - 1);
	}
	lua_setglobal(L, "arg");
	int rc = 0;
	if (luaL_loadfilex(L, argv[1], "t") != LUA_OK) {
		cli_error("script: %s", lua_tostring(L, -1));
		rc = CLI_EXIT_USAGE;
	} else {
		for (int i = 2; i < argc; i++)
			lua_pushstring(L, argv[i]);
		if (lua_pcall(L, argc - 2, 0, 0) != LUA_OK) {
			cli_error("script: %s", lua_tostring(L, -1));
			rc = CLI_EXIT_FAIL;
		}
	}
	lua_close(L);
	return rc;
}
