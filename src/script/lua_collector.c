/* reticle/collector.h and probe.h in Lua (script.h).
 *
 * Collectors
 *   reticle.collector_find(name) -> c or nil; reticle.collector_count();
 *   reticle.collector_at(i)      (i from 0)   c.name, c.summary, c.timers, c.plan_key
 *   reticle.collector{ name = N, summary = S, plan = fn(cfg, plan), finish = fn(f, profile),
 *       finish_image = fn(v, profile), on_call = fn(ev), timers = B, plan_key = K }  -> a collector in Lua
 *   ev (an RTL_PRIM_CALL snippet ran): pid, tid, module, name, addr, kind, id, args = {6}, retval
 *   reticle.collector_check(c)               -> true, or false and why
 *   reticle.counter_find(counters, kind, addr) -> the counter of f.counters, or nil
 * Plans (in a collector's plan function: cfg and plan are valid during the call)
 *   cfg.module, cfg.name, cfg.addr, cfg.size, cfg.blocks = { {addr, last, ninstrs, ["end"], target}... }
 *   reticle.plan_add(plan, kind, addr, {op, id, pred = {{operand, index, size, cmp,
 *       is_unsigned, log2, where, value}...}, key = {...}})
 *   reticle.plan_count_blocks(cfg, plan), plan_count_branches, plan_count_entry,
 *   plan_count_back_edges, plan_count_calls, plan_time_function, plan_count_intervals,
 *   plan_trace_memory, plan_signal_function (cfg, plan)
 *   reticle.cfg_back_edge(cfg, i)            -> whether block i (from 1) ends in a back-edge
 * Constants: POINT_*, PRIM_*, OPND_*, CMP_*, END_*, MAX_SNIPPET_ID, MAX_TIMER_ID.
 *
 * A collector written in Lua is called from the engine while the session
 * runs, possibly from its planning thread: the script's state is locked
 * around each call (script_lock), and left while a session runs. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <reticle/collector.h>
#include <reticle/error.h>
#include <reticle/probe.h>
#include "script.h"

#define COLLECTOR_MT "reticle.collector"
#define CFG_MT "reticle.cfg"
#define PLAN_MT "reticle.plan"
#define PROFILE_MT "reticle.profile"

/* ---- collectors ---- */

/* A collector object: a built-in (LUA_C points at it) or one in Lua, whose
 * functions are the object's user value fields plan, finish, finish_image. */
struct lua_collector {
	struct rtl_collector c;   /* what the engine gets (a Lua collector's) */
	const struct rtl_collector *builtin;
	lua_State *L;             /* the main thread's state */
	int self;                 /* registry ref of the object */
	char *name, *summary, *plan_key;
};

static struct lua_collector *check_collector(lua_State *L, int idx)
{
	return luaL_checkudata(L, idx, COLLECTOR_MT);
}

static const struct rtl_collector *collector_of(struct lua_collector *lc)
{
	return lc->builtin ? lc->builtin : &lc->c;
}

static void push_builtin(lua_State *L, const struct rtl_collector *c)
{
	if (!c) {
		lua_pushnil(L);
		return;
	}
	struct lua_collector *lc = lua_newuserdatauv(L, sizeof(*lc), 1);
	memset(lc, 0, sizeof(*lc));
	lc->builtin = c;
	lc->self = LUA_NOREF;
	luaL_setmetatable(L, COLLECTOR_MT);
}

static int l_collector_find(lua_State *L)
{
	push_builtin(L, rtl_collector_find(luaL_checkstring(L, 1)));
	return 1;
}

static int l_collector_count(lua_State *L)
{
	lua_pushinteger(L, (lua_Integer)rtl_collector_count());
	return 1;
}

static int l_collector_at(lua_State *L)
{
	lua_Integer i = luaL_checkinteger(L, 1);
	push_builtin(L, i >= 0 && (size_t)i < rtl_collector_count() ? rtl_collector_at((size_t)i) : NULL);
	return 1;
}

static int collector_index(lua_State *L)
{
	const struct rtl_collector *c = collector_of(check_collector(L, 1));
	const char *k = luaL_checkstring(L, 2);
	if (!strcmp(k, "name"))
		lua_pushstring(L, c->name);
	else if (!strcmp(k, "summary"))
		lua_pushstring(L, c->summary);
	else if (!strcmp(k, "timers"))
		lua_pushboolean(L, c->timers);
	else if (!strcmp(k, "plan_key"))
		lua_pushstring(L, c->plan_key);
	else
		lua_pushnil(L);
	return 1;
}

