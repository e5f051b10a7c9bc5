/* reticle/sim.h in Lua (script.h): the simulator of Sim-nML descriptions
 * and its ATOM-like instrumentation.
 *
 *   reticle.sim_isas()                             -> { "rv64", "mips32" }
 *   reticle.sim_open(isa|nil, argv [, envp])       -> sim (argv, envp: lists of strings)
 *   reticle.sim_open_program(isa|nil, path, argv [, envp]) -> sim
 *   reticle.sim_close(sim)                         (again: harmless)
 *   reticle.sim_run(sim)                           -> exit status (once per simulator)
 *   reticle.sim_message(sim)                       -> why the run stopped ("" if nothing to say)
 *   reticle.sim_interrupt(sim [, sig])             stop at the end of the current block, as
 *                                                    SIG (default SIGINT) would: sim_run fails
 *   reticle.sim_isa_name(sim)                      -> "rv64"...
 *
 *   Instrumentation, before the run; POS is reticle.SIM_BEFORE or SIM_AFTER:
 *   reticle.sim_add_call_by_name(sim, iname, pos, fn)   fn(sim, insn)
 *   reticle.sim_add_call(sim, addr, pos, fn)            fn(sim, insn)
 *   reticle.sim_add_block_call(sim, block, pos, fn)     fn(sim, insn)
 *   reticle.sim_add_proc_call(sim, proc, pos, fn)       fn(sim, insn) (SIM_BEFORE only)
 *   reticle.sim_add_mem_call(sim, fn)                   fn(sim, pc, addr, size, is_write)
 *   reticle.sim_add_trailer(sim, fn)                    fn(sim) at the end of the run
 *   reticle.sim_add_profile(sim, path [, command [, tool]]) -> result(): 1 until the run
 *                                   ends, then 0, or a negative error and its text
 *   reticle.sim_tool_builtin(sim, name [, file])    (a Lua file, open until the run ends;
 *                                                    nil: stderr)
 *
 *   The program's structure (objects owned by the simulator, equal when the same):
 *   reticle.sim_first_proc(sim), sim_next_proc(sim, proc)     -> proc or nil
 *   reticle.sim_find_proc(sim, name), sim_proc_at(sim, addr)  -> proc or nil
 *   reticle.sim_first_block(sim, proc), sim_next_block(sim, block) -> block or nil
 *   reticle.sim_proc_name(proc), sim_proc_addr(proc)
 *   reticle.sim_block_addr(block), sim_last_insn(block), sim_block_ninsns(block),
 *   reticle.sim_block_proc(block)                   -> proc
 *   reticle.sim_insn_addr(insn), sim_insn_len(insn), sim_insn_name(sim, insn)
 *   reticle.sim_insn_is_branch(insn), sim_insn_is_cond_branch(insn) -> boolean
 *   reticle.sim_disasm(sim, addr)                   -> text, length
 *   reticle.sim_insn_names(sim)                     -> { names of the description }
 *
 *   Machine state: reticle.sim_pc(sim), sim_icount(sim) -> integer;
 *   reticle.sim_reg(sim, file, index) -> value; reticle.sim_read_mem(sim, addr, n) -> string;
 *   reticle.sim_for_each_executed(sim, fn)          fn(sim, insn, count)
 *
 *   The core's services to generated simulators, on the simulator's running
 *   thread (the C entries take its cpu, which the API does not give out):
 *   reticle.sim_syscall(sim, pc, nr [, a0 ... a5]) -> the guest's result (-errno on failure)
 *   reticle.sim_trap(sim, pc, what)         stops the simulation ("WHAT at PC")
 *   reticle.sim_raise(sim, pc, sig)         kills the guest (status 128 + sig)
 *   reticle.sim_mem_access(sim, pc, addr, size, is_write)   calls the memory hooks
 *
 * Objects have the functions as methods without "sim_": s:run(), p:proc_name(),
 * b:block_addr(), i:insn_len(). An error in a Lua hook stops the run; sim_run
 * raises it. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/uio.h>
#include <unistd.h>
#include <reticle/error.h>
#include <reticle/sim.h>
#include "sim/machine.h"   /* a simulator's cpu, for the core's services */
#include "script.h"

#define SIM_MT "reticle.sim"
#define PROC_MT "reticle.sim_proc"
#define BLOCK_MT "reticle.sim_block"
#define INSN_MT "reticle.sim_insn"

