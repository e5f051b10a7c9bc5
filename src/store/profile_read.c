/* Profile store, read side: each foreach prepares one query, hands rows to
 * the caller's callback and finalizes. Works on a reader and on a writer
 * (a writer sees its own uncommitted rows). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <reticle/error.h>
#include "store/store_priv.h"

static const char *text_or_null(sqlite3_stmt *s, int i)
{
	return (const char *)sqlite3_column_text(s, i);
}

static uint64_t u64(sqlite3_stmt *s, int i)
{
	return (uint64_t)sqlite3_column_int64(s, i);
}

const char *rtl_profile_get_meta(rtl_profile *p, const char *key)
{
	sqlite3_stmt *s;
	const char *v;

	if (!p || !key || !(s = store_stmt(p, ST_GET_META)))
		return NULL;
	sqlite3_bind_text(s, 1, key, -1, SQLITE_STATIC);
	if (sqlite3_step(s) != SQLITE_ROW || !(v = text_or_null(s, 0)))
		return NULL;
	free(p->meta_value);
	p->meta_value = strdup(v);
	sqlite3_reset(s);
	return p->meta_value;
}

/* A damaged file is the user's problem, reported by the caller in one
 * line; anything else is the store's and is logged. */
static int read_fail(rtl_profile *p, int rc, const char *what)
{
	if ((rc & 0xff) == SQLITE_CORRUPT || (rc & 0xff) == SQLITE_NOTADB)
		return -RTL_ERR_PROFILE_CORRUPT;
	return store_fail(p, what);
}

/* Prepares SQL (with ?1 bound to ARG when HAS_ARG), then calls ROW for
 * each row until it returns non-zero. */
static int query(rtl_profile *p, const char *sql, int has_arg, int64_t arg,
		 int (*row)(sqlite3_stmt *s, void *ctx), void *ctx)
{
	sqlite3_stmt *s;
	int rc, ret = 0;

	if (p->tmp && !p->committed && (ret = store_flush(p)))
		return ret;
	if ((rc = sqlite3_prepare_v2(p->db, sql, -1, &s, NULL)) != SQLITE_OK)
		return read_fail(p, rc, "prepare query");
	if (has_arg)
		sqlite3_bind_int64(s, 1, arg);
	while ((rc = sqlite3_step(s)) == SQLITE_ROW)
		if ((ret = row(s, ctx)))
			break;
	if (!ret && rc != SQLITE_DONE)
		ret = read_fail(p, rc, "query");
	sqlite3_finalize(s);
	return ret;
}

struct fn_ctx {
	int (*fn)(const rtl_profile_function *f, void *user);
	void *user;
};

static int function_row(sqlite3_stmt *s, void *ctx)
{
	struct fn_ctx *c = ctx;
	rtl_profile_function f = {
		.id = sqlite3_column_int64(s, 0),
		.module = text_or_null(s, 1),
		.name = text_or_null(s, 2),
		.addr = u64(s, 3),
		.size = u64(s, 4),
		.have = (unsigned)sqlite3_column_int(s, 5),
		.calls = u64(s, 6),
		.instrs = u64(s, 7),
		.instrumented = sqlite3_column_int(s, 8),
		.module_id = sqlite3_column_int64(s, 9),
		.reason = text_or_null(s, 10),
	};
	return c->fn(&f, c->user);
}

#define FUNCTION_SELECT \
	"SELECT f.id, m.path, f.name, f.addr, f.size, f.have, coalesce(f.calls, 0)," \
	" coalesce(f.instrs, 0), f.instrumented, f.module, f.reason" \
	" FROM functions f JOIN modules m ON m.id = f.module "
#define COUNTED "WHERE coalesce(f.calls, 0) <> 0 OR coalesce(f.instrs, 0) <> 0 "

#define BY_COUNT "ORDER BY coalesce(f.instrs, 0) DESC, coalesce(f.calls, 0) DESC," \
	" f.module, f.addr, f.id"

int rtl_profile_foreach_function(rtl_profile *p, int all,
				 int (*fn)(const rtl_profile_function *f, void *user),
				 void *user)
{
	struct fn_ctx c = { fn, user };

	return query(p, all ? FUNCTION_SELECT BY_COUNT : FUNCTION_SELECT COUNTED BY_COUNT,
		     0, 0, function_row, &c);
}

int rtl_profile_foreach_function_by_addr(rtl_profile *p, int all,
					 int (*fn)(const rtl_profile_function *f, void *user),
					 void *user)
{
	struct fn_ctx c = { fn, user };

	return query(p, all ? FUNCTION_SELECT "ORDER BY f.module, f.addr, f.id"
		     : FUNCTION_SELECT COUNTED "ORDER BY f.module, f.addr, f.id",
		     0, 0, function_row, &c);
}