static int collector_gc(lua_State *L)
{
	struct lua_collector *lc = check_collector(L, 1);
	free(lc->name);
	free(lc->summary);
	free(lc->plan_key);
	lc->name = lc->summary = lc->plan_key = NULL;
	return 0;
}

/* Pushes the Lua function FIELD of collector LC (locked); false if none. */
static bool push_method(struct lua_collector *lc, const char *field)
{
	lua_State *L = lc->L;
	lua_rawgeti(L, LUA_REGISTRYINDEX, lc->self);
	lua_getiuservalue(L, -1, 1);
	lua_getfield(L, -1, field);
	lua_remove(L, -2);
	lua_remove(L, -2);
	if (lua_isfunction(L, -1))
		return true;
	lua_pop(L, 1);
	return false;
}

/* An object valid during one callback: its box is emptied after. */
static void **push_transient(lua_State *L, const char *mt, const void *ptr)
{
	return script_new_object(L, mt, (void *)ptr);
}

/* One C callback per collector object would need a trampoline each; the
 * engine passes no context, so Lua collectors are looked up by plan()'s
 * caller: they are few, kept in a table. */
enum { MAX_LUA_COLLECTORS = 16 };
static struct lua_collector *lua_collectors[MAX_LUA_COLLECTORS];
static size_t nlua_collectors;

static int call_plan(size_t i, const struct rtl_function_cfg *cfg, rtl_plan *plan)
{
	struct lua_collector *lc = lua_collectors[i];
	script_lock();
	lua_State *L = lc->L;
	int top = lua_gettop(L), err = 0;
	if (push_method(lc, "plan")) {
		void **c = push_transient(L, CFG_MT, cfg);
		void **p = push_transient(L, PLAN_MT, plan);
		err = script_call(L, 2, 0) ? -RTL_ERR_BAD_OPTION : 0;
		*c = *p = NULL;
	}
	lua_settop(L, top);
	script_unlock();
	return err;
}

static void push_function_view(lua_State *L, const struct rtl_function_view *f);
static void push_timer(lua_State *L, const struct rtl_timer_view *t);

static int call_finish(size_t i, const struct rtl_function_view *f, rtl_profile *prof)
{
	struct lua_collector *lc = lua_collectors[i];
	script_lock();
	lua_State *L = lc->L;
	int top = lua_gettop(L), err = 0;
	if (push_method(lc, "finish")) {
		push_function_view(L, f);
		void **p = push_transient(L, PROFILE_MT, prof);
		err = script_call(L, 2, 0) ? -RTL_ERR_BAD_OPTION : 0;
		*p = NULL;
	}
	lua_settop(L, top);
	script_unlock();
	return err;
}

static int call_finish_image(size_t i, const struct rtl_image_view *v, rtl_profile *prof)
{
	struct lua_collector *lc = lua_collectors[i];
	script_lock();
	lua_State *L = lc->L;
	int top = lua_gettop(L), err = 0;
	if (push_method(lc, "finish_image")) {
		lua_createtable(L, 0, 3);
		script_set_int(L, "pid", v->pid);
		script_set_num(L, "tsc_hz", v->tsc_hz);
		lua_createtable(L, (int)v->ntimers, 0);
		for (size_t t = 0; t < v->ntimers; t++) {
			push_timer(L, &v->timers[t]);
			lua_seti(L, -2, (lua_Integer)t + 1);
		}
		lua_setfield(L, -2, "timers");
		void **p = push_transient(L, PROFILE_MT, prof);
		err = script_call(L, 2, 0) ? -RTL_ERR_BAD_OPTION : 0;
		*p = NULL;
	}
	lua_settop(L, top);
	script_unlock();
	return err;
}

/* on_call: ev = {pid, tid, module, name, addr, kind, id, args = {6}, retval} */
static void call_on_call(size_t i, const struct rtl_call_event *ev)
{
	struct lua_collector *lc = lua_collectors[i];
	script_lock();
	lua_State *L = lc->L;
	int top = lua_gettop(L);
	if (push_method(lc, "on_call")) {
		lua_createtable(L, 0, 9);
		script_set_int(L, "pid", ev->pid);
		script_set_int(L, "tid", ev->tid);
		script_set_str(L, "module", ev->module);
		script_set_str(L, "name", ev->name);
		script_set_uint(L, "addr", ev->addr);
		script_set_int(L, "kind", ev->kind);
		script_set_int(L, "id", ev->id);
		lua_createtable(L, 6, 0);
		for (int a = 0; a < 6; a++) {
			lua_pushinteger(L, ev->args[a]);
			lua_seti(L, -2, a + 1);
		}
		lua_setfield(L, -2, "args");
		script_set_int(L, "retval", ev->retval);
		script_call(L, 1, 0);
	}
	lua_settop(L, top);
	script_unlock();
}

