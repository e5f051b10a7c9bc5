/* reticle/cachesim.h and simpoint.h in Lua (script.h).
 *
 * Tables: a C array indexed by an enum or a number the header defines
 * keeps that index (level[reticle.L1D], access[reticle.ACC_LOAD],
 * bucket[0..47]); lists (bic, points, label, read accesses) are sequences
 * from 1. Int flags (present, inclusive...) are booleans (integers accepted).
 *
 *   reticle.cache_config_parse(spec)          -> config, or an error with the parser's message
 *       config = { name, level = { [L1I..L3] = { present, size, assoc, line, repl, write,
 *                  no_write_allocate } }, cross, modify_as_load, max_data_size, inclusive, seed }
 *       (a level table given as input is present unless present = false)
 *   reticle.cache_config_check(config)        -> true, or an error with the checker's message
 *   reticle.cachesim_create()                 -> bank (methods: the names below less cachesim_)
 *   reticle.cachesim_destroy(b)
 *   reticle.cachesim_add(b, config)           -> index (from 0)
 *   reticle.cachesim_enable_reuse(b, line)
 *   reticle.cachesim_set_threads(b, n)
 *   reticle.cachesim_enable_attribution(b, cfg, level)
 *   reticle.cachesim_enable_miss_attribution(b, cfg, level)
 *   reticle.cachesim_push(b, addr, size, kind [, iaddr])   one access, buffered (cheap)
 *   reticle.cachesim_push(b, { {addr, iaddr, size, kind}, ... })   a list, pushed at once
 *   reticle.cachesim_warm_lower(b, { ... })   a list warming the levels below the first
 *   reticle.cachesim_count(b)                 -> number of configurations
 *   reticle.cachesim_config(b, cfg)           -> config, or nil when out of range
 *   reticle.cachesim_stats(b, cfg, level)     -> { access = {[kind] = n}, miss = {...},
 *                                                  compulsory, writebacks }
 *   reticle.cachesim_engines(b)               -> simulators after sharing
 *   reticle.cachesim_reuse(b)                 -> hist = { line, total, cold, bucket = {[0..47]} }
 *   reticle.reuse_misses(hist, lines)         -> misses of a fully-associative LRU of LINES lines
 *   reticle.cachesim_foreach_instr(b, fn)     fn({iaddr, access, miss}) by ascending iaddr;
 *                                             a true result stops the walk
 *   reticle.cachesim_sum_functions(b, { {start, end}, ... }) -> { {iaddr, access, miss}, ... }
 *   reticle.trace_open([path [, format]])     -> trace (methods read, error, line, close);
 *                                             path nil or "-": stdin; format TRACE_AUTO default
 *   reticle.trace_read(t, max)                -> { {addr, iaddr, size, kind}, ... } (empty at
 *                                             the end); a malformed line: an error naming it
 *   reticle.trace_error(t)                    -> the last error's message ("" if none)
 *   reticle.trace_line(t)                     -> lines read so far
 *   reticle.trace_close(t)
 *   reticle.bbv_create()                      -> bbv (methods destroy, add_interval,
 *                                             intervals, interval_total)
 *   reticle.bbv_destroy(v)
 *   reticle.bbv_add_interval(v, ids, counts)  two sequences of the same length
 *   reticle.bbv_read(path)                    -> bbv, or an error naming the line
 *   reticle.bbv_intervals(v)                  -> number of intervals
 *   reticle.bbv_interval_total(v, i)          -> sum of interval I's counts (I from 0; 0 past the end)
 *   reticle.simpoint_choose(v [, opts])       -> { k, tried, bic = {[k] = BIC}, points = {
 *                                                 {interval, weight, cluster, members}, ... },
 *                                                 label = {cluster of interval 0, ...} }
 *       opts = { max_k = 10, seed = 1, dims = 15, inits = 5, iters = 100, bic_frac = 0.9,
 *                points = 0 (about that many points in all, several per cluster) }
 *
 * Constants: ACC_*, REPL_*, WRITE_*, L1I..L3 and LEVELS, CROSS_*, TRACE_*,
 * REUSE_BUCKETS. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <reticle/cachesim.h>
#include <reticle/error.h>
#include <reticle/simpoint.h>
#include "script.h"

#define BANK_MT "reticle.cachesim"
#define TRACE_MT "reticle.trace"
#define BBV_MT "reticle.bbv"

/* Single accesses pushed from Lua wait here: a push of one access through
 * the C API runs every engine over a chunk of one, where a buffer amortizes
 * that over BANK_BUF accesses. Every other entry flushes first, so the
 * bank sees the accesses in order and before any question. */
