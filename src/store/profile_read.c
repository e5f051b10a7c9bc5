/* Profile store, read side: each foreach prepares one query, hands rows to
 * the caller's callback and finalizes. Works on a reader and on a writer
 * (a writer sees its own uncommitted rows). */
#include <errno.h>
#include <stdio.h>
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

static int ensure_scope(rtl_profile *p);
static int64_t image_count(rtl_profile *p);

/* Prepares SQL (with ?1 bound to ARG when HAS_ARG), then calls ROW for
 * each row until it returns non-zero. SQL names only main.* tables. */
static int query_file(rtl_profile *p, const char *sql, int has_arg, int64_t arg,
		      int (*row)(sqlite3_stmt *s, void *ctx), void *ctx)
{
	sqlite3_stmt *s;
	int rc, ret = 0;

	if (p->tmp && !p->committed && (ret = store_flush(p)))
		return ret;
	/* the queries are ours and the version was checked: a file that
	 * lacks their columns had its schema damaged */
	if ((rc = sqlite3_prepare_v2(p->db, sql, -1, &s, NULL)) == SQLITE_ERROR)
		return -RTL_ERR_PROFILE_CORRUPT;
	if (rc != SQLITE_OK)
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

/* The same in the selected scope: unqualified names find its tables. */
static int query(rtl_profile *p, const char *sql, int has_arg, int64_t arg,
		 int (*row)(sqlite3_stmt *s, void *ctx), void *ctx)
{
	int err = p->tmp ? 0 : ensure_scope(p);

	return err ? err : query_file(p, sql, has_arg, arg, row, ctx);
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
		.process = sqlite3_column_int64(s, 3),
	};
	return c->fn(&m, c->user);
}