/* Every entry that takes a simulator has it at index 1. Its user value is
 * its state table: the Lua values the C side holds (hook functions, profile
 * results, tool files) in its list part, found by index; "objs", a cache of
 * the objects made for the C pointers; "files", the tools' output files;
 * "ran", set by its run. */
#define SIM_ARG 1

/* An entry that calls C code which may call back into Lua: where the
 * callbacks find their functions. Entries nest (a hook may call one). */
struct calling {
	lua_State *L;
	struct rtl_sim *sim;
	int state, objs;           /* stack indices of the state table and its objs */
	int in_run;                /* an error stops the run */
	int failed;                /* a callback raised: no more Lua calls */
	struct calling *prev;
};
static struct calling *calling;

static struct rtl_sim *check_sim(lua_State *L, int idx)
{
	return script_check_object(L, idx, SIM_MT);
}

/* Pushes the state table of the simulator at IDX. */
static int push_state(lua_State *L, int idx)
{
	lua_getiuservalue(L, idx, 1);
	return lua_gettop(L);
}

/* Pushes the object cache of the simulator at index SIM_ARG. */
static int push_objs(lua_State *L)
{
	lua_getiuservalue(L, SIM_ARG, 1);
	lua_getfield(L, -1, "objs");
	lua_remove(L, -2);
	return lua_gettop(L);
}

/* Pushes the object of class MT for PTR (nil for NULL): one per pointer, so
 * that objects compare equal and a hook gets its instruction without an
 * allocation. Its user value is the simulator, which it keeps alive. */
static void push_object(lua_State *L, int objs, const void *ptr, const char *mt)
{
	if (!ptr) {
		lua_pushnil(L);
		return;
	}
	if (lua_rawgetp(L, objs, ptr) != LUA_TNIL)
		return;
	lua_pop(L, 1);
	script_new_object(L, mt, (void *)ptr);
	lua_pushvalue(L, SIM_ARG);
	lua_setiuservalue(L, -2, 1);
	lua_pushvalue(L, -1);
	lua_rawsetp(L, objs, ptr);
}

/* Returns the object for PTR, of the simulator at SIM_ARG. */
static int return_object(lua_State *L, const void *ptr, const char *mt)
{
	push_object(L, push_objs(L), ptr, mt);
	return 1;
}

/* The pointer of the proc, block or insn at IDX. Its simulator owns it: it
 * must be open and, when the entry takes one (WITH_SIM), be that one. */
static const void *check_part(lua_State *L, int idx, const char *mt, int with_sim)
{
	const void *p = script_check_object(L, idx, mt);
	lua_getiuservalue(L, idx, 1);
	if (with_sim && !lua_rawequal(L, -1, SIM_ARG))
		luaL_argerror(L, idx, "it belongs to another simulator");
	if (!*(void **)lua_touserdata(L, -1))
		luaL_argerror(L, idx, "its simulator is closed");
	lua_pop(L, 1);
	return p;
}

static enum rtl_sim_pos check_pos(lua_State *L, int idx)
{
	lua_Integer pos = luaL_checkinteger(L, idx);
	luaL_argcheck(L, pos == RTL_SIM_BEFORE || pos == RTL_SIM_AFTER, idx, "SIM_BEFORE or SIM_AFTER expected");
	return (enum rtl_sim_pos)pos;
}

/* A C int used as a flag: a boolean, or an integer (nonzero: true). */
static int check_flag(lua_State *L, int idx)
{
	if (lua_isboolean(L, idx))
		return lua_toboolean(L, idx);
	return luaL_checkinteger(L, idx) != 0;
}

/* Raises "WHAT: error: the simulator's explanation" (MSG may be empty). */
static int fail_with(lua_State *L, const char *what, int err, const char *msg)
{
	if (!*msg)
		return script_fail(L, what, err);
	return luaL_error(L, "%s: %s: %s", what, rtl_strerror(err), msg);
}

/* Adds the value at IDX to the state's list: its index, the callbacks' user. */
static void *keep(lua_State *L, int idx)
{
	int state = push_state(L, SIM_ARG);
	lua_Integer n = (lua_Integer)lua_rawlen(L, state) + 1;
	lua_pushvalue(L, idx);
	lua_rawseti(L, state, n);
	lua_pop(L, 1);
	return (void *)(intptr_t)n;
}

static void *keep_function(lua_State *L, int idx)
{
	luaL_checktype(L, idx, LUA_TFUNCTION);
	return keep(L, idx);
}