enum { BANK_BUF = 4096 };

struct bank {
	rtl_cachesim *sim;
	size_t n;
	rtl_access buf[BANK_BUF];
};

/* ---- fields of input tables ---- */

static int64_t opt_range(lua_State *L, int idx, const char *k, int64_t def, int64_t lo, int64_t hi)
{
	int64_t v = script_opt_int(L, idx, k, def);
	if (v < lo || v > hi)
		luaL_error(L, "field '%s': %I out of range", k, (lua_Integer)v);
	return v;
}

/* An int flag of a C struct: a boolean, or an integer (0 is false). */
static int opt_flag(lua_State *L, int idx, const char *k)
{
	idx = lua_absindex(L, idx);
	int t = lua_getfield(L, idx, k);
	int v = t == LUA_TNUMBER ? lua_tointeger(L, -1) != 0 : lua_toboolean(L, -1);
	if (t != LUA_TNIL && t != LUA_TBOOLEAN && t != LUA_TNUMBER)
		luaL_error(L, "field '%s': a boolean expected, got %s", k, luaL_typename(L, -1));
	lua_pop(L, 1);
	return v;
}

static uint32_t check_u32(lua_State *L, int arg)
{
	lua_Integer v = luaL_checkinteger(L, arg);
	luaL_argcheck(L, v >= 0 && v <= UINT32_MAX, arg, "out of range");
	return (uint32_t)v;
}

/* ---- configurations ---- */

/* WHAT: the entry, for the message. */
static void check_level(lua_State *L, int idx, const char *what, int level, rtl_cache_level *l)
{
	/* a level given is present unless it says otherwise */
	int given = lua_getfield(L, idx, "present") != LUA_TNIL;
	lua_pop(L, 1);
	l->present = !given || opt_flag(L, idx, "present");
	l->size = (uint64_t)script_opt_int(L, idx, "size", 0);
	l->assoc = (uint32_t)opt_range(L, idx, "assoc", 0, 0, UINT32_MAX);
	l->line = (uint32_t)opt_range(L, idx, "line", 0, 0, UINT32_MAX);
	l->repl = (int)opt_range(L, idx, "repl", RTL_REPL_LRU, INT32_MIN, INT32_MAX);
	l->write = (int)opt_range(L, idx, "write", RTL_WRITE_BACK, INT32_MIN, INT32_MAX);
	l->no_write_allocate = opt_flag(L, idx, "no_write_allocate");
}

static void check_config(lua_State *L, int idx, const char *what, rtl_cache_config *c)
{
	idx = lua_absindex(L, idx);
	luaL_checktype(L, idx, LUA_TTABLE);
	memset(c, 0, sizeof(*c));
	const char *name = script_opt_str(L, idx, "name", "");
	if (strlen(name) >= sizeof(c->name))
		luaL_error(L, "field 'name': longer than %d bytes", (int)sizeof(c->name) - 1);
	strcpy(c->name, name);
	int t = lua_getfield(L, idx, "level");
	if (t != LUA_TNIL && t != LUA_TTABLE)
		luaL_error(L, "field 'level': a table expected, got %s", luaL_typename(L, -1));
	for (int i = 0; t == LUA_TTABLE && i < RTL_LEVELS; i++) {
		int lt = lua_geti(L, -1, i);
		if (lt == LUA_TTABLE)
			check_level(L, lua_gettop(L), what, i, &c->level[i]);
		else if (lt != LUA_TNIL)
			luaL_error(L, "level[%d]: a table expected, got %s", i, luaL_typename(L, -1));
		lua_pop(L, 1);
	}
	lua_pop(L, 1);
	c->cross = (int)opt_range(L, idx, "cross", RTL_CROSS_SPLIT, INT32_MIN, INT32_MAX);
	c->modify_as_load = opt_flag(L, idx, "modify_as_load");
	c->max_data_size = (uint32_t)opt_range(L, idx, "max_data_size", 0, 0, UINT32_MAX);
	c->inclusive = opt_flag(L, idx, "inclusive");
	c->seed = (uint64_t)script_opt_int(L, idx, "seed", 0);
}

static void push_level(lua_State *L, const rtl_cache_level *l)
{
	lua_createtable(L, 0, 7);
	script_set_bool(L, "present", l->present);
	script_set_uint(L, "size", l->size);
	script_set_uint(L, "assoc", l->assoc);
	script_set_uint(L, "line", l->line);
	script_set_int(L, "repl", l->repl);
	script_set_int(L, "write", l->write);
	script_set_bool(L, "no_write_allocate", l->no_write_allocate);
}