int rtl_profile_foreach_module(rtl_profile *p,
			       int (*fn)(const rtl_profile_module *m, void *user),
			       void *user)
{
	struct module_ctx c = { fn, user };

	if (!p->tmp && p->version < 2)
		return query(p, "SELECT id, path, load_bias, 1 FROM modules ORDER BY id",
			     0, 0, module_row, &c);
	return query(p, "SELECT id, path, load_bias, process FROM modules ORDER BY id",
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

/* Whether the file has TABLE (profiles written before it was added lack it). */
static int file_has_table(rtl_profile *p, const char *table)
{
	sqlite3_stmt *s;
	int found = 0;

	if (sqlite3_prepare_v2(p->db, "SELECT 1 FROM main.sqlite_master WHERE type = 'table' AND name = ?1",
			       -1, &s, NULL) != SQLITE_OK)
		return 0;
	sqlite3_bind_text(s, 1, table, -1, SQLITE_STATIC);
	found = sqlite3_step(s) == SQLITE_ROW;
	sqlite3_finalize(s);
	return found;
}

struct branch_ctx {
	int (*fn)(const rtl_profile_branch *b, void *user);
	void *user;
};

static int branch_row(sqlite3_stmt *s, void *ctx)
{
	struct branch_ctx *c = ctx;
	rtl_profile_branch b = {
		.function = sqlite3_column_int64(s, 0),
		.site = u64(s, 1),
		.taken = u64(s, 2),
		.not_taken = u64(s, 3),
	};
	return c->fn(&b, c->user);
}

int rtl_profile_foreach_branch(rtl_profile *p,
			       int (*fn)(const rtl_profile_branch *b, void *user),
			       void *user)
{
	struct branch_ctx c = { fn, user };

	if (!file_has_table(p, "branches"))
		return 0;
	return query(p, "SELECT function, site, taken, not_taken FROM branches"
		     " ORDER BY function, site", 0, 0, branch_row, &c);
}

struct time_ctx {
	int (*fn)(const rtl_profile_time *t, void *user);
	void *user;
};

static int time_row(sqlite3_stmt *s, void *ctx)
{
	struct time_ctx *c = ctx;
	rtl_profile_time t = {
		.function = sqlite3_column_int64(s, 0),
		.tid = sqlite3_column_int(s, 1),
		.calls = u64(s, 2),
		.inclusive = sqlite3_column_double(s, 3),
		.exclusive = sqlite3_column_double(s, 4),
	};
	return c->fn(&t, c->user);
}

int rtl_profile_foreach_time(rtl_profile *p, int (*fn)(const rtl_profile_time *t, void *user), void *user)
{
	struct time_ctx c = { fn, user };

	if (!file_has_table(p, "function_times"))
		return 0;
	return query(p, "SELECT function, tid, calls, inclusive, exclusive FROM function_times"
		     " ORDER BY function, tid", 0, 0, time_row, &c);
}

struct context_ctx {
	int (*fn)(const rtl_profile_context *c, void *user);
	void *user;
};

static int context_row(sqlite3_stmt *s, void *ctx)
{
	struct context_ctx *c = ctx;
	rtl_profile_context x = {
		.id = u64(s, 0),
		.parent = u64(s, 1),
		.function = sqlite3_column_int64(s, 2),
		.tid = sqlite3_column_int(s, 3),
		.calls = u64(s, 4),
		.inclusive = sqlite3_column_double(s, 5),
		.exclusive = sqlite3_column_double(s, 6),
	};
	return c->fn(&x, c->user);
}

int rtl_profile_foreach_context(rtl_profile *p, int (*fn)(const rtl_profile_context *c, void *user),
				void *user)
{
	struct context_ctx c = { fn, user };

	if (!file_has_table(p, "contexts"))
		return 0;
	return query(p, "SELECT id, parent, function, tid, calls, inclusive, exclusive FROM contexts"
		     " ORDER BY id", 0, 0, context_row, &c);
}

struct sample_ctx {
	int (*fn)(const rtl_profile_sample *c, void *user);
	void *user;
};

static int sample_row(sqlite3_stmt *s, void *ctx)
{
	struct sample_ctx *c = ctx;
	rtl_profile_sample x = {
		.id = u64(s, 0),
		.parent = u64(s, 1),
		.function = sqlite3_column_int64(s, 2),
		.tid = sqlite3_column_int(s, 3),
		.samples = u64(s, 4),
		.weight = sqlite3_column_double(s, 5),
	};
	return c->fn(&x, c->user);
}

double rtl_profile_sample_unit(rtl_profile *p)
{
	const char *ev = rtl_profile_get_meta(p, "sample_event");
	return !ev || strstr(ev, "clock") || !strcmp(ev, "shim") ? 1e-9 : 1;
}

int rtl_profile_foreach_sample(rtl_profile *p, int (*fn)(const rtl_profile_sample *c, void *user), void *user)
{
	struct sample_ctx c = { fn, user };

	if (!file_has_table(p, "samples"))
		return 0;
	return query(p, "SELECT id, parent, function, tid, samples, weight FROM samples ORDER BY id", 0, 0,
		     sample_row, &c);
}

struct signal_ctx {
	int (*fn)(const rtl_profile_signal_run *r, void *user);
	void *user;
};

static int signal_row(sqlite3_stmt *s, void *ctx)
{
	struct signal_ctx *c = ctx;
	rtl_profile_signal_run r = {
		.process = sqlite3_column_int64(s, 0),
		.tid = sqlite3_column_int(s, 1),
		.value = u64(s, 2),
		.start_ns = u64(s, 3),
		.end_ns = u64(s, 4),
	};
	return c->fn(&r, c->user);
}

int rtl_profile_foreach_signal_run(rtl_profile *p, int (*fn)(const rtl_profile_signal_run *r, void *user),
				   void *user)
{
	struct signal_ctx c = { fn, user };

	if (!file_has_table(p, "signal_runs"))
		return 0;
	/* the file's own table: its rows name their image */
	return query(p, "SELECT process, tid, value, start_ns, end_ns FROM main.signal_runs"
		     " WHERE ?1 = 0 OR process = ?1 ORDER BY process, tid, start_ns", 1, p->process, signal_row, &c);
}

struct metric_ctx {
	int (*fn)(const rtl_profile_metric *m, void *user);
	void *user;
};

static int metric_row(sqlite3_stmt *s, void *ctx)
{
	struct metric_ctx *c = ctx;
	rtl_profile_metric m = {
		.function = sqlite3_column_int64(s, 0),
		.name = (const char *)sqlite3_column_text(s, 1),
		.site = u64(s, 2),
		.value = sqlite3_column_double(s, 3),
	};
	return c->fn(&m, c->user);
}

int rtl_profile_foreach_metric(rtl_profile *p, int (*fn)(const rtl_profile_metric *m, void *user),
			       void *user)
{
	struct metric_ctx c = { fn, user };

	if (!file_has_table(p, "metrics"))
		return 0;
	return query(p, "SELECT function, name, site, value FROM metrics"
		     " ORDER BY name, function, site", 0, 0, metric_row, &c);
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

/* Process rows in the file (0 for schema 1, or none written). */
static int64_t process_rows(rtl_profile *p)
{
	sqlite3_stmt *s;
	int64_t n = 0;

	if (p->version < 2 && !p->tmp)
		return 0;
	if (p->tmp && !p->committed && store_flush(p))
		return 0;
	if (sqlite3_prepare_v2(p->db, "SELECT count(*) FROM main.processes", -1, &s, NULL) != SQLITE_OK)
		return 0;
	if (sqlite3_step(s) == SQLITE_ROW)
		n = sqlite3_column_int64(s, 0);
	sqlite3_finalize(s);
	return n;
}

/* Process images: a profile without process rows holds one. */
static int64_t image_count(rtl_profile *p)
{
	int64_t n = process_rows(p);

	return n ? n : 1;
}

int rtl_profile_get_totals(rtl_profile *p, rtl_profile_totals *t)
{
	memset(t, 0, sizeof(*t));
	t->processes = p->process ? 1 : (uint64_t)image_count(p);
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

struct process_ctx {
	int (*fn)(const rtl_profile_process *proc, void *user);
	void *user;
};

static int process_row(sqlite3_stmt *s, void *ctx)
{
	struct process_ctx *c = ctx;
	rtl_profile_process proc = {
		.id = sqlite3_column_int64(s, 0),
		.parent = sqlite3_column_int64(s, 1),
		.pid = sqlite3_column_int(s, 2),
		.kind = text_or_null(s, 3),
		.command = text_or_null(s, 4),
		.exit_status = sqlite3_column_type(s, 5) == SQLITE_NULL ? -1 : sqlite3_column_int(s, 5),
		.start_ns = u64(s, 6),
		.end_ns = u64(s, 7),
		.calls = u64(s, 8),
		.instrs = u64(s, 9),
	};
	return c->fn(&proc, c->user);
}

int rtl_profile_foreach_process(rtl_profile *p,
				int (*fn)(const rtl_profile_process *proc, void *user),
				void *user)
{
	struct process_ctx c = { fn, user };

	if (process_rows(p))
		return query_file(p, "SELECT pr.id, coalesce(pr.parent, 0), pr.pid, pr.kind, pr.command,"
			     " pr.exit_status, pr.start_ns, pr.end_ns, coalesce(t.calls, 0),"
			     " coalesce(t.instrs, 0) FROM main.processes pr LEFT JOIN"
			     " (SELECT m.process AS image, sum(f.calls) AS calls, sum(f.instrs) AS instrs"
			     "  FROM main.functions f JOIN main.modules m ON m.id = f.module"
			     "  GROUP BY m.process) t ON t.image = pr.id ORDER BY pr.id",
			     0, 0, process_row, &c);
	/* one image: described by the meta table */
	return query_file(p, "SELECT 1, 0, CAST(coalesce((SELECT value FROM meta WHERE key = 'pid'), 0)"
		     " AS INTEGER), 'launch', (SELECT value FROM meta WHERE key = 'command'),"
		     " CAST((SELECT value FROM meta WHERE key = 'exit_status') AS INTEGER), 0, 0,"
		     " (SELECT coalesce(sum(calls), 0) FROM main.functions),"
		     " (SELECT coalesce(sum(instrs), 0) FROM main.functions)",
		     0, 0, process_row, &c);
}

/* Temporary tables that shadow the file's own for every later query (an
 * unqualified name finds the temp schema first): the rows of the chosen
 * images, merged by module path and address. FILTER is "" or a condition
 * on the file's modules m. */
static int build_scope(rtl_profile *p, const char *filter, long long process)
{
	char *sql = sqlite3_mprintf(
		"CREATE TEMP TABLE modules AS SELECT min(m.id) AS id, m.path AS path,"
		" min(m.load_bias) AS load_bias, %lld AS process FROM main.modules m %s GROUP BY m.path;"
		"CREATE TEMP TABLE fmap AS SELECT f.id AS id,"
		" min(f.id) OVER (PARTITION BY m.path, f.addr) AS rep, t.id AS module"
		" FROM main.functions f JOIN main.modules m ON m.id = f.module"
		" JOIN temp.modules t ON t.path = m.path %s;"
		"CREATE INDEX temp.fmap_id ON fmap(id);"
		"CREATE TEMP TABLE functions AS SELECT x.rep AS id, x.module AS module,"
		" min(f.name) AS name, f.addr AS addr, max(f.size) AS size,"
		" max(f.instrumented) AS instrumented,"
		" CASE WHEN max(f.instrumented) THEN NULL ELSE min(f.reason) END AS reason,"
		" max(f.have & 1) | max(f.have & 2) AS have, sum(f.calls) AS calls,"
		" sum(f.instrs) AS instrs FROM main.functions f JOIN temp.fmap x ON x.id = f.id"
		" GROUP BY x.rep;"
		"CREATE INDEX temp.functions_module ON functions(module, addr);"
		"CREATE TEMP TABLE blocks AS SELECT x.rep AS function, b.addr AS addr,"
		" max(b.ninstrs) AS ninstrs, sum(b.count) AS count"
		" FROM main.blocks b JOIN temp.fmap x ON x.id = b.function GROUP BY x.rep, b.addr;"
		"CREATE INDEX temp.blocks_function ON blocks(function, addr);"
		"CREATE TEMP TABLE call_sites AS SELECT a.rep AS caller, c.site AS site,"
		" b.rep AS callee, sum(c.count) AS count FROM main.call_sites c"
		" JOIN temp.fmap a ON a.id = c.caller JOIN temp.fmap b ON b.id = c.callee"
		" GROUP BY a.rep, c.site, b.rep;"
		"CREATE INDEX temp.call_sites_caller ON call_sites(caller, site, callee);"
		"CREATE INDEX temp.call_sites_callee ON call_sites(callee);"
		"%s%s%s%s%s",
		process, filter, filter,
		file_has_table(p, "branches")
		? "CREATE TEMP TABLE branches AS SELECT x.rep AS function, b.site AS site,"
		  " sum(b.taken) AS taken, sum(b.not_taken) AS not_taken FROM main.branches b"
		  " JOIN temp.fmap x ON x.id = b.function GROUP BY x.rep, b.site;"
		  "CREATE INDEX temp.branches_function ON branches(function, site);" : "",
		file_has_table(p, "function_times")
		? "CREATE TEMP TABLE function_times AS SELECT x.rep AS function, t.tid AS tid,"
		  " sum(t.calls) AS calls, sum(t.inclusive) AS inclusive, sum(t.exclusive) AS exclusive"
		  " FROM main.function_times t JOIN temp.fmap x ON x.id = t.function"
		  " GROUP BY x.rep, t.tid;" : "",
		file_has_table(p, "metrics")
		? "CREATE TEMP TABLE metrics AS SELECT x.rep AS function, t.name AS name,"
		  " t.site AS site, sum(t.value) AS value FROM main.metrics t"
		  " JOIN temp.fmap x ON x.id = t.function GROUP BY x.rep, t.name, t.site;" : "",
		file_has_table(p, "contexts")
		? "CREATE TEMP TABLE contexts AS SELECT c.id AS id, c.parent AS parent, x.rep AS function,"
		  " c.tid AS tid, c.calls AS calls, c.inclusive AS inclusive, c.exclusive AS exclusive"
		  " FROM main.contexts c JOIN temp.fmap x ON x.id = c.function ORDER BY c.id;" : "",
		file_has_table(p, "samples")
		? "CREATE TEMP TABLE samples AS SELECT c.id AS id, c.parent AS parent, x.rep AS function,"
		  " c.tid AS tid, c.samples AS samples, c.weight AS weight"
		  " FROM main.samples c JOIN temp.fmap x ON x.id = c.function ORDER BY c.id;" : "");
	int err = sql ? 0 : -ENOMEM;

	if (!err && sqlite3_exec(p->db, sql, NULL, NULL, NULL) != SQLITE_OK)
		err = read_fail(p, sqlite3_extended_errcode(p->db), "select process");
	sqlite3_free(sql);
	return err;
}

static const char *const drop_scope_sql =
	"DROP TABLE IF EXISTS temp.branches; DROP TABLE IF EXISTS temp.function_times;"
	" DROP TABLE IF EXISTS temp.metrics; DROP TABLE IF EXISTS temp.contexts; DROP TABLE IF EXISTS temp.samples;"
	" DROP TABLE IF EXISTS temp.call_sites; DROP TABLE IF EXISTS temp.blocks;"
	" DROP TABLE IF EXISTS temp.functions; DROP TABLE IF EXISTS temp.fmap;"
	" DROP TABLE IF EXISTS temp.modules;";

static int drop_scope(rtl_profile *p)
{
	if (!p->scoped)
		return 0;
	p->scoped = 0;
	if (sqlite3_exec(p->db, drop_scope_sql,
			 NULL, NULL, NULL) != SQLITE_OK)
		return store_fail(p, "select process");
	return 0;
}

static int known_process(rtl_profile *p, int64_t id)
{
	sqlite3_stmt *s;
	int found = 0;

	if (sqlite3_prepare_v2(p->db, "SELECT 1 FROM main.processes WHERE id = ?1", -1, &s, NULL)
	    != SQLITE_OK)
		return 0;
	sqlite3_bind_int64(s, 1, id);
	found = sqlite3_step(s) == SQLITE_ROW;
	sqlite3_finalize(s);
	return found;
}

/* Whether a module's file was loaded more than once (dlopen, dlclose and
 * dlopen again: a row per load, each with its own function rows). */
static int repeated_paths(rtl_profile *p)
{
	sqlite3_stmt *s;
	int found = 0;

	if (sqlite3_prepare_v2(p->db, "SELECT 1 FROM main.modules GROUP BY path HAVING count(*) > 1"
			       " LIMIT 1", -1, &s, NULL) != SQLITE_OK)
		return 0;
	found = sqlite3_step(s) == SQLITE_ROW;
	sqlite3_finalize(s);
	return found;
}

/* Builds the scope rtl_profile_select_process() asked for, on the first
 * query after it: a merged view of many images costs a pass over them.
 * One image is merged too when it loaded a file more than once, so that
 * a library dlopen'ed 60 times shows its functions once, with every
 * load's counts added up (they were 60 rows of 1 call each). */
static int ensure_scope(rtl_profile *p)
{
	int err;

	if (p->scope_built)
		return 0;
	p->scope_built = 1;
	if ((err = drop_scope(p)))
		return err;
	if (image_count(p) == 1) {
		if (!repeated_paths(p))
			return 0;   /* the file's tables are the scope */
		err = build_scope(p, "", 1);
	} else if (p->process) {
		char filter[64];

		snprintf(filter, sizeof(filter), "WHERE m.process = %lld", (long long)p->process);
		err = build_scope(p, filter, p->process);
	} else {
		err = build_scope(p, "", 0);
	}
	if (err) {
		sqlite3_exec(p->db, drop_scope_sql, NULL, NULL, NULL);
		p->scope_built = 0;
		return err;
	}
	p->scoped = 1;
	return 0;
}

int rtl_profile_select_process(rtl_profile *p, int64_t process)
{
	if (!p || p->tmp || process < 0)
		return -EINVAL;
	if (process == p->process)
		return 0;
	if (process && (p->version < 2 || image_count(p) == 1 || !known_process(p, process))) {
		if (process != 1 || image_count(p) != 1)
			return -ENOENT;
	}
	p->process = process;
	p->scope_built = 0;
	return 0;
}

int64_t rtl_profile_selected_process(const rtl_profile *p)
{
	return p ? p->process : 0;
}

struct rank_ctx {
	int (*fn)(const rtl_profile_rank_count *r, void *user);
	void *user;
};

static int rank_row(sqlite3_stmt *s, void *ctx)
{
	struct rank_ctx *c = ctx;
	rtl_profile_rank_count r = {
		.module = (const char *)sqlite3_column_text(s, 0),
		.addr = u64(s, 1),
		.name = (const char *)sqlite3_column_text(s, 2),
		.rank = sqlite3_column_int64(s, 3),
		.have = (unsigned)sqlite3_column_int(s, 4),
		.calls = u64(s, 5),
		.instrs = u64(s, 6),
	};
	return c->fn(&r, c->user);
}

/* Whether the file's TABLE has COLUMN. */
static int file_has_column(rtl_profile *p, const char *table, const char *column)
{
	sqlite3_stmt *s;
	int found = 0;

	if (sqlite3_prepare_v2(p->db, "SELECT 1 FROM pragma_table_info(?1, 'main') WHERE name = ?2", -1, &s,
			       NULL) != SQLITE_OK)
		return 0;
	sqlite3_bind_text(s, 1, table, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 2, column, -1, SQLITE_STATIC);
	found = sqlite3_step(s) == SQLITE_ROW;
	sqlite3_finalize(s);
	return found;
}

int rtl_profile_foreach_rank_count(rtl_profile *p, int (*fn)(const rtl_profile_rank_count *r, void *user),
				   void *user)
{
	struct rank_ctx c = { fn, user };

	if (!file_has_table(p, "processes") || !file_has_column(p, "processes", "rank"))
		return 0;
	/* the file's own tables: the merged scope has added the ranks up */
	return query_file(p, "SELECT m.path, f.addr, min(f.name), r.rank, max(f.have), sum(f.calls), sum(f.instrs)"
			  " FROM main.functions f JOIN main.modules m ON m.id = f.module"
			  " JOIN main.processes r ON r.id = m.process WHERE r.rank IS NOT NULL"
			  " GROUP BY m.path, f.addr, r.rank ORDER BY m.path, f.addr, r.rank", 0, 0, rank_row, &c);
}