/* The C callbacks of Lua collector I: one set per slot. */
#define SLOT(i)                                                                                         \
	static int plan_##i(const struct rtl_function_cfg *c, rtl_plan *p) { return call_plan(i, c, p); } \
	static int finish_##i(const struct rtl_function_view *f, rtl_profile *p)                          \
	{                                                                                                 \
		return call_finish(i, f, p);                                                              \
	}                                                                                                 \
	static int finish_image_##i(const struct rtl_image_view *v, rtl_profile *p)                       \
	{                                                                                                 \
		return call_finish_image(i, v, p);                                                        \
	}                                                                                                 \
	static void on_call_##i(const struct rtl_call_event *ev) { call_on_call(i, ev); }
SLOT(0) SLOT(1) SLOT(2) SLOT(3) SLOT(4) SLOT(5) SLOT(6) SLOT(7)
SLOT(8) SLOT(9) SLOT(10) SLOT(11) SLOT(12) SLOT(13) SLOT(14) SLOT(15)
#define SLOT_FNS(i) { plan_##i, finish_##i, finish_image_##i, on_call_##i }
static const struct {
	int (*plan)(const struct rtl_function_cfg *, rtl_plan *);
	int (*finish)(const struct rtl_function_view *, rtl_profile *);
	int (*finish_image)(const struct rtl_image_view *, rtl_profile *);
	void (*on_call)(const struct rtl_call_event *);
} slots[MAX_LUA_COLLECTORS] = {
	SLOT_FNS(0), SLOT_FNS(1), SLOT_FNS(2), SLOT_FNS(3), SLOT_FNS(4), SLOT_FNS(5), SLOT_FNS(6), SLOT_FNS(7),
	SLOT_FNS(8), SLOT_FNS(9), SLOT_FNS(10), SLOT_FNS(11), SLOT_FNS(12), SLOT_FNS(13), SLOT_FNS(14), SLOT_FNS(15),
};

static int dump_writer(lua_State *L, const void *p, size_t sz, void *ud)
{
	(void)L;
	uint64_t *h = ud;
	for (size_t i = 0; i < sz; i++)
		*h = (*h ^ ((const unsigned char *)p)[i]) * 0x100000001b3ull;
	return 0;
}

/* reticle.collector{...}: a collector whose plan, finish and finish_image
 * are Lua functions. Its copies are kept for the warm start under a key
 * made of its plan function's bytecode unless plan_key says otherwise. */
static int l_collector(lua_State *L)
{
	luaL_checktype(L, 1, LUA_TTABLE);
	const char *name = script_opt_str(L, 1, "name", NULL);
	if (!name || !*name)
		return luaL_error(L, "collector: a name is needed");
	if (rtl_collector_find(name))
		return luaL_error(L, "collector: '%s' is a built-in collector's name", name);
	if (nlua_collectors == MAX_LUA_COLLECTORS)
		return luaL_error(L, "collector: at most %d collectors in Lua", MAX_LUA_COLLECTORS);
	const char *key = script_opt_str(L, 1, "plan_key", NULL);
	char keybuf[40];
	lua_getfield(L, 1, "plan");
	if (!key && lua_isfunction(L, -1)) {
		uint64_t h = 0xcbf29ce484222325ull;
		lua_dump(L, dump_writer, &h, 1);
		snprintf(keybuf, sizeof(keybuf), "lua-%016llx", (unsigned long long)h);
		key = keybuf;
	}
	lua_pop(L, 1);
	struct lua_collector *lc = lua_newuserdatauv(L, sizeof(*lc), 1);
	memset(lc, 0, sizeof(*lc));
	luaL_setmetatable(L, COLLECTOR_MT);
	lc->name = strdup(name);
	lc->summary = strdup(script_opt_str(L, 1, "summary", "a collector written in Lua"));
	lc->plan_key = key ? strdup(key) : NULL;
	if (!lc->name || !lc->summary || (key && !lc->plan_key))
		return luaL_error(L, "collector: out of memory");
	lua_pushvalue(L, 1);   /* its functions */
	lua_setiuservalue(L, -2, 1);
	lua_rawgeti(L, LUA_REGISTRYINDEX, LUA_RIDX_MAINTHREAD);
	lc->L = lua_tothread(L, -1);
	lua_pop(L, 1);
	lua_pushvalue(L, -1);
	lc->self = luaL_ref(L, LUA_REGISTRYINDEX);   /* lives as long as the script: the engine keeps its pointer */
	size_t slot = nlua_collectors;
	lua_collectors[nlua_collectors++] = lc;
	lc->c = (struct rtl_collector){
		.name = lc->name, .summary = lc->summary,
		.plan = script_opt_bool(L, 1, "plan", false) ? slots[slot].plan : NULL,
		.finish = script_opt_bool(L, 1, "finish", false) ? slots[slot].finish : NULL,
		.finish_image = script_opt_bool(L, 1, "finish_image", false) ? slots[slot].finish_image : NULL,
		.on_call = script_opt_bool(L, 1, "on_call", false) ? slots[slot].on_call : NULL,
		.timers = script_opt_bool(L, 1, "timers", false), .plan_key = lc->plan_key,
	};
	return 1;
}