static void push_config(lua_State *L, const rtl_cache_config *c)
{
	lua_createtable(L, 0, 7);
	script_set_str(L, "name", c->name);
	lua_createtable(L, RTL_LEVELS, 1);
	for (int i = 0; i < RTL_LEVELS; i++) {
		push_level(L, &c->level[i]);
		lua_seti(L, -2, i);
	}
	lua_setfield(L, -2, "level");
	script_set_int(L, "cross", c->cross);
	script_set_bool(L, "modify_as_load", c->modify_as_load);
	script_set_uint(L, "max_data_size", c->max_data_size);
	script_set_bool(L, "inclusive", c->inclusive);
	script_set_uint(L, "seed", c->seed);
}

static int l_cache_config_parse(lua_State *L)
{
	rtl_cache_config c;
	char err[256] = "";
	int rc = rtl_cache_config_parse(luaL_checkstring(L, 1), &c, err, sizeof(err));
	if (rc < 0)
		return luaL_error(L, "cache_config_parse: %s", *err ? err : rtl_strerror(rc));
	push_config(L, &c);
	return 1;
}

static int l_cache_config_check(lua_State *L)
{
	rtl_cache_config c;
	char err[256] = "";
	check_config(L, 1, "cache_config_check", &c);
	int rc = rtl_cache_config_check(&c, err, sizeof(err));
	if (rc < 0)
		return luaL_error(L, "cache_config_check: %s", *err ? err : rtl_strerror(rc));
	lua_pushboolean(L, 1);
	return 1;
}

/* ---- the bank ---- */

static void flush(lua_State *L, struct bank *k)
{
	size_t n = k->n;
	k->n = 0;   /* dropped on failure: a second flush would fail the same way */
	int rc = rtl_cachesim_push(k->sim, k->buf, n);
	if (rc < 0)
		script_fail(L, "cachesim_push", rc);
}

/* The bank at ARG with its buffered accesses simulated. */
static struct bank *check_bank(lua_State *L, int arg)
{
	struct bank *k = script_check_object(L, arg, BANK_MT);
	if (k->n)
		flush(L, k);
	return k;
}

static int l_cachesim_create(lua_State *L)
{
	void **box = script_new_object(L, BANK_MT, NULL);
	struct bank *k = malloc(sizeof(*k));
	int rc = k ? rtl_cachesim_create(&k->sim) : -ENOMEM;
	if (rc < 0) {
		free(k);
		return script_fail(L, "cachesim_create", rc);
	}
	k->n = 0;
	*box = k;
	return 1;
}

static int l_cachesim_destroy(lua_State *L)
{
	void **box = script_check_box(L, 1, BANK_MT);
	struct bank *k = *box;
	if (k) {
		rtl_cachesim_destroy(k->sim);
		free(k);
		*box = NULL;
	}
	return 0;
}

static int l_cachesim_add(lua_State *L)
{
	struct bank *k = check_bank(L, 1);
	rtl_cache_config c;
	check_config(L, 2, "cachesim_add", &c);
	int rc = rtl_cachesim_add(k->sim, &c);
	if (rc < 0)
		return script_fail(L, "cachesim_add", rc);
	lua_pushinteger(L, rc);
	return 1;
}

static int l_cachesim_enable_reuse(lua_State *L)
{
	int rc = rtl_cachesim_enable_reuse(check_bank(L, 1)->sim, check_u32(L, 2));
	return rc < 0 ? script_fail(L, "cachesim_enable_reuse", rc) : 0;
}

static int l_cachesim_set_threads(lua_State *L)
{
	int rc = rtl_cachesim_set_threads(check_bank(L, 1)->sim, (int)luaL_checkinteger(L, 2));
	return rc < 0 ? script_fail(L, "cachesim_set_threads", rc) : 0;
}

static int l_cachesim_enable_attribution(lua_State *L)
{
	struct bank *k = check_bank(L, 1);
	int rc = rtl_cachesim_enable_attribution(k->sim, (int)luaL_checkinteger(L, 2),
						 (int)luaL_checkinteger(L, 3));
	return rc < 0 ? script_fail(L, "cachesim_enable_attribution", rc) : 0;
}

static int l_cachesim_enable_miss_attribution(lua_State *L)
{
	struct bank *k = check_bank(L, 1);
	int rc = rtl_cachesim_enable_miss_attribution(k->sim, (int)luaL_checkinteger(L, 2),
						      (int)luaL_checkinteger(L, 3));
	return rc < 0 ? script_fail(L, "cachesim_enable_miss_attribution", rc) : 0;
}

