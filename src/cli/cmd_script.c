/* reticle script FILE.lua [ARGS...]: tools written in Lua 5.4 on reticle.
 * The script gets the standard libraries, its arguments in `arg` (as the
 * lua interpreter gives them) and the module `reticle` (src/script/: the
 * public C API, docs/scripting.md). A Lua error ends the script with its
 * file and line, status 1. */
#include <string.h>
#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>
#include "cli.h"
#include "script/script.h"

int cmd_script(int argc, char **argv)
{
	if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		fputs("usage: reticle script FILE.lua [ARGS...]\n"
		      "\n"
		      "Runs a Lua 5.4 script with the standard libraries, ARGS in `arg` (arg[0]\n"
		      "is FILE) and the module `reticle` (also require \"reticle\"): the whole C\n"
		      "API of include/reticle/, rtl_NAME as reticle.NAME (docs/scripting.md):\n"
		      "  s = reticle.session_create{collectors = {\"fcount\"}, output = P,\n"
		      "      modules = {...}, functions = {...}, from = EDGE, to = EDGE}\n"
		      "  reticle.session_launch(s, {PATH, ARGS...}); reticle.session_run(s)\n"
		      "  reticle.collector{name = N, plan = fn(cfg, plan), finish = fn(f, profile)}\n"
		      "  reticle.profile_open(P), reticle.binary_open(P), reticle.sim_open(...) ...\n"
		      "and shorter forms: reticle.run{program = {PATH, ARGS...}, collect = {...},\n"
		      "output = P} runs 'reticle run'; reticle.open(P) a profile with p:totals(),\n"
		      "p:functions([all]), p:samples(), p:meta(key), p:report(format [, output]);\n"
		      "reticle.diff(a, b [, top]), reticle.merge(output, {inputs...}).\n"
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
	luaL_requiref(L, "reticle", script_open_reticle, 1);
	lua_pop(L, 1);
	lua_createtable(L, argc - 2, 1);   /* arg, as lua(1) makes it */
	for (int i = 1; i < argc; i++) {
		lua_pushstring(L, argv[i]);
		lua_seti(L, -2, i - 1);
	}
	lua_setglobal(L, "arg");
	int rc = 0;
	script_lock();   /* the script's thread runs Lua: its callbacks wait (script.h) */
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
	script_unlock();
	return rc;
}
