/* Profile store, write side: one prepared statement per row kind, reused
 * for every row inside the writer's single transaction. Unsigned 64-bit
 * values are stored as SQLite's signed INTEGER (same bits). */
#include <errno.h>
#include <string.h>
#include <reticle/error.h>
#include "store/store_priv.h"

/* Steps S once; stores the new row id in ID when ID is non-NULL. */
static int step_insert(rtl_profile *p, sqlite3_stmt *s, int64_t *id, const char *what)
{
	if (sqlite3_step(s) != SQLITE_DONE)
		return store_fail(p, what);
	if (id)
		*id = sqlite3_last_insert_rowid(p->db);
	return 0;
}

static int writable(const rtl_profile *p)
{
	return p && p->tmp && !p->committed;
}

/* Row ids are assigned 1, 2, ... and rows are never deleted, so a valid
 * id is one in that range: a compare instead of SQLite's foreign-key
 * lookups on every insert. */
static int known(int64_t id, int64_t last)
{
	return id >= 1 && id <= last;
}

static void bind_text(sqlite3_stmt *s, int i, const char *text)
{
	if (text)
		sqlite3_bind_text(s, i, text, -1, SQLITE_STATIC);
	else
		sqlite3_bind_null(s, i);
}

int rtl_profile_set_meta(rtl_profile *p, const char *key, const char *value)
{
	sqlite3_stmt *s;

	if (!writable(p) || !key || !strcmp(key, "schema_version"))
		return -EINVAL;
	if (!(s = store_stmt(p, ST_SET_META)))
		return -RTL_ERR_STORE;
	sqlite3_bind_text(s, 1, key, -1, SQLITE_STATIC);
	bind_text(s, 2, value);
	return step_insert(p, s, NULL, "set meta");
}

int rtl_profile_add_module(rtl_profile *p, const char *path, uint64_t load_bias, int64_t *id)
{
	sqlite3_stmt *s;
	int64_t row = 0;
	int err;

	if (!writable(p) || !path)
		return -EINVAL;
	if (!(s = store_stmt(p, ST_ADD_MODULE)))
		return -RTL_ERR_STORE;
	sqlite3_bind_text(s, 1, path, -1, SQLITE_STATIC);
	sqlite3_bind_int64(s, 2, (sqlite3_int64)load_bias);
	if ((err = step_insert(p, s, &row, "add module")))
		return err;
	p->nmodules = row;
	if (id)
		*id = row;
	return 0;
}

int rtl_profile_add_function(rtl_profile *p, int64_t module, const char *name,
			     uint64_t addr, uint64_t size, int instrumented,
			     const char *reason, int64_t *id)
{
	sqlite3_stmt *s;
	int64_t row = 0;
	int err;

	if (!writable(p))
		return -EINVAL;
	if (!known(module, p->nmodules))
		return -ENOENT;
	if (!(s = store_stmt(p, ST_ADD_FUNCTION)))
		return -RTL_ERR_STORE;
	sqlite3_bind_int64(s, 1, module);
	bind_text(s, 2, name);
	sqlite3_bind_int64(s, 3, (sqlite3_int64)addr);
	sqlite3_bind_int64(s, 4, (sqlite3_int64)size);
	sqlite3_bind_int(s, 5, instrumented != 0);
	bind_text(s, 6, instrumented ? NULL : reason);
	if ((err = step_insert(p, s, &row, "add function")))
		return err;
	p->nfunctions = row;
	if (id)
		*id = row;
	return 0;
}

int rtl_profile_set_function_counts(rtl_profile *p, int64_t function, unsigned have,
				    uint64_t calls, uint64_t instrs)
{
	sqlite3_stmt *s;
	int err;

	if (!writable(p) || (have & ~(unsigned)(RTL_HAVE_CALLS | RTL_HAVE_INSTRS)))
		return -EINVAL;
	if (!(s = store_stmt(p, ST_SET_COUNTS)))
		return -RTL_ERR_STORE;
	sqlite3_bind_int(s, 1, (int)have);
	sqlite3_bind_int64(s, 2, (sqlite3_int64)calls);
	sqlite3_bind_int64(s, 3, (sqlite3_int64)instrs);
	sqlite3_bind_int64(s, 4, function);
	if ((err = step_insert(p, s, NULL, "set function counts")))
		return err;
	return sqlite3_changes(p->db) == 1 ? 0 : -ENOENT;
}

int rtl_profile_add_block(rtl_profile *p, int64_t function, uint64_t addr,
			  uint32_t ninstrs, uint64_t count)
{
	sqlite3_stmt *s;

	if (!writable(p))
		return -EINVAL;
	if (!known(function, p->nfunctions))
		return -ENOENT;
	if (!(s = store_stmt(p, ST_ADD_BLOCK)))
		return -RTL_ERR_STORE;
	sqlite3_bind_int64(s, 1, function);
	sqlite3_bind_int64(s, 2, (sqlite3_int64)addr);
	sqlite3_bind_int64(s, 3, ninstrs);
	sqlite3_bind_int64(s, 4, (sqlite3_int64)count);
	return step_insert(p, s, NULL, "add block");
}

int rtl_profile_add_call(rtl_profile *p, int64_t caller, uint64_t site,
			 int64_t callee, uint64_t count)
{
	sqlite3_stmt *s;

	if (!writable(p))
		return -EINVAL;
	if (!known(caller, p->nfunctions) || !known(callee, p->nfunctions))
		return -ENOENT;
	if (!(s = store_stmt(p, ST_ADD_CALL)))
		return -RTL_ERR_STORE;
	sqlite3_bind_int64(s, 1, caller);
	sqlite3_bind_int64(s, 2, (sqlite3_int64)site);
	sqlite3_bind_int64(s, 3, callee);
	sqlite3_bind_int64(s, 4, (sqlite3_int64)count);
	return step_insert(p, s, NULL, "add call");
}