static void check_access(lua_State *L, int idx, rtl_access *a)
{
	a->addr = (uint64_t)script_opt_int(L, idx, "addr", 0);
	a->iaddr = (uint64_t)script_opt_int(L, idx, "iaddr", 0);
	a->size = (uint32_t)opt_range(L, idx, "size", 1, 0, UINT32_MAX);
	a->kind = (uint32_t)opt_range(L, idx, "kind", RTL_ACC_LOAD, 0, UINT32_MAX);
}

/* push(b, list) and warm_lower(b, list): the C entry WHAT on the whole
 * list (all or nothing, as in C). */
static int push_list(lua_State *L, struct bank *k, const char *what,
		     int (*entry)(rtl_cachesim *, const rtl_access *, size_t))
{
	size_t n = (size_t)luaL_len(L, 2);
	rtl_access *acc = lua_newuserdatauv(L, (n ? n : 1) * sizeof(*acc), 0);
	for (size_t i = 0; i < n; i++) {
		if (lua_geti(L, 2, (lua_Integer)i + 1) != LUA_TTABLE)
			return luaL_error(L, "%s: access %d: a table expected", what, (int)i + 1);
		check_access(L, -1, &acc[i]);
		lua_pop(L, 1);
	}
	int rc = entry(k->sim, acc, n);
	return rc < 0 ? script_fail(L, what, rc) : 0;
}

static int l_cachesim_push(lua_State *L)
{
	if (lua_type(L, 2) == LUA_TTABLE)
		return push_list(L, check_bank(L, 1), "cachesim_push", rtl_cachesim_push);
	struct bank *k = script_check_object(L, 1, BANK_MT);
	lua_Integer kind = luaL_checkinteger(L, 4);
	rtl_access *a = &k->buf[k->n];
	a->addr = (uint64_t)luaL_checkinteger(L, 2);
	a->size = check_u32(L, 3);
	a->iaddr = (uint64_t)luaL_optinteger(L, 5, 0);
	/* refused here, as the C entry refuses it, not at the flush */
	if ((lua_Unsigned)kind > RTL_ACC_IFETCH)
		return script_fail(L, "cachesim_push", -EINVAL);
	a->kind = (uint32_t)kind;
	if (++k->n == BANK_BUF)
		flush(L, k);
	return 0;
}

static int l_cachesim_warm_lower(lua_State *L)
{
	luaL_checktype(L, 2, LUA_TTABLE);
	return push_list(L, check_bank(L, 1), "cachesim_warm_lower", rtl_cachesim_warm_lower);
}

static int l_cachesim_count(lua_State *L)
{
	lua_pushinteger(L, rtl_cachesim_count(check_bank(L, 1)->sim));
	return 1;
}

static int l_cachesim_config(lua_State *L)
{
	struct bank *k = check_bank(L, 1);
	const rtl_cache_config *c = rtl_cachesim_config(k->sim, (int)luaL_checkinteger(L, 2));
	if (c)
		push_config(L, c);
	else
		lua_pushnil(L);
	return 1;
}

static void push_kinds(lua_State *L, const char *field, const uint64_t *v)
{
	lua_createtable(L, RTL_ACC_KINDS, 1);
	for (int i = 0; i < RTL_ACC_KINDS; i++) {
		lua_pushinteger(L, (lua_Integer)v[i]);
		lua_seti(L, -2, i);
	}
	lua_setfield(L, -2, field);
}

static int l_cachesim_stats(lua_State *L)
{
	struct bank *k = check_bank(L, 1);
	rtl_cache_stats s;
	int rc = rtl_cachesim_stats(k->sim, (int)luaL_checkinteger(L, 2), (int)luaL_checkinteger(L, 3), &s);
	if (rc < 0)
		return script_fail(L, "cachesim_stats", rc);
	lua_createtable(L, 0, 4);
	push_kinds(L, "access", s.access);
	push_kinds(L, "miss", s.miss);
	script_set_uint(L, "compulsory", s.compulsory);
	script_set_uint(L, "writebacks", s.writebacks);
	return 1;
}

static int l_cachesim_engines(lua_State *L)
{
	lua_pushinteger(L, rtl_cachesim_engines(check_bank(L, 1)->sim));
	return 1;
}

