/* reticle/binary.h in Lua (script.h): an rtl_binary is a userdata of class
 * "reticle.binary" whose methods are the entries less "binary_" (b:read(...)
 * for reticle.binary_read(b, ...)). Addresses are link-time, as in C.
 *
 *   reticle.binary_open(path)             -> binary (errors: "binary_open: PATH: why")
 *   reticle.binary_open_image(path)       -> binary without function discovery
 *   reticle.binary_close(b)               closes it (again: nothing; in a foreach: an error)
 *   reticle.binary_path(b)                -> string
 *   reticle.binary_kind(b)                -> reticle.BIN_EXEC, BIN_PIE or BIN_SHARED
 *   reticle.binary_is_static(b)           -> boolean
 *   reticle.binary_has_textrel(b)         -> boolean
 *   reticle.binary_entry(b)               -> integer
 *   reticle.binary_interp(b)              -> string or nil
 *   reticle.binary_identity(b)            -> "b-<build-id>" or "f-<hash>"
 *   reticle.binary_function_count(b)      -> integer
 *   reticle.binary_function(b, i)         -> function or nil; I counts from 0, as in C
 *   reticle.binary_find_function(b, addr) -> the function containing ADDR, or nil
 *       a function: { name, addr, size, sources (reticle.SRC_* bits),
 *                     instrumentable (boolean), reason (string or nil) }
 *   reticle.binary_check_functions(b)     fills instrumentable and reason
 *   reticle.binary_read(b, vaddr, len)    -> string of LEN bytes
 *   reticle.binary_is_readonly(b, vaddr, len) -> boolean
 *   reticle.binary_plt_slot(b, f)         -> GOT slot address or 0; F: a function
 *                                            of B (its addr field is what counts)
 *   reticle.binary_imports(b, name)       -> boolean
 *   reticle.binary_exports(b, name)       -> boolean
 *   reticle.binary_is_go(b)               -> boolean
 *   reticle.binary_segment_count(b)       -> integer
 *   reticle.binary_segment(b, i)          -> { vaddr, memsz, offset, filesz, flags } or nil
 *   reticle.binary_code_pointer_count(b)  -> integer
 *   reticle.binary_code_pointer(b, i)     -> { where, target } or nil
 *   reticle.binary_fde_count(b)           -> integer
 *   reticle.binary_source_line(b, addr)   -> file, line; or nil where DWARF has no line
 *   reticle.binary_has_source_lines(b)    -> boolean
 *   reticle.binary_foreach_source_range(b, fn)  fn{ addr, end, file, line, shared_start }
 *   reticle.binary_foreach_source_name(b, fn)   fn{ addr, size, name, file, line, is_label }
 *   reticle.binary_foreach_inline_range(b, fn)  fn{ addr, end, name, depth }
 *   reticle.binary_foreach_symbol(b, fn)        fn{ name, addr, size, type, bind, index }
 *       each calls FN with a table per item, in the C entry's order; a
 *       result other than nil or false stops the walk and is what the
 *       foreach returns (else nil). Without DWARF (symbols: without a
 *       symbol table) a foreach raises an error.
 *   reticle.demangle(name)                -> string, or nil when NAME is not mangled
 *
 * Constants: reticle.BIN_EXEC, BIN_PIE, BIN_SHARED; reticle.SRC_SYMTAB,
 * SRC_DYNSYM, SRC_PLT, SRC_EH_FRAME, SRC_ENTRY, SRC_GAP, SRC_DEBUG,
 * SRC_GOPCLNTAB. */
#include <errno.h>
#include <stdlib.h>
#include <reticle/binary.h>
#include "script.h"

#define BINARY_MT "reticle.binary"

static rtl_binary *check_binary(lua_State *L)
{
	return script_check_object(L, 1, BINARY_MT);
}

static uint64_t check_u64(lua_State *L, int idx)
{
	return (uint64_t)luaL_checkinteger(L, idx);
}

