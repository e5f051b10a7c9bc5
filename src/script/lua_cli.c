/* reticle.run and reticle.attach: this reticle's `run` and `attach`
 * commands (warm start, rank naming and checks as on the command line),
 * for scripts that want the command line's behaviour rather than a
 * session of their own (reticle.session_create):
 *
 *   reticle.run{ program = {"./app", "x"}, collect = {"fcount"}, output = "p.db",
 *                cold = false, freq = 1000, event = "cpu-clock" }
 *                                     -> the program's exit status
 *   reticle.attach{ pid = N, duration = S, output = "p.db", freq = ..., event = ... }
 *                                     -> reticle attach's exit status */
#include <errno.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include "script.h"

extern char **environ;

/* The strings of table T's field KEY (a list, or one string), added to V
 * from *N on (at most MAX); what holds them is left on the stack. */
static int push_strings(lua_State *L, int t, const char *key, const char **v, size_t *n, size_t max)
{
	lua_getfield(L, t, key);
	if (lua_isstring(L, -1)) {   /* a number made a string on the stack, where it stays */
		if (*n < max)
			v[(*n)++] = lua_tostring(L, -1);
		return 0;
	}
	if (!lua_istable(L, -1)) {
		int nil = lua_isnil(L, -1);
		lua_pop(L, 1);
		return nil ? 0 : luaL_error(L, "%s: a string or a list of strings expected", key);
	}
	size_t len;
	const char **s = script_check_strings(L, -1, key, true, &len);   /* left on the stack: they live */
	for (size_t i = 0; i < len && *n < max; i++)
		v[(*n)++] = s[i];
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

void script_open_cli(lua_State *L)
{
	static const luaL_Reg fns[] = { { "run", l_run }, { "attach", l_attach }, { NULL, NULL } };
	script_add_functions(L, fns);
}