static int l_cachesim_reuse(lua_State *L)
{
	rtl_reuse_hist h;
	int rc = rtl_cachesim_reuse(check_bank(L, 1)->sim, &h);
	if (rc < 0)
		return script_fail(L, "cachesim_reuse", rc);
	lua_createtable(L, 0, 4);
	script_set_uint(L, "line", h.line);
	script_set_uint(L, "total", h.total);
	script_set_uint(L, "cold", h.cold);
	lua_createtable(L, RTL_REUSE_BUCKETS, 1);
	for (int i = 0; i < RTL_REUSE_BUCKETS; i++) {
		lua_pushinteger(L, (lua_Integer)h.bucket[i]);
		lua_seti(L, -2, i);
	}
	lua_setfield(L, -2, "bucket");
	return 1;
}

static int l_reuse_misses(lua_State *L)
{
	rtl_reuse_hist h = { 0 };
	luaL_checktype(L, 1, LUA_TTABLE);
	h.line = (uint32_t)opt_range(L, 1, "line", 0, 0, UINT32_MAX);
	h.total = (uint64_t)script_opt_int(L, 1, "total", 0);
	h.cold = (uint64_t)script_opt_int(L, 1, "cold", 0);
	int t = lua_getfield(L, 1, "bucket");
	if (t != LUA_TNIL && t != LUA_TTABLE)
		return luaL_error(L, "field 'bucket': a table expected, got %s", luaL_typename(L, -1));
	for (int i = 0; t == LUA_TTABLE && i < RTL_REUSE_BUCKETS; i++) {
		int ok = lua_geti(L, -1, i) == LUA_TNIL;
		h.bucket[i] = ok ? 0 : (uint64_t)lua_tointegerx(L, -1, &ok);
		if (!ok)
			return luaL_error(L, "bucket[%d]: an integer expected", i);
		lua_pop(L, 1);
	}
	lua_pushinteger(L, (lua_Integer)rtl_reuse_misses(&h, (uint64_t)luaL_checkinteger(L, 2)));
	return 1;
}

static void push_cost(lua_State *L, const rtl_instr_cost *c)
{
	lua_createtable(L, 0, 3);
	script_set_uint(L, "iaddr", c->iaddr);
	script_set_uint(L, "access", c->access);
	script_set_uint(L, "miss", c->miss);
}

/* The Lua function is at index 2. */
static int call_instr(const rtl_instr_cost *c, void *user)
{
	lua_State *L = user;
	lua_pushvalue(L, 2);
	push_cost(L, c);
	if (script_call(L, 1, 1) < 0)
		return -1;
	int stop = lua_toboolean(L, -1);
	lua_pop(L, 1);
	return stop;
}

static int l_cachesim_foreach_instr(lua_State *L)
{
	struct bank *k = check_bank(L, 1);
	luaL_checktype(L, 2, LUA_TFUNCTION);
	lua_settop(L, 2);
	int rc = rtl_cachesim_foreach_instr(k->sim, call_instr, L);
	script_rethrow(L);
	return rc < 0 ? script_fail(L, "cachesim_foreach_instr", rc) : 0;
}

static int l_cachesim_sum_functions(lua_State *L)
{
	struct bank *k = check_bank(L, 1);
	luaL_checktype(L, 2, LUA_TTABLE);
	size_t n = (size_t)luaL_len(L, 2);
	uint64_t (*ranges)[2] = lua_newuserdatauv(L, (n ? n : 1) * sizeof(*ranges), 0);
	rtl_instr_cost *out = lua_newuserdatauv(L, (n ? n : 1) * sizeof(*out), 0);
	for (size_t i = 0; i < n; i++) {
		if (lua_geti(L, 2, (lua_Integer)i + 1) != LUA_TTABLE)
			return luaL_error(L, "cachesim_sum_functions: range %d: a {start, end} table expected",
					  (int)i + 1);
		for (int j = 0; j < 2; j++) {
			lua_geti(L, -1, j + 1);
			ranges[i][j] = (uint64_t)luaL_checkinteger(L, -1);
			lua_pop(L, 1);
		}
		lua_pop(L, 1);
	}
	int rc = rtl_cachesim_sum_functions(k->sim, (const uint64_t (*)[2])ranges, n, out);
	if (rc < 0)
		return script_fail(L, "cachesim_sum_functions", rc);
	lua_createtable(L, (int)n, 0);
	for (size_t i = 0; i < n; i++) {
		push_cost(L, &out[i]);
		lua_seti(L, -2, (lua_Integer)i + 1);
	}
	return 1;
}

/* ---- trace files ---- */

static int l_trace_open(lua_State *L)
{
	const char *path = luaL_optstring(L, 1, NULL);
	int format = (int)luaL_optinteger(L, 2, RTL_TRACE_AUTO);
	void **box = script_new_object(L, TRACE_MT, NULL);
	int rc = rtl_trace_open(path, format, (rtl_trace_reader **)box);
	return rc < 0 ? script_fail(L, "trace_open", rc) : 1;
}

