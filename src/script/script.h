/* The Lua module `reticle` (reticle script, src/cli/cmd_script.c): the
 * public C API of include/reticle/, every entry reachable from Lua.
 *
 * Naming: the C entry rtl_NAME is reticle.NAME, with the same arguments
 * in the same order less the out-parameters and the callback contexts
 * (returned values instead; a callback is a Lua function). An entry that
 * takes an object (rtl_binary, rtl_profile, rtl_sim...) takes its
 * userdata; objects also have the entries as methods without their prefix
 * (b:path() for reticle.binary_path(b)). C structs are Lua tables whose
 * fields have the C names. A negative error code raises a Lua error
 * "NAME: what rtl_strerror says" at the caller's line.
 *
 * Each part (one header of include/reticle/) is a file lua_PART.c whose
 * script_open_PART adds its functions to the module table on top of the
 * stack. */
#ifndef RETICLE_SCRIPT_H
#define RETICLE_SCRIPT_H

#include <stdbool.h>
#include <stdint.h>
#include <lauxlib.h>
#include <lua.h>

/* luaopen_reticle: the module (require "reticle"). */
int script_open_reticle(lua_State *L);

void script_open_binary(lua_State *L);
void script_open_cachesim(lua_State *L);   /* cachesim.h and simpoint.h */
void script_open_sim(lua_State *L);
void script_open_profile(lua_State *L);    /* profile.h, report.h, error.h */
void script_open_session(lua_State *L);    /* session.h */
void script_open_collector(lua_State *L);  /* collector.h, probe.h */
void script_open_cli(lua_State *L);        /* reticle.run/attach/open/diff/merge: the CLI's commands */

/* Objects: a userdata holding one pointer, of metatable MT (made by
 * script_new_class). A closed object holds NULL. */
void **script_new_object(lua_State *L, const char *mt, void *ptr);
/* The pointer of the object at IDX of class MT; an error if it is closed. */
void *script_check_object(lua_State *L, int idx, const char *mt);
/* The box itself (to close it: *box = NULL). */
void **script_check_box(lua_State *L, int idx, const char *mt);
/* Makes class MT: its __index holds METHODS, __gc calls GC (may be NULL),
 * __name is MT. */
void script_new_class(lua_State *L, const char *mt, const luaL_Reg *methods, lua_CFunction gc);
/* Adds FNS to the module table on top of the stack. */
void script_add_functions(lua_State *L, const luaL_Reg *fns);

/* The collector object at IDX (reticle.collector_find, reticle.collector). */
struct rtl_collector;
const struct rtl_collector *script_check_collector(lua_State *L, int idx);

/* The strings of the list at IDX as a NULL-ended array (*N of them), in a
 * userdata pushed on the stack, which keeps them alive with the list: a
 * number, where NUMBERS allows it, becomes a string the userdata holds
 * (lua_tostring's string of a copy would go with the copy). An error
 * names WHAT[i] for any other value (WHAT NULL: an argument error). */
const char **script_check_strings(lua_State *L, int idx, const char *what, bool numbers, size_t *n);

/* Raises "WHAT: rtl_strerror(ERR)" (ERR negative). */
int script_fail(lua_State *L, const char *what, int err);

/* Fields of the table on top of the stack. */
void script_set_int(lua_State *L, const char *k, int64_t v);
void script_set_uint(lua_State *L, const char *k, uint64_t v);   /* as an integer (wraps past 2^63) */
void script_set_num(lua_State *L, const char *k, double v);
void script_set_str(lua_State *L, const char *k, const char *v); /* NULL: not set */
void script_set_bool(lua_State *L, const char *k, bool v);
/* Field K of the table at IDX, with a default when absent (an error when
 * of the wrong type). */
int64_t script_opt_int(lua_State *L, int idx, const char *k, int64_t def);
double script_opt_num(lua_State *L, int idx, const char *k, double def);
const char *script_opt_str(lua_State *L, int idx, const char *k, const char *def);
bool script_opt_bool(lua_State *L, int idx, const char *k, bool def);

/* Calls the function at the top of the stack (with NARGS arguments above
 * it) from a C callback: an error in it is kept and re-raised when the C
 * entry that made the callback returns (script_rethrow), and the callback
 * returns -1 meanwhile. Returns 0 or -1. */
int script_call(lua_State *L, int nargs, int nresults);
/* Re-raises the error a callback kept, if any; else returns 0. */
int script_rethrow(lua_State *L);

/* Callbacks from threads other than the script's (a collector's plan(),
 * from the engine's planning thread): the state is used by one thread at
 * a time. The script's thread holds the lock while Lua runs and leaves it
 * inside entries that run a program (rtl_session_run...). */
void script_lock(void);
void script_unlock(void);

#endif