/* ---- calls back into Lua ---- */

static void enter(lua_State *L, struct calling *c, struct rtl_sim *sim, int in_run)
{
	*c = (struct calling){ L, sim, push_state(L, SIM_ARG), 0, in_run, 0, calling };
	lua_getfield(L, c->state, "objs");
	c->objs = lua_gettop(L);
	calling = c;
}

/* Leaves the entry; raises an error a callback kept. */
static void leave(lua_State *L, struct calling *c)
{
	calling = c->prev;
	script_rethrow(L);
}

/* The entry calling back for SIM_ARG, unless a callback failed in it. */
static struct calling *callback_of(struct rtl_sim *sim)
{
	struct calling *c = calling;
	return c && c->sim == sim && !c->failed ? c : NULL;
}

static int is_running(struct rtl_sim *sim)
{
	for (struct calling *c = calling; c; c = c->prev)
		if (c->sim == sim && c->in_run)
			return 1;
	return 0;
}

/* Calls the function set up with NARGS arguments; a failure ends the
 * callbacks of the entry, and the run when there is one. */
static void call_back(struct calling *c, int nargs)
{
	if (!script_call(c->L, nargs, 0))
		return;
	c->failed = 1;
	if (c->in_run)
		rtl_sim_trap(c->sim->cpu, c->sim->cpu->pc, "a Lua hook raised an error");
}

/* Runs for every hooked instruction: kept lean (no allocation once the
 * instruction has its object). */
static void on_insn(struct rtl_sim *sim, const struct rtl_sim_insn *insn, void *user)
{
	struct calling *c = callback_of(sim);
	if (!c)
		return;
	lua_rawgeti(c->L, c->state, (lua_Integer)(intptr_t)user);
	lua_pushvalue(c->L, SIM_ARG);
	push_object(c->L, c->objs, insn, INSN_MT);
	call_back(c, 2);
}

static void on_mem(struct rtl_sim *sim, uint64_t pc, uint64_t addr, unsigned size, int is_write, void *user)
{
	struct calling *c = callback_of(sim);
	if (!c)
		return;
	lua_rawgeti(c->L, c->state, (lua_Integer)(intptr_t)user);
	lua_pushvalue(c->L, SIM_ARG);
	lua_pushinteger(c->L, (lua_Integer)pc);
	lua_pushinteger(c->L, (lua_Integer)addr);
	lua_pushinteger(c->L, size);
	lua_pushboolean(c->L, is_write);
	call_back(c, 5);
}

static void on_trailer(struct rtl_sim *sim, void *user)
{
	struct calling *c = callback_of(sim);
	if (!c)
		return;
	lua_rawgeti(c->L, c->state, (lua_Integer)(intptr_t)user);
	lua_pushvalue(c->L, SIM_ARG);
	call_back(c, 1);
}

/* USER: the stack index of the function. */
static void on_count(struct rtl_sim *sim, const struct rtl_sim_insn *insn, uint64_t count, void *user)
{
	struct calling *c = callback_of(sim);
	if (!c)
		return;
	lua_pushvalue(c->L, (int)(intptr_t)user);
	lua_pushvalue(c->L, SIM_ARG);
	push_object(c->L, c->objs, insn, INSN_MT);
	lua_pushinteger(c->L, (lua_Integer)count);
	call_back(c, 3);
}

/* ---- lifetime ---- */

static int l_isas(lua_State *L)
{
	lua_newtable(L);
	for (const char *const *n = rtl_sim_isas(); *n; n++) {
		lua_pushstring(L, *n);
		lua_rawseti(L, -2, (lua_Integer)(n - rtl_sim_isas()) + 1);
	}
	return 1;
}

/* The strings of the list at IDX as a NULL-terminated array, in a userdata
 * left on the stack (script_check_strings); nil gives NULL. */
static char **check_strings(lua_State *L, int idx, int *count)
{
	if (lua_isnoneornil(L, idx)) {
		*count = 0;
		return NULL;
	}
	size_t n;
	char **v = (char **)script_check_strings(L, idx, NULL, false, &n);
	luaL_argcheck(L, n < INT32_MAX, idx, "too many strings");
	*count = (int)n;
	return v;
}

/* Opens a simulator into a new object; on failure the library still made
 * one, holding the explanation, which we close. */