static void push_access(lua_State *L, const rtl_access *a)
{
	lua_createtable(L, 0, 4);
	script_set_uint(L, "addr", a->addr);
	script_set_uint(L, "iaddr", a->iaddr);
	script_set_uint(L, "size", a->size);
	script_set_uint(L, "kind", a->kind);
}

static int l_trace_read(lua_State *L)
{
	rtl_trace_reader *r = script_check_object(L, 1, TRACE_MT);
	lua_Integer max = luaL_checkinteger(L, 2);
	luaL_argcheck(L, max >= 0 && (uint64_t)max <= SIZE_MAX / sizeof(rtl_access), 2, "out of range");
	rtl_access *buf = lua_newuserdatauv(L, (size_t)(max ? max : 1) * sizeof(*buf), 0);
	long n = rtl_trace_read(r, buf, (size_t)max);
	if (n == -RTL_ERR_BAD_INPUT)
		return luaL_error(L, "trace_read: %s", rtl_trace_error(r));
	if (n < 0)
		return script_fail(L, "trace_read", (int)n);
	lua_createtable(L, (int)n, 0);
	for (long i = 0; i < n; i++) {
		push_access(L, &buf[i]);
		lua_seti(L, -2, i + 1);
	}
	return 1;
}

static int l_trace_error(lua_State *L)
{
	lua_pushstring(L, rtl_trace_error(script_check_object(L, 1, TRACE_MT)));
	return 1;
}

static int l_trace_line(lua_State *L)
{
	lua_pushinteger(L, (lua_Integer)rtl_trace_line(script_check_object(L, 1, TRACE_MT)));
	return 1;
}

static int l_trace_close(lua_State *L)
{
	void **box = script_check_box(L, 1, TRACE_MT);
	rtl_trace_close(*box);
	*box = NULL;
	return 0;
}

/* ---- basic-block vectors and SimPoint ---- */

static int l_bbv_create(lua_State *L)
{
	void **box = script_new_object(L, BBV_MT, NULL);
	int rc = rtl_bbv_create((rtl_bbv **)box);
	return rc < 0 ? script_fail(L, "bbv_create", rc) : 1;
}

static int l_bbv_destroy(lua_State *L)
{
	void **box = script_check_box(L, 1, BBV_MT);
	rtl_bbv_destroy(*box);
	*box = NULL;
	return 0;
}

static int l_bbv_add_interval(lua_State *L)
{
	rtl_bbv *v = script_check_object(L, 1, BBV_MT);
	luaL_checktype(L, 2, LUA_TTABLE);
	luaL_checktype(L, 3, LUA_TTABLE);
	size_t n = (size_t)luaL_len(L, 2);
	luaL_argcheck(L, (size_t)luaL_len(L, 3) == n, 3, "not as long as the ids");
	uint32_t *ids = lua_newuserdatauv(L, (n ? n : 1) * sizeof(*ids), 0);
	uint64_t *counts = lua_newuserdatauv(L, (n ? n : 1) * sizeof(*counts), 0);
	for (size_t i = 0; i < n; i++) {
		lua_geti(L, 2, (lua_Integer)i + 1);
		lua_Integer id = luaL_checkinteger(L, -1);
		luaL_argcheck(L, id >= 0 && id <= UINT32_MAX, 2, "an id out of range");
		ids[i] = (uint32_t)id;
		lua_geti(L, 3, (lua_Integer)i + 1);
		counts[i] = (uint64_t)luaL_checkinteger(L, -1);
		lua_pop(L, 2);
	}
	int rc = rtl_bbv_add_interval(v, ids, counts, n);
	return rc < 0 ? script_fail(L, "bbv_add_interval", rc) : 0;
}

static int l_bbv_read(lua_State *L)
{
	const char *path = luaL_checkstring(L, 1);
	char err[512] = "";
	void **box = script_new_object(L, BBV_MT, NULL);
	int rc = rtl_bbv_read(path, (rtl_bbv **)box, err, sizeof(err));
	if (rc == -RTL_ERR_BAD_INPUT)
		return luaL_error(L, "bbv_read: %s", err);
	if (rc < 0)
		return luaL_error(L, "bbv_read: %s: %s", path, rtl_strerror(rc));
	return 1;
}

static int l_bbv_intervals(lua_State *L)
{
	lua_pushinteger(L, (lua_Integer)rtl_bbv_intervals(script_check_object(L, 1, BBV_MT)));
	return 1;
}