static int l_collector_check(lua_State *L)
{
	const char *why = NULL;
	struct lua_collector *lc = check_collector(L, 1);
	int err = rtl_collector_check(collector_of(lc), &why);
	script_rethrow(L);   /* its plan() raised an error */
	if (!err) {
		lua_pushboolean(L, 1);
		return 1;
	}
	lua_pushboolean(L, 0);
	lua_pushstring(L, why ? why : rtl_strerror(err));
	return 2;
}

/* ---- views ---- */

static void push_counter(lua_State *L, const struct rtl_counter_view *c)
{
	lua_createtable(L, 0, 5);
	script_set_int(L, "kind", c->kind);
	script_set_int(L, "op", c->op);
	script_set_uint(L, "addr", c->addr);
	script_set_uint(L, "value", c->value);
	script_set_int(L, "id", c->id);
}

static void push_timer(lua_State *L, const struct rtl_timer_view *t)
{
	lua_createtable(L, 0, 5);
	script_set_int(L, "tid", t->tid);
	script_set_uint(L, "calls", t->calls);
	script_set_num(L, "inclusive", t->inclusive);
	script_set_num(L, "exclusive", t->exclusive);
	script_set_int(L, "id", t->id);
}

/* A list field K of N elements of SIZE bytes at V, each pushed by PUSH. */
static void set_list(lua_State *L, const char *k, const void *v, size_t n, size_t size,
		     void (*push)(lua_State *, const void *))
{
	lua_createtable(L, (int)n, 0);
	for (size_t i = 0; i < n; i++) {
		push(L, (const char *)v + i * size);
		lua_seti(L, -2, (lua_Integer)i + 1);
	}
	lua_setfield(L, -2, k);
}

static void push_block_view(lua_State *L, const void *p)
{
	const struct rtl_block_view *b = p;
	lua_createtable(L, 0, 4);
	script_set_uint(L, "addr", b->addr);
	script_set_int(L, "ninstrs", b->ninstrs);
	script_set_uint(L, "count", b->count);
	script_set_uint(L, "rep_iterations", b->rep_iterations);
}

static void push_call_view(lua_State *L, const void *p)
{
	const struct rtl_call_view *c = p;
	lua_createtable(L, 0, 3);
	script_set_uint(L, "site", c->site);
	script_set_int(L, "callee", c->callee);
	script_set_int(L, "block", c->block);
}

static void push_counter_any(lua_State *L, const void *p) { push_counter(L, p); }
static void push_timer_any(lua_State *L, const void *p) { push_timer(L, p); }

static void push_target_view(lua_State *L, const void *p)
{
	const struct rtl_target_view *t = p;
	lua_createtable(L, 0, 4);
	script_set_uint(L, "site", t->site);
	script_set_int(L, "callee", t->callee);
	script_set_uint(L, "target", t->target);
	script_set_uint(L, "count", t->count);
}