static int open_sim(lua_State *L, const char *what, const char *isa, const char *path, int argc, char **argv,
		    char **envp)
{
	void **box = script_new_object(L, SIM_MT, NULL);
	lua_createtable(L, 0, 4);
	lua_newtable(L);
	lua_setfield(L, -2, "objs");
	lua_newtable(L);
	lua_setfield(L, -2, "files");
	lua_setiuservalue(L, -2, 1);
	struct rtl_sim *sim = NULL;
	int err = path ? rtl_sim_open_program(isa, path, argc, argv, envp, &sim)
		       : rtl_sim_open(isa, argc, argv, envp, &sim);
	if (err < 0) {
		lua_pushstring(L, sim ? rtl_sim_message(sim) : "");
		rtl_sim_close(sim);
		return fail_with(L, what, err, lua_tostring(L, -1));
	}
	*box = sim;
	return 1;
}

static int l_open(lua_State *L)
{
	const char *isa = luaL_optstring(L, 1, NULL);
	int argc, envc;
	luaL_checktype(L, 2, LUA_TTABLE);
	lua_settop(L, 3);   /* the arrays go above the arguments */
	char **argv = check_strings(L, 2, &argc), **envp = check_strings(L, 3, &envc);
	return open_sim(L, "sim_open", isa, NULL, argc, argv, envp);
}

static int l_open_program(lua_State *L)
{
	const char *isa = luaL_optstring(L, 1, NULL), *path = luaL_checkstring(L, 2);
	int argc, envc;
	luaL_checktype(L, 3, LUA_TTABLE);
	lua_settop(L, 4);
	char **argv = check_strings(L, 3, &argc), **envp = check_strings(L, 4, &envc);
	return open_sim(L, "sim_open_program", isa, path, argc, argv, envp);
}

/* Also __gc. Not while it runs: a hook would free the machine under it. */
static int l_close(lua_State *L)
{
	void **box = script_check_box(L, 1, SIM_MT);
	if (!*box)
		return 0;
	if (is_running(*box))
		return luaL_error(L, "sim_close: the simulator is running");
	rtl_sim_close(*box);
	*box = NULL;
	return 0;
}

/* The tools' output files must still be open: the library writes to them
 * at the end of the run. */
static void check_files(lua_State *L, int state)
{
	lua_getfield(L, state, "files");
	for (lua_Integer i = 1; lua_rawgeti(L, -1, i) != LUA_TNIL; i++) {
		if (!((luaL_Stream *)lua_touserdata(L, -1))->closef)
			luaL_error(L, "sim_run: the output file of a tool is closed");
		lua_pop(L, 1);
	}
	lua_pop(L, 2);
}

/* Leaves at once: the script and its files belong to the parent (atexit
 * handlers would remove their temporary files). */
static _Noreturn void exit_child(int status)
{
	fflush(NULL);
	_exit(status);
}

/* A second run would run the trailers again, which free their state. */
static int l_run(lua_State *L)
{
	struct rtl_sim *sim = check_sim(L, 1);
	lua_settop(L, 1);
	if (is_running(sim))
		return luaL_error(L, "sim_run: the simulator is running");
	int state = push_state(L, SIM_ARG);
	if (lua_getfield(L, state, "ran") != LUA_TNIL)
		return luaL_error(L, "sim_run: a simulator runs once");
	lua_pop(L, 1);
	check_files(L, state);
	lua_pushboolean(L, 1);
	lua_setfield(L, state, "ran");
	struct calling c;
	int status = 0;
	enter(L, &c, sim, 1);
	int err = rtl_sim_run(sim, &status);
	if (sim->forked_child)   /* a fork of the guest forked the script too: it ends with its guest */
		exit_child(status);
	leave(L, &c);
	if (err < 0)
		return fail_with(L, "sim_run", err, rtl_sim_message(sim));
	lua_pushinteger(L, status);
	return 1;
}

static int l_message(lua_State *L)
{
	lua_pushstring(L, rtl_sim_message(check_sim(L, 1)));
	return 1;
}

static int l_interrupt(lua_State *L)
{
	rtl_sim_interrupt(check_sim(L, 1), (int)luaL_optinteger(L, 2, 2 /* SIGINT */));
	return 0;
}

static int l_isa_name(lua_State *L)
{
	lua_pushstring(L, rtl_sim_isa_name(check_sim(L, 1)));   /* NULL: nil */
	return 1;
}

/* ---- instrumentation ---- */