struct meta_ctx {
	int (*fn)(const char *key, const char *value, void *user);
	void *user;
};

static int meta_row(sqlite3_stmt *s, void *ctx)
{
	struct meta_ctx *c = ctx;

	return c->fn(text_or_null(s, 0), text_or_null(s, 1), c->user);
}

int rtl_profile_foreach_meta(rtl_profile *p,
			     int (*fn)(const char *key, const char *value, void *user),
			     void *user)
{
	struct meta_ctx c = { fn, user };

	return query(p, "SELECT key, value FROM meta ORDER BY key", 0, 0, meta_row, &c);
}

struct module_ctx {
	int (*fn)(const rtl_profile_module *m, void *user);
	void *user;
};

static int module_row(sqlite3_stmt *s, void *ctx)
{
	struct module_ctx *c = ctx;
	rtl_profile_module m = {
		.id = sqlite3_column_int64(s, 0),
		.path = text_or_null(s, 1),
		.load_bias = u64(s, 2),
	};
	return c->fn(&m, c->user);
}

int rtl_profile_foreach_module(rtl_profile *p,
			       int (*fn)(const rtl_profile_module *m, void *user),
			       void *user)
{
	struct module_ctx c = { fn, user };

	return query(p, "SELECT id, path, load_bias FROM modules ORDER BY id",
		     0, 0, module_row, &c);
}

struct block_ctx {
	int (*fn)(const rtl_profile_block *b, void *user);
	void *user;
};

static int block_row(sqlite3_stmt *s, void *ctx)
{
	struct block_ctx *c = ctx;
	rtl_profile_block b = {
		.function = sqlite3_column_int64(s, 0),
		.addr = u64(s, 1),
		.ninstrs = (uint32_t)sqlite3_column_int64(s, 2),
		.count = u64(s, 3),
	};
	return c->fn(&b, c->user);
}

int rtl_profile_foreach_block(rtl_profile *p, int64_t function,
			      int (*fn)(const rtl_profile_block *b, void *user),
			      void *user)
{
	struct block_ctx c = { fn, user };

	if (function >= 0)
		return query(p, "SELECT function, addr, ninstrs, count FROM blocks"
			     " WHERE function = ?1 ORDER BY addr", 1, function, block_row, &c);
	return query(p, "SELECT function, addr, ninstrs, count FROM blocks"
		     " ORDER BY function, addr", 0, 0, block_row, &c);
}

struct call_ctx {
	int (*fn)(const rtl_profile_call *c, void *user);
	void *user;
};

static int call_row(sqlite3_stmt *s, void *ctx)
{
	struct call_ctx *c = ctx;
	rtl_profile_call call = {
		.caller = sqlite3_column_int64(s, 0),
		.site = u64(s, 1),
		.callee = sqlite3_column_int64(s, 2),
		.count = u64(s, 3),
	};
	return c->fn(&call, c->user);
}

int rtl_profile_foreach_call(rtl_profile *p,
			     int (*fn)(const rtl_profile_call *c, void *user),
			     void *user)
{
	struct call_ctx c = { fn, user };

	return query(p, "SELECT caller, site, callee, count FROM call_sites"
		     " ORDER BY caller, site, callee", 0, 0, call_row, &c);
}

static int totals_row(sqlite3_stmt *s, void *ctx)
{
	rtl_profile_totals *t = ctx;

	t->have = (unsigned)sqlite3_column_int(s, 0);
	t->calls = u64(s, 1);
	t->instrs = u64(s, 2);
	t->functions = u64(s, 3);
	t->counted = u64(s, 4);
	t->modules = u64(s, 5);
	t->blocks = u64(s, 6);
	t->call_sites = u64(s, 7);
	t->uninstrumented = u64(s, 8);
	return 0;
}

int rtl_profile_get_totals(rtl_profile *p, rtl_profile_totals *t)
{
	memset(t, 0, sizeof(*t));
	return query(p, "SELECT (SELECT coalesce(max(have & 1), 0) | coalesce(max(have & 2), 0)"
		     " FROM functions),"
		     " (SELECT coalesce(sum(calls), 0) FROM functions),"
		     " (SELECT coalesce(sum(instrs), 0) FROM functions),"
		     " (SELECT count(*) FROM functions),"
		     " (SELECT count(*) FROM functions f " COUNTED "),"
		     " (SELECT count(*) FROM modules),"
		     " (SELECT count(*) FROM blocks),"
		     " (SELECT count(*) FROM call_sites),"
		     " (SELECT count(*) FROM functions WHERE instrumented = 0)",
		     0, 0, totals_row, t);
}