static void push_key_view(lua_State *L, const void *p)
{
	const struct rtl_key_view *k = p;
	lua_createtable(L, 0, 5);
	script_set_int(L, "kind", k->kind);
	script_set_int(L, "id", k->id);
	script_set_uint(L, "addr", k->addr);
	script_set_int(L, "key", k->key);
	script_set_uint(L, "count", k->count);
}

static void push_context_view(lua_State *L, const void *p)
{
	const struct rtl_context_view *c = p;
	lua_createtable(L, 0, 6);
	script_set_int(L, "tid", c->tid);
	script_set_uint(L, "id", c->id);
	script_set_uint(L, "parent", c->parent);
	script_set_uint(L, "calls", c->calls);
	script_set_num(L, "inclusive", c->inclusive);
	script_set_num(L, "exclusive", c->exclusive);
}

static void push_function_view(lua_State *L, const struct rtl_function_view *f)
{
	lua_createtable(L, 0, 14);
	script_set_int(L, "id", f->id);
	script_set_str(L, "module", f->module);
	script_set_str(L, "name", f->name);
	script_set_uint(L, "addr", f->addr);
	script_set_uint(L, "size", f->size);
	script_set_uint(L, "entries", f->entries);
	set_list(L, "blocks", f->blocks, f->nblocks, sizeof(*f->blocks), push_block_view);
	set_list(L, "calls", f->calls, f->ncalls, sizeof(*f->calls), push_call_view);
	set_list(L, "counters", f->counters, f->ncounters, sizeof(*f->counters), push_counter_any);
	set_list(L, "targets", f->targets, f->ntargets, sizeof(*f->targets), push_target_view);
	set_list(L, "keys", f->keys, f->nkeys, sizeof(*f->keys), push_key_view);
	set_list(L, "timers", f->timers, f->ntimers, sizeof(*f->timers), push_timer_any);
	set_list(L, "contexts", f->contexts, f->ncontexts, sizeof(*f->contexts), push_context_view);
}

/* reticle.counter_find(counters, kind, addr): rtl_counter_find over the
 * list (f.counters, sorted as finish() gets it). */
static int l_counter_find(lua_State *L)
{
	luaL_checktype(L, 1, LUA_TTABLE);
	lua_Integer kind = luaL_checkinteger(L, 2);
	uint64_t addr = (uint64_t)luaL_checkinteger(L, 3);
	lua_Integer n = luaL_len(L, 1);
	struct rtl_counter_view *v = lua_newuserdatauv(L, (size_t)(n ? n : 1) * sizeof(*v), 0);
	for (lua_Integer i = 1; i <= n; i++) {
		lua_geti(L, 1, i);
		int t = lua_gettop(L);
		v[i - 1] = (struct rtl_counter_view){
			(uint8_t)script_opt_int(L, t, "kind", 0), (uint8_t)script_opt_int(L, t, "op", 0),
			(uint64_t)script_opt_int(L, t, "addr", 0), (uint64_t)script_opt_int(L, t, "value", 0),
			(uint32_t)script_opt_int(L, t, "id", 0) };
		lua_pop(L, 1);
	}
	const struct rtl_counter_view *c = rtl_counter_find(v, (size_t)n, (enum rtl_point_kind)kind, addr);
	if (!c)
		lua_pushnil(L);
	else
		lua_geti(L, 1, c - v + 1);
	return 1;
}

/* ---- plans ---- */

static const struct rtl_function_cfg *check_cfg(lua_State *L, int idx)
{
	return script_check_object(L, idx, CFG_MT);
}

static int cfg_index(lua_State *L)
{
	const struct rtl_function_cfg *cfg = check_cfg(L, 1);
	const char *k = luaL_checkstring(L, 2);
	if (!strcmp(k, "module"))
		lua_pushstring(L, cfg->module);
	else if (!strcmp(k, "name"))
		lua_pushstring(L, cfg->name);
	else if (!strcmp(k, "addr"))
		lua_pushinteger(L, (lua_Integer)cfg->addr);
	else if (!strcmp(k, "size"))
		lua_pushinteger(L, (lua_Integer)cfg->size);
	else if (!strcmp(k, "blocks")) {
		lua_createtable(L, (int)cfg->nblocks, 0);
		for (size_t i = 0; i < cfg->nblocks; i++) {
			const struct rtl_cfg_block *b = &cfg->blocks[i];
			lua_createtable(L, 0, 5);
			script_set_uint(L, "addr", b->addr);
			script_set_uint(L, "last", b->last);
			script_set_int(L, "ninstrs", b->ninstrs);
			script_set_int(L, "end", b->end);
			script_set_uint(L, "target", b->target);
			lua_seti(L, -2, (lua_Integer)i + 1);
		}
	} else
		lua_pushnil(L);
	return 1;
}