static int added(lua_State *L, const char *what, int err)
{
	return err < 0 ? script_fail(L, what, err) : 0;
}

static int l_add_call_by_name(lua_State *L)
{
	struct rtl_sim *sim = check_sim(L, 1);
	const char *name = luaL_checkstring(L, 2);
	enum rtl_sim_pos pos = check_pos(L, 3);
	return added(L, "sim_add_call_by_name", rtl_sim_add_call_by_name(sim, name, pos, on_insn, keep_function(L, 4)));
}

static int l_add_call(lua_State *L)
{
	struct rtl_sim *sim = check_sim(L, 1);
	uint64_t addr = (uint64_t)luaL_checkinteger(L, 2);
	enum rtl_sim_pos pos = check_pos(L, 3);
	return added(L, "sim_add_call", rtl_sim_add_call(sim, addr, pos, on_insn, keep_function(L, 4)));
}

static int l_add_block_call(lua_State *L)
{
	struct rtl_sim *sim = check_sim(L, 1);
	const struct rtl_sim_block *b = check_part(L, 2, BLOCK_MT, 1);
	enum rtl_sim_pos pos = check_pos(L, 3);
	return added(L, "sim_add_block_call", rtl_sim_add_block_call(sim, b, pos, on_insn, keep_function(L, 4)));
}

static int l_add_proc_call(lua_State *L)
{
	struct rtl_sim *sim = check_sim(L, 1);
	const struct rtl_sim_proc *p = check_part(L, 2, PROC_MT, 1);
	enum rtl_sim_pos pos = check_pos(L, 3);
	return added(L, "sim_add_proc_call", rtl_sim_add_proc_call(sim, p, pos, on_insn, keep_function(L, 4)));
}

static int l_add_mem_call(lua_State *L)
{
	struct rtl_sim *sim = check_sim(L, 1);
	return added(L, "sim_add_mem_call", rtl_sim_add_mem_call(sim, on_mem, keep_function(L, 2)));
}

static int l_add_trailer(lua_State *L)
{
	struct rtl_sim *sim = check_sim(L, 1);
	return added(L, "sim_add_trailer", rtl_sim_add_trailer(sim, on_trailer, keep_function(L, 2)));
}

/* result(): the int the library writes at the end of the run (upvalue 1). */
static int profile_result(lua_State *L)
{
	int result = *(int *)lua_touserdata(L, lua_upvalueindex(1));
	lua_pushinteger(L, result);
	if (result >= 0)
		return 1;
	lua_pushstring(L, rtl_strerror(result));
	return 2;
}

/* The result's int lives in a userdata the simulator keeps: the library
 * writes it when the run ends. */
static int l_add_profile(lua_State *L)
{
	struct rtl_sim *sim = check_sim(L, 1);
	const char *path = luaL_checkstring(L, 2);
	const char *command = luaL_optstring(L, 3, NULL), *tool = luaL_optstring(L, 4, NULL);
	lua_settop(L, 4);
	int *result = lua_newuserdatauv(L, sizeof *result, 0);
	keep(L, 5);
	int err = rtl_sim_add_profile(sim, path, command, tool, result);
	if (err < 0)
		return script_fail(L, "sim_add_profile", err);
	lua_pushcclosure(L, profile_result, 1);
	return 1;
}

/* FILE: a Lua file, which the simulator keeps (not closed by the
 * collector; sim_run checks it is open); nil: the library's stderr. */
static int l_tool_builtin(lua_State *L)
{
	struct rtl_sim *sim = check_sim(L, 1);
	const char *name = luaL_checkstring(L, 2);
	FILE *out = NULL;
	if (!lua_isnoneornil(L, 3)) {
		luaL_Stream *s = luaL_checkudata(L, 3, LUA_FILEHANDLE);
		luaL_argcheck(L, s->closef, 3, "the file is closed");
		out = s->f;
	}
	int err = rtl_sim_tool_builtin(sim, name, out);
	if (err < 0)
		return script_fail(L, "sim_tool_builtin", err);
	if (out) {
		int state = push_state(L, SIM_ARG);
		lua_getfield(L, state, "files");
		lua_pushvalue(L, 3);
		lua_rawseti(L, -2, (lua_Integer)lua_rawlen(L, -2) + 1);
	}
	return 0;
}

/* ---- the program's structure ---- */

