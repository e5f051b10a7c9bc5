/* Profile store against a model: a long random sequence of writes (the
 * engine's kinds of rows, repeated blocks and call sites, counts set by
 * several collectors, bad ids, queries on the writer between writes) goes
 * to the store and, as one plain SQL statement each, to an in-memory
 * database. The committed profile must hold the model's rows, ids
 * included, and every call must return what the model says. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <sqlite3.h>
#include <reticle/error.h>
#include <reticle/profile.h>
#include "check.h"

static sqlite3 *model;
static int64_t nmodules, nfunctions;
static uint64_t seed;

/* splitmix64: a fixed sequence, the same on every run */
static uint64_t rnd(uint64_t n)
{
	uint64_t z = (seed += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return (z ^ (z >> 31)) % n;
}

/* Runs SQL on the model; TYPES has a letter per parameter: 'i' an
 * int64_t, 's' a string or NULL. Returns the rows it changed. */
static int model_exec(const char *sql, const char *types, ...)
{
	sqlite3_stmt *s;
	va_list ap;

	CHECK_EQ(sqlite3_prepare_v2(model, sql, -1, &s, NULL), SQLITE_OK);
	va_start(ap, types);
	for (int i = 0; types[i]; i++) {
		if (types[i] == 'i') {
			sqlite3_bind_int64(s, i + 1, va_arg(ap, int64_t));
		} else {
			const char *t = va_arg(ap, const char *);
			if (t)
				sqlite3_bind_text(s, i + 1, t, -1, SQLITE_TRANSIENT);
		}
	}
	va_end(ap);
	CHECK_EQ(sqlite3_step(s), SQLITE_DONE);
	sqlite3_finalize(s);
	return sqlite3_changes(model);
}

static void add_module(rtl_profile *p, int i)
{
	char path[32];
	int64_t id = -1, bias = 0x7f0000000000ll + i * 0x100000ll;

	snprintf(path, sizeof(path), "/lib/m%d.so", i);
	CHECK_EQ(rtl_profile_add_module(p, path, (uint64_t)bias, &id), 0);
	model_exec("INSERT INTO modules(path, load_bias) VALUES (?, ?)", "si", path, bias);
	CHECK_EQ(id, sqlite3_last_insert_rowid(model));
	nmodules = id;
}

/* Usually a symbol name, sometimes none; a skipped function has a reason
 * (and the store drops the reason of an instrumented one). */
static void add_function(rtl_profile *p)
{
	int64_t module = 1 + (int64_t)rnd(nmodules), addr = 0x1000 + (int64_t)rnd(1 << 20);
	int64_t size = 1 + (int64_t)rnd(400), instrumented = rnd(10) != 0, id = -1;
	const char *reason = rnd(2) ? "too short" : "starts with a jump table";
	char name[32];

	snprintf(name, sizeof(name), "fn_%lx", (long)addr);
	const char *nm = rnd(8) ? name : NULL;
	CHECK_EQ(rtl_profile_add_function(p, module, nm, (uint64_t)addr, (uint64_t)size,
					  (int)instrumented, reason, &id), 0);
	model_exec("INSERT INTO functions(module, name, addr, size, instrumented, reason)"
		   " VALUES (?, ?, ?, ?, ?, ?)", "isiiis", module, nm, addr, size, instrumented,
		   instrumented ? NULL : reason);
	CHECK_EQ(id, sqlite3_last_insert_rowid(model));
	nfunctions = id;
}

/* Mostly known ids; now and then one past either end. */
static int64_t some_function(void)
{
	switch (rnd(50)) {
	case 0: return 0;
	case 1: return nfunctions + 1;
	default: return 1 + (int64_t)rnd(nfunctions);
	}
}

static int known(int64_t id)
{
	return id >= 1 && id <= nfunctions;
}

static void set_counts(rtl_profile *p)
{
	int64_t f = some_function(), have = (int64_t)rnd(4);
	int64_t calls = (int64_t)rnd(1000), instrs = (int64_t)rnd(1ull << 44);
	int changed = model_exec("UPDATE functions SET have = have | ?1,"
				 " calls = CASE WHEN ?1 & 1 THEN ?2 ELSE calls END,"
				 " instrs = CASE WHEN ?1 & 2 THEN ?3 ELSE instrs END WHERE id = ?4",
				 "iiii", have, calls, instrs, f);

	CHECK_EQ(rtl_profile_set_function_counts(p, f, (unsigned)have, (uint64_t)calls,
						 (uint64_t)instrs), changed ? 0 : -ENOENT);
}

/* Runs of the same function, addresses from a small range: blocks and
 * call sites repeat, also within one statement of the store's. */
static int64_t last_function = 1;

static void add_block(rtl_profile *p)
{
	int64_t f = rnd(4) ? last_function : (last_function = some_function());
	int64_t addr = 0x1000 + (int64_t)rnd(32) * 4;
	int64_t ninstrs = 1 + (int64_t)rnd(30), count = (int64_t)rnd(1ull << 50);

	CHECK_EQ(rtl_profile_add_block(p, f, (uint64_t)addr, (uint32_t)ninstrs, (uint64_t)count),
		 known(f) ? 0 : -ENOENT);
	if (known(f))
		model_exec("INSERT INTO blocks VALUES (?, ?, ?, ?)"
			   " ON CONFLICT DO UPDATE SET count = max(count, excluded.count)",
			   "iiii", f, addr, ninstrs, count);
}

static void add_call(rtl_profile *p)
{
	int64_t caller = rnd(4) ? last_function : (last_function = some_function());
	int64_t callee = some_function();
	int64_t site = 0x1000 + (int64_t)rnd(16), count = 1 + (int64_t)rnd(1000);
	int ok = known(caller) && known(callee);

	CHECK_EQ(rtl_profile_add_call(p, caller, (uint64_t)site, callee, (uint64_t)count),
		 ok ? 0 : -ENOENT);
	if (ok)
		model_exec("INSERT INTO call_sites VALUES (?, ?, ?, ?)"
			   " ON CONFLICT DO UPDATE SET count = count + excluded.count",
			   "iiii", caller, site, callee, count);
}

/* A query on the writer sees every row written so far. */
static void check_totals(rtl_profile *p)
{
	rtl_profile_totals t;
	sqlite3_stmt *s;

	CHECK_EQ(rtl_profile_get_totals(p, &t), 0);
	CHECK_EQ(sqlite3_prepare_v2(model, "SELECT (SELECT count(*) FROM functions),"
				    " (SELECT coalesce(sum(instrs), 0) FROM functions),"
				    " (SELECT count(*) FROM blocks), (SELECT count(*) FROM call_sites)",
				    -1, &s, NULL), SQLITE_OK);
	CHECK_EQ(sqlite3_step(s), SQLITE_ROW);
	CHECK_EQ(t.functions, sqlite3_column_int64(s, 0));
	CHECK_EQ(t.instrs, sqlite3_column_int64(s, 1));
	CHECK_EQ(t.blocks, sqlite3_column_int64(s, 2));
	CHECK_EQ(t.call_sites, sqlite3_column_int64(s, 3));
	sqlite3_finalize(s);
}

/* One step of the engine's order at random: functions mostly first, then
 * counts, blocks and call sites; a query every 3,000 steps. */
static void random_write(rtl_profile *p, int i, int n)
{
	unsigned r = (unsigned)rnd(100);

	if (i % 3000 == 2999)
		check_totals(p);
	else if (r < (i < n / 4 ? 60 : 5))
		add_function(p);
	else if (r < 75)
		add_block(p);
	else if (r < 88)
		add_call(p);
	else
		set_counts(p);
}

static int64_t count_rows(const char *sql)
{
	sqlite3_stmt *s;
	int64_t n = -1;

	CHECK_EQ(sqlite3_prepare_v2(model, sql, -1, &s, NULL), SQLITE_OK);
	if (sqlite3_step(s) == SQLITE_ROW)
		n = sqlite3_column_int64(s, 0);
	sqlite3_finalize(s);
	return n;
}

/* TABLE holds the same rows in both files (EXCEPT takes NULLs as equal). */
static void check_table(const char *table)
{
	char sql[512];
	int64_t n;

	snprintf(sql, sizeof(sql), "SELECT count(*) FROM (SELECT * FROM main.%s EXCEPT"
		 " SELECT * FROM p.%s)", table, table);
	CHECK_EQ(count_rows(sql), 0);
	snprintf(sql, sizeof(sql), "SELECT count(*) FROM (SELECT * FROM p.%s EXCEPT"
		 " SELECT * FROM main.%s)", table, table);
	CHECK_EQ(count_rows(sql), 0);
	snprintf(sql, sizeof(sql), "SELECT count(*) FROM main.%s", table);
	n = count_rows(sql);
	snprintf(sql, sizeof(sql), "SELECT count(*) FROM p.%s", table);
	CHECK_EQ(count_rows(sql), n);
	CHECK(n > 0);
}

/* NULL where the model has NULL, integers where it has integers. */
static void check_types(void)
{
	CHECK_EQ(count_rows("SELECT count(*) FROM (SELECT id, typeof(name), typeof(reason),"
			    " typeof(calls), typeof(instrs), typeof(have) FROM main.functions EXCEPT"
			    " SELECT id, typeof(name), typeof(reason), typeof(calls), typeof(instrs),"
			    " typeof(have) FROM p.functions)"), 0);
}

int main(void)
{
	char dir[] = "/tmp/rtl-test-model-XXXXXX", path[64], sql[128];
	const int n = 40000;
	rtl_profile *p;

	if (!mkdtemp(dir))
		return perror("mkdtemp"), 1;
	snprintf(path, sizeof(path), "%s/p.db", dir);
	CHECK_EQ(sqlite3_open(":memory:", &model), SQLITE_OK);
	CHECK_EQ(sqlite3_exec(model,
		"CREATE TABLE modules(id INTEGER PRIMARY KEY, path TEXT, load_bias INTEGER,"
		" process INTEGER NOT NULL DEFAULT 1);"
		"CREATE TABLE functions(id INTEGER PRIMARY KEY, module INTEGER, name TEXT,"
		" addr INTEGER, size INTEGER, instrumented INTEGER, reason TEXT,"
		" have INTEGER NOT NULL DEFAULT 0, calls INTEGER, instrs INTEGER);"
		"CREATE TABLE blocks(function INTEGER, addr INTEGER, ninstrs INTEGER,"
		" count INTEGER, PRIMARY KEY(function, addr));"
		"CREATE TABLE call_sites(caller INTEGER, site INTEGER, callee INTEGER,"
		" count INTEGER, PRIMARY KEY(caller, site, callee));", NULL, NULL, NULL), SQLITE_OK);
	CHECK_EQ(rtl_profile_create(path, &p), 0);
	for (int i = 1; i <= 5; i++)
		add_module(p, i);
	add_function(p);
	for (int i = 0; i < n; i++)
		random_write(p, i, n);
	check_totals(p);
	CHECK_EQ(rtl_profile_commit(p), 0);
	rtl_profile_close(p);

	snprintf(sql, sizeof(sql), "ATTACH '%s' AS p", path);
	CHECK_EQ(sqlite3_exec(model, sql, NULL, NULL, NULL), SQLITE_OK);
	check_table("modules");
	check_table("functions");
	check_table("blocks");
	check_table("call_sites");
	check_types();
	sqlite3_close(model);
	unlink(path);
	rmdir(dir);
	return CHECK_DONE();
}