static size_t check_size(lua_State *L, int idx)
{
	lua_Integer n = luaL_checkinteger(L, idx);
	luaL_argcheck(L, n >= 0, idx, "negative");
	return (size_t)n;
}

/* The object box is made before the binary is opened, so that a failing
 * allocation cannot leak an open binary. */
static int open_with(lua_State *L, int (*open)(const char *, rtl_binary **), const char *what)
{
	const char *path = luaL_checkstring(L, 1);
	void **box = script_new_object(L, BINARY_MT, NULL);
	rtl_binary *bin;
	int err = open(path, &bin);
	if (err)
		return script_fail(L, lua_pushfstring(L, "%s: %s", what, path), err);
	*box = bin;
	return 1;
}

static int l_open(lua_State *L)
{
	return open_with(L, rtl_binary_open, "binary_open");
}

static int l_open_image(lua_State *L)
{
	return open_with(L, rtl_binary_open_image, "binary_open_image");
}

/* The user value of a binary counts the foreach walks under way: the
 * binary must outlive them (it is argument 1 of each, so no __gc then). */
static lua_Integer walks_under_way(lua_State *L)
{
	lua_getiuservalue(L, 1, 1);
	lua_Integer n = lua_tointeger(L, -1);
	lua_pop(L, 1);
	return n;
}

static void count_walks(lua_State *L, lua_Integer delta)
{
	lua_pushinteger(L, walks_under_way(L) + delta);
	lua_setiuservalue(L, 1, 1);
}

static int l_close(lua_State *L)
{
	void **box = script_check_box(L, 1, BINARY_MT);
	if (*box && walks_under_way(L))
		return luaL_error(L, "binary_close: a foreach of this binary is under way");
	rtl_binary_close(*box);
	*box = NULL;
	return 0;
}

static int l_gc(lua_State *L)
{
	void **box = script_check_box(L, 1, BINARY_MT);
	rtl_binary_close(*box);
	*box = NULL;
	return 0;
}

static int l_path(lua_State *L)
{
	lua_pushstring(L, rtl_binary_path(check_binary(L)));
	return 1;
}

static int l_kind(lua_State *L)
{
	lua_pushinteger(L, rtl_binary_kind(check_binary(L)));
	return 1;
}

static int l_is_static(lua_State *L)
{
	lua_pushboolean(L, rtl_binary_is_static(check_binary(L)));
	return 1;
}

static int l_has_textrel(lua_State *L)
{
	lua_pushboolean(L, rtl_binary_has_textrel(check_binary(L)));
	return 1;
}

static int l_entry(lua_State *L)
{
	lua_pushinteger(L, (lua_Integer)rtl_binary_entry(check_binary(L)));
	return 1;
}

static int l_interp(lua_State *L)
{
	const char *interp = rtl_binary_interp(check_binary(L));
	if (interp)
		lua_pushstring(L, interp);
	else
		lua_pushnil(L);
	return 1;
}

static int l_identity(lua_State *L)
{
	char key[256];   /* a 20-byte build-id takes 43 */
	if (rtl_binary_identity(check_binary(L), key, sizeof(key)))
		return luaL_error(L, "binary_identity: no key (the file's status unreadable, or a build-id of over 126 bytes)");
	lua_pushstring(L, key);
	return 1;
}

static int l_function_count(lua_State *L)
{
	lua_pushinteger(L, (lua_Integer)rtl_binary_function_count(check_binary(L)));
	return 1;
}

static int push_function(lua_State *L, const rtl_function *f)
{
	if (!f) {
		lua_pushnil(L);
		return 1;
	}
	lua_createtable(L, 0, 6);
	script_set_str(L, "name", f->name);
	script_set_uint(L, "addr", f->addr);
	script_set_uint(L, "size", f->size);
	script_set_uint(L, "sources", f->sources);
	script_set_bool(L, "instrumentable", f->instrumentable);
	script_set_str(L, "reason", f->reason);
	return 1;
}