static int l_first_proc(lua_State *L)
{
	return return_object(L, rtl_sim_first_proc(check_sim(L, 1)), PROC_MT);
}

static int l_next_proc(lua_State *L)
{
	struct rtl_sim *sim = check_sim(L, 1);
	return return_object(L, rtl_sim_next_proc(sim, check_part(L, 2, PROC_MT, 1)), PROC_MT);
}

static int l_find_proc(lua_State *L)
{
	struct rtl_sim *sim = check_sim(L, 1);
	return return_object(L, rtl_sim_find_proc(sim, luaL_checkstring(L, 2)), PROC_MT);
}

static int l_proc_at(lua_State *L)
{
	struct rtl_sim *sim = check_sim(L, 1);
	return return_object(L, rtl_sim_proc_at(sim, (uint64_t)luaL_checkinteger(L, 2)), PROC_MT);
}

static int l_first_block(lua_State *L)
{
	struct rtl_sim *sim = check_sim(L, 1);
	return return_object(L, rtl_sim_first_block(sim, check_part(L, 2, PROC_MT, 1)), BLOCK_MT);
}

static int l_next_block(lua_State *L)
{
	struct rtl_sim *sim = check_sim(L, 1);
	return return_object(L, rtl_sim_next_block(sim, check_part(L, 2, BLOCK_MT, 1)), BLOCK_MT);
}

static int l_proc_name(lua_State *L)
{
	lua_pushstring(L, rtl_sim_proc_name(check_part(L, 1, PROC_MT, 0)));
	return 1;
}

static int l_proc_addr(lua_State *L)
{
	lua_pushinteger(L, (lua_Integer)rtl_sim_proc_addr(check_part(L, 1, PROC_MT, 0)));
	return 1;
}

static int l_block_addr(lua_State *L)
{
	lua_pushinteger(L, (lua_Integer)rtl_sim_block_addr(check_part(L, 1, BLOCK_MT, 0)));
	return 1;
}

static int l_last_insn(lua_State *L)
{
	lua_pushinteger(L, (lua_Integer)rtl_sim_last_insn(check_part(L, 1, BLOCK_MT, 0)));
	return 1;
}

static int l_block_ninsns(lua_State *L)
{
	lua_pushinteger(L, rtl_sim_block_ninsns(check_part(L, 1, BLOCK_MT, 0)));
	return 1;
}

/* The block's user value is its simulator: the proc's object comes from
 * that simulator's cache. */
static int l_block_proc(lua_State *L)
{
	const struct rtl_sim_proc *p = rtl_sim_block_proc(check_part(L, 1, BLOCK_MT, 0));
	lua_settop(L, 1);
	lua_getiuservalue(L, 1, 1);
	lua_replace(L, SIM_ARG);
	return return_object(L, p, PROC_MT);
}

/* ---- instructions ---- */

static int l_insn_addr(lua_State *L)
{
	lua_pushinteger(L, (lua_Integer)rtl_sim_insn_addr(check_part(L, 1, INSN_MT, 0)));
	return 1;
}

static int l_insn_len(lua_State *L)
{
	lua_pushinteger(L, rtl_sim_insn_len(check_part(L, 1, INSN_MT, 0)));
	return 1;
}

static int l_insn_name(lua_State *L)
{
	struct rtl_sim *sim = check_sim(L, 1);
	lua_pushstring(L, rtl_sim_insn_name(sim, check_part(L, 2, INSN_MT, 1)));
	return 1;
}

static int l_insn_is_branch(lua_State *L)
{
	lua_pushboolean(L, rtl_sim_insn_is_branch(check_part(L, 1, INSN_MT, 0)));
	return 1;
}

static int l_insn_is_cond_branch(lua_State *L)
{
	lua_pushboolean(L, rtl_sim_insn_is_cond_branch(check_part(L, 1, INSN_MT, 0)));
	return 1;
}

static int l_disasm(lua_State *L)
{
	struct rtl_sim *sim = check_sim(L, 1);
	uint64_t addr = (uint64_t)luaL_checkinteger(L, 2);
	char buf[128];
	int len = rtl_sim_disasm(sim, addr, buf, sizeof buf);
	if (len < 0)
		return script_fail(L, "sim_disasm", len);
	lua_pushstring(L, buf);
	lua_pushinteger(L, len);
	return 2;
}