static void read_predicate(lua_State *L, int t, struct rtl_predicate *p)
{
	*p = (struct rtl_predicate){
		.operand = (uint8_t)script_opt_int(L, t, "operand", 0),
		.index = (uint8_t)script_opt_int(L, t, "index", 0),
		.size = (uint8_t)script_opt_int(L, t, "size", 8),
		.cmp = (uint8_t)script_opt_int(L, t, "cmp", RTL_CMP_EQ),
		.is_unsigned = script_opt_bool(L, t, "is_unsigned", false),
		.log2 = script_opt_bool(L, t, "log2", false),
		.where = (uint64_t)script_opt_int(L, t, "where", 0),
		.value = script_opt_int(L, t, "value", 0),
	};
}

static int l_plan_add(lua_State *L)
{
	rtl_plan *plan = script_check_object(L, 1, PLAN_MT);
	lua_Integer kind = luaL_checkinteger(L, 2);
	uint64_t addr = (uint64_t)luaL_checkinteger(L, 3);
	luaL_checktype(L, 4, LUA_TTABLE);
	struct rtl_predicate pred[RTL_MAX_PREDICATES], key;
	struct rtl_snippet s = { .op = (enum rtl_primitive)script_opt_int(L, 4, "op", RTL_PRIM_COUNT),
				 .id = (uint32_t)script_opt_int(L, 4, "id", 0), .pred = pred };
	if (lua_getfield(L, 4, "pred") == LUA_TTABLE) {
		lua_Integer n = luaL_len(L, -1);
		if (n > RTL_MAX_PREDICATES)
			return luaL_error(L, "plan_add: at most %d predicates", RTL_MAX_PREDICATES);
		for (lua_Integer i = 1; i <= n; i++) {
			lua_geti(L, -1, i);
			luaL_checktype(L, -1, LUA_TTABLE);
			read_predicate(L, lua_gettop(L), &pred[s.npred++]);
			lua_pop(L, 1);
		}
	}
	lua_pop(L, 1);
	if (lua_getfield(L, 4, "key") == LUA_TTABLE) {
		read_predicate(L, lua_gettop(L), &key);
		s.key = &key;
	}
	lua_pop(L, 1);
	int err = rtl_plan_add(plan, (enum rtl_point_kind)kind, addr, &s);
	if (err)
		return script_fail(L, "plan_add", err);
	return 0;
}

static int cfg_back_edge(lua_State *L)
{
	const struct rtl_function_cfg *cfg = check_cfg(L, 1);
	lua_Integer i = luaL_checkinteger(L, 2);
	luaL_argcheck(L, i >= 1 && (size_t)i <= cfg->nblocks, 2, "no such block");
	lua_pushboolean(L, rtl_cfg_back_edge(cfg, &cfg->blocks[i - 1]));
	return 1;
}