static int l_bbv_interval_total(lua_State *L)
{
	rtl_bbv *v = script_check_object(L, 1, BBV_MT);
	lua_Integer i = luaL_checkinteger(L, 2);
	luaL_argcheck(L, i >= 0, 2, "negative");
	lua_pushinteger(L, (lua_Integer)rtl_bbv_interval_total(v, (size_t)i));
	return 1;
}

static void check_simpoint_opts(lua_State *L, int idx, rtl_simpoint_opts *o)
{
	o->max_k = (int)opt_range(L, idx, "max_k", 10, INT32_MIN, INT32_MAX);
	o->seed = (uint64_t)script_opt_int(L, idx, "seed", 1);
	o->dims = (int)opt_range(L, idx, "dims", 15, INT32_MIN, INT32_MAX);
	o->inits = (int)opt_range(L, idx, "inits", 5, INT32_MIN, INT32_MAX);
	o->iters = (int)opt_range(L, idx, "iters", 100, INT32_MIN, INT32_MAX);
	o->bic_frac = script_opt_num(L, idx, "bic_frac", 0.9);
	o->points = (size_t)opt_range(L, idx, "points", 0, 0, INT32_MAX);
}

static void push_simpoint_result(lua_State *L, const rtl_simpoint_result *r, size_t intervals)
{
	lua_createtable(L, 0, 5);
	script_set_int(L, "k", r->k);
	script_set_int(L, "tried", r->tried);
	lua_createtable(L, r->tried, 0);
	for (int i = 0; i < r->tried; i++) {
		lua_pushnumber(L, r->bic[i]);
		lua_seti(L, -2, i + 1);
	}
	lua_setfield(L, -2, "bic");
	lua_createtable(L, (int)r->npoints, 0);
	for (size_t i = 0; i < r->npoints; i++) {
		lua_createtable(L, 0, 4);
		script_set_uint(L, "interval", r->points[i].interval);
		script_set_num(L, "weight", r->points[i].weight);
		script_set_int(L, "cluster", r->points[i].cluster);
		script_set_uint(L, "members", r->points[i].members);
		lua_seti(L, -2, (lua_Integer)i + 1);
	}
	lua_setfield(L, -2, "points");
	lua_createtable(L, (int)intervals, 0);
	for (size_t i = 0; i < intervals; i++) {
		lua_pushinteger(L, r->label[i]);
		lua_seti(L, -2, (lua_Integer)i + 1);
	}
	lua_setfield(L, -2, "label");
}

/* The result's arrays are malloc'ed: the Lua tables are made in a
 * protected call so that a memory error there does not leak them. */
static int push_simpoint_protected(lua_State *L)
{
	push_simpoint_result(L, lua_touserdata(L, 1), (size_t)lua_tointeger(L, 2));
	return 1;
}

static int l_simpoint_choose(lua_State *L)
{
	rtl_bbv *v = script_check_object(L, 1, BBV_MT);
	rtl_simpoint_opts o;
	rtl_simpoint_result r;
	if (lua_isnoneornil(L, 2)) {
		lua_settop(L, 1);
		lua_newtable(L);   /* every field at its default */
	}
	luaL_checktype(L, 2, LUA_TTABLE);
	check_simpoint_opts(L, 2, &o);
	int rc = rtl_simpoint_choose(v, &o, &r);
	if (rc < 0)
		return script_fail(L, "simpoint_choose", rc);
	lua_pushcfunction(L, push_simpoint_protected);
	lua_pushlightuserdata(L, &r);
	lua_pushinteger(L, (lua_Integer)rtl_bbv_intervals(v));
	rc = lua_pcall(L, 2, 1, 0);
	free(r.points);
	free(r.label);
	if (rc != LUA_OK)
		return lua_error(L);
	return 1;
}

/* ---- the module ---- */