static int l_insn_names(lua_State *L)
{
	const char *const *names;
	int n = rtl_sim_insn_names(check_sim(L, 1), &names);
	lua_createtable(L, n, 0);
	for (int i = 0; i < n; i++) {
		lua_pushstring(L, names[i]);
		lua_rawseti(L, -2, i + 1);
	}
	return 1;
}

/* ---- machine state ---- */

static int l_pc(lua_State *L)
{
	lua_pushinteger(L, (lua_Integer)rtl_sim_pc(check_sim(L, 1)));
	return 1;
}

static int l_icount(lua_State *L)
{
	lua_pushinteger(L, (lua_Integer)rtl_sim_icount(check_sim(L, 1)));
	return 1;
}

static int l_reg(lua_State *L)
{
	struct rtl_sim *sim = check_sim(L, 1);
	const char *file = luaL_checkstring(L, 2);
	lua_Integer index = luaL_checkinteger(L, 3);
	luaL_argcheck(L, index >= 0 && index <= UINT32_MAX, 3, "out of range");
	uint64_t value;
	int err = rtl_sim_reg(sim, file, (unsigned)index, &value);
	if (err < 0)
		return script_fail(L, "sim_reg", err);
	lua_pushinteger(L, (lua_Integer)value);
	return 1;
}

static int l_read_mem(lua_State *L)
{
	struct rtl_sim *sim = check_sim(L, 1);
	uint64_t addr = (uint64_t)luaL_checkinteger(L, 2);
	lua_Integer n = luaL_checkinteger(L, 3);
	luaL_argcheck(L, n >= 0, 3, "a size expected");
	luaL_Buffer b;
	char *buf = luaL_buffinitsize(L, &b, (size_t)n);
	int err = rtl_sim_read_mem(sim, addr, buf, (size_t)n);
	if (err < 0)
		return script_fail(L, "sim_read_mem", err);
	luaL_pushresultsize(&b, (size_t)n);
	return 1;
}

static int l_for_each_executed(lua_State *L)
{
	struct rtl_sim *sim = check_sim(L, 1);
	luaL_checktype(L, 2, LUA_TFUNCTION);
	lua_settop(L, 2);
	struct calling c;
	enter(L, &c, sim, 0);
	rtl_sim_for_each_executed(sim, on_count, (void *)(intptr_t)2);
	leave(L, &c);
	return 0;
}

/* ---- the core's services (the simulator's current cpu) ---- */

static int l_syscall(lua_State *L)
{
	struct rtl_sim *sim = check_sim(L, 1);
	uint64_t pc = (uint64_t)luaL_checkinteger(L, 2), nr = (uint64_t)luaL_checkinteger(L, 3), a[6];
	for (int i = 0; i < 6; i++)
		a[i] = (uint64_t)luaL_optinteger(L, 4 + i, 0);
	lua_pushinteger(L, rtl_sim_syscall(sim->cpu, pc, nr, a[0], a[1], a[2], a[3], a[4], a[5]));
	return 1;
}

static int l_trap(lua_State *L)
{
	struct rtl_sim *sim = check_sim(L, 1);
	rtl_sim_trap(sim->cpu, (uint64_t)luaL_checkinteger(L, 2), luaL_checkstring(L, 3));
	return 0;
}

static int l_raise(lua_State *L)
{
	struct rtl_sim *sim = check_sim(L, 1);
	rtl_sim_raise(sim->cpu, (uint64_t)luaL_checkinteger(L, 2), (uint64_t)luaL_checkinteger(L, 3));
	return 0;
}

static int l_mem_access(lua_State *L)
{
	struct rtl_sim *sim = check_sim(L, 1);
	uint64_t pc = (uint64_t)luaL_checkinteger(L, 2), addr = (uint64_t)luaL_checkinteger(L, 3);
	lua_Integer size = luaL_checkinteger(L, 4);
	luaL_argcheck(L, size >= 0 && size <= UINT32_MAX, 4, "out of range");
	int is_write = check_flag(L, 5);
	lua_settop(L, 5);
	struct calling c;
	enter(L, &c, sim, 0);
	rtl_sim_mem_access(sim->cpu, pc, addr, (unsigned)size, is_write);
	leave(L, &c);
	return 0;
}