#define PLAN_ALL(fn)                                                                     \
	static int l_##fn(lua_State *L)                                                  \
	{                                                                                \
		int err = rtl_##fn(check_cfg(L, 1), script_check_object(L, 2, PLAN_MT)); \
		return err ? script_fail(L, #fn, err) : 0;                               \
	}
PLAN_ALL(plan_count_blocks)
PLAN_ALL(plan_count_branches)
PLAN_ALL(plan_count_entry)
PLAN_ALL(plan_count_back_edges)
PLAN_ALL(plan_count_calls)
PLAN_ALL(plan_time_function)
PLAN_ALL(plan_count_intervals)
PLAN_ALL(plan_trace_memory)
PLAN_ALL(plan_signal_function)

const struct rtl_collector *script_check_collector(lua_State *L, int idx)
{
	return collector_of(check_collector(L, idx));
}

static void set_constants(lua_State *L)
{
	static const struct { const char *name; int value; } k[] = {
		{ "POINT_ENTRY", RTL_POINT_ENTRY }, { "POINT_BLOCK", RTL_POINT_BLOCK },
		{ "POINT_REP_ITERATIONS", RTL_POINT_REP_ITERATIONS }, { "POINT_BRANCH_TAKEN", RTL_POINT_BRANCH_TAKEN },
		{ "POINT_BRANCH_NOT_TAKEN", RTL_POINT_BRANCH_NOT_TAKEN }, { "POINT_CALL_BEFORE", RTL_POINT_CALL_BEFORE },
		{ "POINT_INDIRECT_TARGET", RTL_POINT_INDIRECT_TARGET }, { "POINT_EXIT", RTL_POINT_EXIT },
		{ "POINT_BACK_EDGE", RTL_POINT_BACK_EDGE }, { "POINT_CALL_AFTER", RTL_POINT_CALL_AFTER },
		{ "POINT_MEMORY", RTL_POINT_MEMORY },
		{ "END_FALL", RTL_END_FALL }, { "END_BRANCH", RTL_END_BRANCH }, { "END_JUMP", RTL_END_JUMP },
		{ "END_INDIRECT_JUMP", RTL_END_INDIRECT_JUMP }, { "END_CALL", RTL_END_CALL },
		{ "END_INDIRECT_CALL", RTL_END_INDIRECT_CALL }, { "END_RETURN", RTL_END_RETURN },
		{ "END_STOP", RTL_END_STOP },
		{ "PRIM_COUNT", RTL_PRIM_COUNT }, { "PRIM_TIMER_START", RTL_PRIM_TIMER_START },
		{ "PRIM_TIMER_STOP", RTL_PRIM_TIMER_STOP }, { "PRIM_SLOT_SET", RTL_PRIM_SLOT_SET },
		{ "PRIM_BUFFER_APPEND", RTL_PRIM_BUFFER_APPEND }, { "PRIM_COUNTDOWN", RTL_PRIM_COUNTDOWN },
		{ "PRIM_CALL", RTL_PRIM_CALL }, { "PRIM_COUNT_BY", RTL_PRIM_COUNT_BY },
		{ "OPND_ARG", RTL_OPND_ARG }, { "OPND_RETVAL", RTL_OPND_RETVAL }, { "OPND_GLOBAL", RTL_OPND_GLOBAL },
		{ "OPND_ONSTACK", RTL_OPND_ONSTACK }, { "OPND_LATENCY", RTL_OPND_LATENCY }, { "OPND_REG", RTL_OPND_REG },
		{ "CMP_EQ", RTL_CMP_EQ }, { "CMP_NE", RTL_CMP_NE }, { "CMP_LT", RTL_CMP_LT }, { "CMP_LE", RTL_CMP_LE },
		{ "CMP_GT", RTL_CMP_GT }, { "CMP_GE", RTL_CMP_GE },
		{ "MAX_SNIPPET_ID", RTL_MAX_SNIPPET_ID }, { "MAX_TIMER_ID", RTL_MAX_TIMER_ID },
	};
	for (size_t i = 0; i < sizeof(k) / sizeof(*k); i++) {
		lua_pushinteger(L, k[i].value);
		lua_setfield(L, -2, k[i].name);
	}
}

void script_open_collector(lua_State *L)
{
	static const luaL_Reg fns[] = {
		{ "collector", l_collector }, { "collector_find", l_collector_find },
		{ "collector_count", l_collector_count }, { "collector_at", l_collector_at },
		{ "collector_check", l_collector_check }, { "counter_find", l_counter_find },
		{ "plan_add", l_plan_add }, { "cfg_back_edge", cfg_back_edge },
		{ "plan_count_blocks", l_plan_count_blocks }, { "plan_count_branches", l_plan_count_branches },
		{ "plan_count_entry", l_plan_count_entry }, { "plan_count_back_edges", l_plan_count_back_edges },
		{ "plan_count_calls", l_plan_count_calls }, { "plan_time_function", l_plan_time_function },
		{ "plan_count_intervals", l_plan_count_intervals }, { "plan_trace_memory", l_plan_trace_memory },
		{ "plan_signal_function", l_plan_signal_function }, { NULL, NULL },
	};
	luaL_newmetatable(L, COLLECTOR_MT);
	lua_pushcfunction(L, collector_index);
	lua_setfield(L, -2, "__index");
	lua_pushcfunction(L, collector_gc);
	lua_setfield(L, -2, "__gc");
	lua_pop(L, 1);
	luaL_newmetatable(L, CFG_MT);
	lua_pushcfunction(L, cfg_index);
	lua_setfield(L, -2, "__index");
	lua_pop(L, 1);
	script_new_class(L, PLAN_MT, NULL, NULL);
	script_add_functions(L, fns);
	set_constants(L);
}