static void add_constants(lua_State *L)
{
	static const struct { const char *name; int value; } k[] = {
		{ "ACC_LOAD", RTL_ACC_LOAD }, { "ACC_STORE", RTL_ACC_STORE },
		{ "ACC_MODIFY", RTL_ACC_MODIFY }, { "ACC_IFETCH", RTL_ACC_IFETCH },
		{ "ACC_WRITEBACK", RTL_ACC_WRITEBACK }, { "ACC_KINDS", RTL_ACC_KINDS },
		{ "REPL_LRU", RTL_REPL_LRU }, { "REPL_FIFO", RTL_REPL_FIFO },
		{ "REPL_RANDOM", RTL_REPL_RANDOM }, { "REPL_PLRU", RTL_REPL_PLRU },
		{ "WRITE_BACK", RTL_WRITE_BACK }, { "WRITE_THROUGH", RTL_WRITE_THROUGH },
		{ "WRITE_NONE", RTL_WRITE_NONE },
		{ "L1I", RTL_L1I }, { "L1D", RTL_L1D }, { "L1", RTL_L1 }, { "L2", RTL_L2 },
		{ "L3", RTL_L3 }, { "LEVELS", RTL_LEVELS },
		{ "CROSS_SPLIT", RTL_CROSS_SPLIT }, { "CROSS_ONCE", RTL_CROSS_ONCE },
		{ "REUSE_BUCKETS", RTL_REUSE_BUCKETS },
		{ "TRACE_AUTO", RTL_TRACE_AUTO }, { "TRACE_DIN", RTL_TRACE_DIN },
		{ "TRACE_DIN_CLASSIC", RTL_TRACE_DIN_CLASSIC }, { "TRACE_LACKEY", RTL_TRACE_LACKEY },
	};
	for (size_t i = 0; i < sizeof(k) / sizeof(k[0]); i++) {
		lua_pushinteger(L, k[i].value);
		lua_setfield(L, -2, k[i].name);
	}
}

void script_open_cachesim(lua_State *L)
{
	static const luaL_Reg bank[] = {
		{ "destroy", l_cachesim_destroy }, { "add", l_cachesim_add },
		{ "enable_reuse", l_cachesim_enable_reuse }, { "set_threads", l_cachesim_set_threads },
		{ "enable_attribution", l_cachesim_enable_attribution },
		{ "enable_miss_attribution", l_cachesim_enable_miss_attribution },
		{ "push", l_cachesim_push }, { "warm_lower", l_cachesim_warm_lower }, { "count", l_cachesim_count }, { "config", l_cachesim_config },
		{ "stats", l_cachesim_stats }, { "engines", l_cachesim_engines }, { "reuse", l_cachesim_reuse },
		{ "foreach_instr", l_cachesim_foreach_instr }, { "sum_functions", l_cachesim_sum_functions },
		{ NULL, NULL },
	};
	static const luaL_Reg trace[] = {
		{ "read", l_trace_read }, { "error", l_trace_error }, { "line", l_trace_line },
		{ "close", l_trace_close }, { NULL, NULL },
	};
	static const luaL_Reg bbv[] = {
		{ "destroy", l_bbv_destroy }, { "add_interval", l_bbv_add_interval },
		{ "intervals", l_bbv_intervals }, { "interval_total", l_bbv_interval_total },
		{ NULL, NULL },
	};
	static const luaL_Reg funcs[] = {
		{ "cache_config_parse", l_cache_config_parse }, { "cache_config_check", l_cache_config_check },
		{ "cachesim_create", l_cachesim_create }, { "cachesim_destroy", l_cachesim_destroy },
		{ "cachesim_add", l_cachesim_add }, { "cachesim_enable_reuse", l_cachesim_enable_reuse },
		{ "cachesim_set_threads", l_cachesim_set_threads },
		{ "cachesim_enable_attribution", l_cachesim_enable_attribution },
		{ "cachesim_enable_miss_attribution", l_cachesim_enable_miss_attribution },
		{ "cachesim_push", l_cachesim_push }, { "cachesim_warm_lower", l_cachesim_warm_lower },
		{ "cachesim_count", l_cachesim_count },
		{ "cachesim_config", l_cachesim_config }, { "cachesim_stats", l_cachesim_stats },
		{ "cachesim_engines", l_cachesim_engines }, { "cachesim_reuse", l_cachesim_reuse },
		{ "reuse_misses", l_reuse_misses }, { "cachesim_foreach_instr", l_cachesim_foreach_instr },
		{ "cachesim_sum_functions", l_cachesim_sum_functions },
		{ "trace_open", l_trace_open }, { "trace_read", l_trace_read }, { "trace_error", l_trace_error },
		{ "trace_line", l_trace_line }, { "trace_close", l_trace_close },
		{ "bbv_create", l_bbv_create }, { "bbv_destroy", l_bbv_destroy },
		{ "bbv_add_interval", l_bbv_add_interval }, { "bbv_read", l_bbv_read },
		{ "bbv_intervals", l_bbv_intervals }, { "bbv_interval_total", l_bbv_interval_total },
		{ "simpoint_choose", l_simpoint_choose },
		{ NULL, NULL },
	};
	script_new_class(L, BANK_MT, bank, l_cachesim_destroy);
	script_new_class(L, TRACE_MT, trace, l_trace_close);
	script_new_class(L, BBV_MT, bbv, l_bbv_destroy);
	script_add_functions(L, funcs);
	add_constants(L);
}