void script_open_sim(lua_State *L)
{
	static const luaL_Reg sim_methods[] = {
		{ "close", l_close }, { "run", l_run }, { "message", l_message }, { "isa_name", l_isa_name },
		{ "add_call_by_name", l_add_call_by_name }, { "add_call", l_add_call },
		{ "add_block_call", l_add_block_call }, { "add_proc_call", l_add_proc_call },
		{ "add_mem_call", l_add_mem_call }, { "add_trailer", l_add_trailer }, { "add_profile", l_add_profile },
		{ "tool_builtin", l_tool_builtin }, { "first_proc", l_first_proc }, { "next_proc", l_next_proc },
		{ "find_proc", l_find_proc }, { "proc_at", l_proc_at }, { "first_block", l_first_block },
		{ "next_block", l_next_block }, { "insn_name", l_insn_name }, { "disasm", l_disasm },
		{ "insn_names", l_insn_names }, { "pc", l_pc }, { "icount", l_icount }, { "reg", l_reg },
		{ "read_mem", l_read_mem }, { "for_each_executed", l_for_each_executed }, { "syscall", l_syscall },
		{ "trap", l_trap }, { "raise", l_raise }, { "mem_access", l_mem_access }, { NULL, NULL },
	};
	static const luaL_Reg proc_methods[] = {
		{ "proc_name", l_proc_name }, { "proc_addr", l_proc_addr }, { NULL, NULL },
	};
	static const luaL_Reg block_methods[] = {
		{ "block_addr", l_block_addr }, { "last_insn", l_last_insn }, { "block_ninsns", l_block_ninsns },
		{ "block_proc", l_block_proc }, { NULL, NULL },
	};
	static const luaL_Reg insn_methods[] = {
		{ "insn_addr", l_insn_addr }, { "insn_len", l_insn_len }, { "insn_is_branch", l_insn_is_branch },
		{ "insn_is_cond_branch", l_insn_is_cond_branch }, { NULL, NULL },
	};
	static const luaL_Reg funcs[] = {
		{ "sim_isas", l_isas }, { "sim_open", l_open }, { "sim_open_program", l_open_program },
		{ "sim_close", l_close }, { "sim_run", l_run }, { "sim_message", l_message },
		{ "sim_interrupt", l_interrupt },
		{ "sim_isa_name", l_isa_name }, { "sim_add_call_by_name", l_add_call_by_name },
		{ "sim_add_call", l_add_call }, { "sim_add_block_call", l_add_block_call },
		{ "sim_add_proc_call", l_add_proc_call }, { "sim_add_mem_call", l_add_mem_call },
		{ "sim_add_trailer", l_add_trailer }, { "sim_add_profile", l_add_profile },
		{ "sim_tool_builtin", l_tool_builtin }, { "sim_first_proc", l_first_proc },
		{ "sim_next_proc", l_next_proc }, { "sim_find_proc", l_find_proc }, { "sim_proc_at", l_proc_at },
		{ "sim_first_block", l_first_block }, { "sim_next_block", l_next_block },
		{ "sim_proc_name", l_proc_name }, { "sim_proc_addr", l_proc_addr }, { "sim_block_addr", l_block_addr },
		{ "sim_last_insn", l_last_insn }, { "sim_block_ninsns", l_block_ninsns },
		{ "sim_block_proc", l_block_proc }, { "sim_insn_addr", l_insn_addr }, { "sim_insn_len", l_insn_len },
		{ "sim_insn_name", l_insn_name }, { "sim_insn_is_branch", l_insn_is_branch },
		{ "sim_insn_is_cond_branch", l_insn_is_cond_branch }, { "sim_disasm", l_disasm },
		{ "sim_insn_names", l_insn_names }, { "sim_pc", l_pc }, { "sim_icount", l_icount },
		{ "sim_reg", l_reg }, { "sim_read_mem", l_read_mem }, { "sim_for_each_executed", l_for_each_executed },
		{ "sim_syscall", l_syscall }, { "sim_trap", l_trap }, { "sim_raise", l_raise },
		{ "sim_mem_access", l_mem_access }, { NULL, NULL },
	};
	script_new_class(L, SIM_MT, sim_methods, l_close);
	script_new_class(L, PROC_MT, proc_methods, NULL);
	script_new_class(L, BLOCK_MT, block_methods, NULL);
	script_new_class(L, INSN_MT, insn_methods, NULL);
	script_add_functions(L, funcs);
	lua_pushinteger(L, RTL_SIM_BEFORE);
	lua_setfield(L, -2, "SIM_BEFORE");
	lua_pushinteger(L, RTL_SIM_AFTER);
	lua_setfield(L, -2, "SIM_AFTER");
}