static int l_function(lua_State *L)
{
	return push_function(L, rtl_binary_function(check_binary(L), check_size(L, 2)));
}

static int l_find_function(lua_State *L)
{
	return push_function(L, rtl_binary_find_function(check_binary(L), check_u64(L, 2)));
}

static int l_check_functions(lua_State *L)
{
	rtl_binary_check_functions(check_binary(L));
	return 0;
}

static int l_read(lua_State *L)
{
	rtl_binary *bin = check_binary(L);
	uint64_t vaddr = check_u64(L, 2);
	size_t len = check_size(L, 3);
	luaL_Buffer b;
	int err = rtl_binary_read(bin, vaddr, luaL_buffinitsize(L, &b, len), len);
	if (err)
		return script_fail(L, "binary_read", err);
	luaL_pushresultsize(&b, len);
	return 1;
}

static int l_is_readonly(lua_State *L)
{
	rtl_binary *bin = check_binary(L);
	lua_pushboolean(L, rtl_binary_is_readonly(bin, check_u64(L, 2), check_size(L, 3)));
	return 1;
}

/* The record of BIN whose entry is ADDR (records are sorted by address,
 * one per entry), or NULL. find_function would miss a record of size 0. */
static const rtl_function *function_at(const rtl_binary *bin, uint64_t addr)
{
	size_t lo = 0, hi = rtl_binary_function_count(bin);
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const rtl_function *f = rtl_binary_function(bin, mid);
		if (f->addr == addr)
			return f;
		if (f->addr < addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/* The C entry takes a record of BIN: a Lua function table names its
 * record by its address. */
static int l_plt_slot(lua_State *L)
{
	rtl_binary *bin = check_binary(L);
	luaL_checktype(L, 2, LUA_TTABLE);
	const rtl_function *f = function_at(bin, (uint64_t)script_opt_int(L, 2, "addr", -1));
	luaL_argcheck(L, f != NULL, 2, "not a function of this binary");
	lua_pushinteger(L, (lua_Integer)rtl_binary_plt_slot(bin, f));
	return 1;
}

static int l_imports(lua_State *L)
{
	rtl_binary *bin = check_binary(L);
	lua_pushboolean(L, rtl_binary_imports(bin, luaL_checkstring(L, 2)));
	return 1;
}

static int l_exports(lua_State *L)
{
	rtl_binary *bin = check_binary(L);
	lua_pushboolean(L, rtl_binary_exports(bin, luaL_checkstring(L, 2)));
	return 1;
}

static int l_is_go(lua_State *L)
{
	lua_pushboolean(L, rtl_binary_is_go(check_binary(L)));
	return 1;
}

static int l_segment_count(lua_State *L)
{
	lua_pushinteger(L, (lua_Integer)rtl_binary_segment_count(check_binary(L)));
	return 1;
}

static int l_segment(lua_State *L)
{
	const rtl_segment *s = rtl_binary_segment(check_binary(L), check_size(L, 2));
	if (!s) {
		lua_pushnil(L);
		return 1;
	}
	lua_createtable(L, 0, 5);
	script_set_uint(L, "vaddr", s->vaddr);
	script_set_uint(L, "memsz", s->memsz);
	script_set_uint(L, "offset", s->offset);
	script_set_uint(L, "filesz", s->filesz);
	script_set_uint(L, "flags", s->flags);
	return 1;
}

static int l_code_pointer_count(lua_State *L)
{
	lua_pushinteger(L, (lua_Integer)rtl_binary_code_pointer_count(check_binary(L)));
	return 1;
}

static int l_code_pointer(lua_State *L)
{
	const rtl_code_pointer *p = rtl_binary_code_pointer(check_binary(L), check_size(L, 2));
	if (!p) {
		lua_pushnil(L);
		return 1;
	}
	lua_createtable(L, 0, 2);
	script_set_uint(L, "where", p->where);
	script_set_uint(L, "target", p->target);
	return 1;
}

static int l_fde_count(lua_State *L)
{
	lua_pushinteger(L, (lua_Integer)rtl_binary_fde_count(check_binary(L)));
	return 1;
}

/* -ENOENT is the usual answer for code without lines: nil, not an error. */
static int l_source_line(lua_State *L)
{
	const char *file;
	int line;
	int err = rtl_binary_source_line(check_binary(L), check_u64(L, 2), &file, &line);
	if (err == -ENOENT) {
		lua_pushnil(L);
		return 1;
	}
	if (err)
		return script_fail(L, "binary_source_line", err);
	lua_pushstring(L, file);
	lua_pushinteger(L, line);
	return 2;
}

static int l_has_source_lines(lua_State *L)
{
	lua_pushboolean(L, rtl_binary_has_source_lines(check_binary(L)));
	return 1;
}

/* The foreach walks. Stack: 1 the binary, 2 the Lua function, 3 the value
 * that stopped the walk (nil until then). */
static rtl_binary *begin_walk(lua_State *L)
{
	rtl_binary *bin = check_binary(L);
	luaL_checktype(L, 2, LUA_TFUNCTION);
	lua_settop(L, 2);
	lua_pushnil(L);
	count_walks(L, 1);
	return bin;
}

/* Calls the Lua function with the item table on top of the stack: 0 to go
 * on, 1 to stop (a true result, kept in slot 3), -1 on a Lua error (kept
 * by script_call until end_walk). */
static int visit(lua_State *L)
{
	lua_pushvalue(L, 2);
	lua_insert(L, -2);
	if (script_call(L, 1, 1))
		return -1;
	if (!lua_toboolean(L, -1)) {
		lua_pop(L, 1);
		return 0;
	}
	lua_replace(L, 3);
	return 1;
}

static int end_walk(lua_State *L, int err, const char *what)
{
	count_walks(L, -1);
	script_rethrow(L);   /* a Lua error in the function before the -1 it caused */
	if (err < 0)
		return script_fail(L, what, err);
	return 1;
}

static int visit_source_range(const rtl_source_range *r, void *user)
{
	lua_State *L = user;
	lua_createtable(L, 0, 5);
	script_set_uint(L, "addr", r->addr);
	script_set_uint(L, "end", r->end);
	script_set_str(L, "file", r->file);
	script_set_int(L, "line", r->line);
	script_set_bool(L, "shared_start", r->shared_start);
	return visit(L);
}

static int l_foreach_source_range(lua_State *L)
{
	rtl_binary *bin = begin_walk(L);
	return end_walk(L, rtl_binary_foreach_source_range(bin, visit_source_range, L),
			"binary_foreach_source_range");
}

static int visit_source_name(const rtl_source_name *n, void *user)
{
	lua_State *L = user;
	lua_createtable(L, 0, 6);
	script_set_uint(L, "addr", n->addr);
	script_set_uint(L, "size", n->size);
	script_set_str(L, "name", n->name);
	script_set_str(L, "file", n->file);
	script_set_int(L, "line", n->line);
	script_set_bool(L, "is_label", n->is_label);
	return visit(L);
}

static int l_foreach_source_name(lua_State *L)
{
	rtl_binary *bin = begin_walk(L);
	return end_walk(L, rtl_binary_foreach_source_name(bin, visit_source_name, L),
			"binary_foreach_source_name");
}

static int visit_inline_range(const rtl_inline_range *r, void *user)
{
	lua_State *L = user;
	lua_createtable(L, 0, 4);
	script_set_uint(L, "addr", r->addr);
	script_set_uint(L, "end", r->end);
	script_set_str(L, "name", r->name);
	script_set_int(L, "depth", r->depth);
	return visit(L);
}

static int l_foreach_inline_range(lua_State *L)
{
	rtl_binary *bin = begin_walk(L);
	return end_walk(L, rtl_binary_foreach_inline_range(bin, visit_inline_range, L),
			"binary_foreach_inline_range");
}

static int visit_symbol(const rtl_symbol *s, void *user)
{
	lua_State *L = user;
	lua_createtable(L, 0, 6);
	script_set_str(L, "name", s->name);
	script_set_uint(L, "addr", s->addr);
	script_set_uint(L, "size", s->size);
	script_set_int(L, "type", s->type);
	script_set_int(L, "bind", s->bind);
	script_set_uint(L, "index", s->index);
	return visit(L);
}

static int l_foreach_symbol(lua_State *L)
{
	rtl_binary *bin = begin_walk(L);
	return end_walk(L, rtl_binary_foreach_symbol(bin, visit_symbol, L), "binary_foreach_symbol");
}

static int l_demangle(lua_State *L)
{
	char *plain = rtl_demangle(luaL_checkstring(L, 1));
	if (!plain) {
		lua_pushnil(L);
		return 1;
	}
	lua_pushstring(L, plain);
	free(plain);
	return 1;
}

/* The entries that take a binary: its methods, and "binary_" NAME in the
 * module. */
static const luaL_Reg binary_entries[] = {
	{ "close", l_close },
	{ "path", l_path },
	{ "kind", l_kind },
	{ "is_static", l_is_static },
	{ "has_textrel", l_has_textrel },
	{ "entry", l_entry },
	{ "interp", l_interp },
	{ "identity", l_identity },
	{ "function_count", l_function_count },
	{ "function", l_function },
	{ "find_function", l_find_function },
	{ "check_functions", l_check_functions },
	{ "read", l_read },
	{ "is_readonly", l_is_readonly },
	{ "plt_slot", l_plt_slot },
	{ "imports", l_imports },
	{ "exports", l_exports },
	{ "is_go", l_is_go },
	{ "segment_count", l_segment_count },
	{ "segment", l_segment },
	{ "code_pointer_count", l_code_pointer_count },
	{ "code_pointer", l_code_pointer },
	{ "fde_count", l_fde_count },
	{ "source_line", l_source_line },
	{ "has_source_lines", l_has_source_lines },
	{ "foreach_source_range", l_foreach_source_range },
	{ "foreach_source_name", l_foreach_source_name },
	{ "foreach_inline_range", l_foreach_inline_range },
	{ "foreach_symbol", l_foreach_symbol },
	{ NULL, NULL },
};

static void add_constants(lua_State *L)
{
	script_set_int(L, "BIN_EXEC", RTL_BIN_EXEC);
	script_set_int(L, "BIN_PIE", RTL_BIN_PIE);
	script_set_int(L, "BIN_SHARED", RTL_BIN_SHARED);
	script_set_int(L, "SRC_SYMTAB", RTL_SRC_SYMTAB);
	script_set_int(L, "SRC_DYNSYM", RTL_SRC_DYNSYM);
	script_set_int(L, "SRC_PLT", RTL_SRC_PLT);
	script_set_int(L, "SRC_EH_FRAME", RTL_SRC_EH_FRAME);
	script_set_int(L, "SRC_ENTRY", RTL_SRC_ENTRY);
	script_set_int(L, "SRC_GAP", RTL_SRC_GAP);
	script_set_int(L, "SRC_DEBUG", RTL_SRC_DEBUG);
	script_set_int(L, "SRC_GOPCLNTAB", RTL_SRC_GOPCLNTAB);
}

void script_open_binary(lua_State *L)
{
	static const luaL_Reg module_only[] = {
		{ "binary_open", l_open }, { "binary_open_image", l_open_image }, { "demangle", l_demangle },
		{ NULL, NULL },
	};
	script_new_class(L, BINARY_MT, binary_entries, l_gc);
	for (const luaL_Reg *e = binary_entries; e->name; e++) {
		lua_pushfstring(L, "binary_%s", e->name);
		lua_pushcfunction(L, e->func);
		lua_settable(L, -3);
	}
	script_add_functions(L, module_only);
	add_constants(L);
}
