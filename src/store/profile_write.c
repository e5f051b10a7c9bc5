/* Profile store, write side: one prepared statement per row kind, reused
 * for every row inside the writer's single transaction; function rows wait
 * in memory for their counts. Unsigned 64-bit values are stored as
 * SQLite's signed INTEGER (same bits). */
#include <errno.h>
#include <string.h>
#include <reticle/error.h>
#include "store/store_priv.h"
#include "util/array.h"

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

/* Copies TEXT into P's text; returns its offset + 1, 0 for NULL, or
 * (size_t)-1 when out of memory. */
static size_t keep_text(rtl_profile *p, const char *text)
{
	size_t at = p->ntext, len;

	if (!text)
		return 0;
	len = strlen(text) + 1;
	if (rtl_grow(&p->text, &p->text_cap, at + len, 1))
		return (size_t)-1;
	memcpy(p->text + at, text, len);
	p->ntext += len;
	return at + 1;
}

/* Ids are assigned here as SQLite would assign them to rows inserted in
 * this order: 1, 2, ... (functions are never deleted). */
int rtl_profile_add_function(rtl_profile *p, int64_t module, const char *name,
			     uint64_t addr, uint64_t size, int instrumented,
			     const char *reason, int64_t *id)
{
	size_t n, name_at, reason_at;

	if (!writable(p))
		return -EINVAL;
	if (!known(module, p->nmodules))
		return -ENOENT;
	n = (size_t)(p->nfunctions - p->nstored);
	if (rtl_grow(&p->fns, &p->fns_cap, n + 1, sizeof(*p->fns)) ||
	    (name_at = keep_text(p, name)) == (size_t)-1 ||
	    (reason_at = keep_text(p, instrumented ? NULL : reason)) == (size_t)-1)
		return -ENOMEM;
	p->fns[n] = (struct store_function){
		.module = module, .addr = addr, .size = size,
		.name = name_at, .reason = reason_at, .instrumented = instrumented != 0,
	};
	p->nfunctions++;
	if (id)
		*id = p->nfunctions;
	return 0;
}

/* A row already written (a query on the writer flushed it) is updated
 * in place. */
static int update_counts(rtl_profile *p, int64_t function, unsigned have,
			 uint64_t calls, uint64_t instrs)
{
	sqlite3_stmt *s;
	int err;

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

int rtl_profile_set_function_counts(rtl_profile *p, int64_t function, unsigned have,
				    uint64_t calls, uint64_t instrs)
{
	struct store_function *f;

	if (!writable(p) || (have & ~(unsigned)(RTL_HAVE_CALLS | RTL_HAVE_INSTRS)))
		return -EINVAL;
	if (!known(function, p->nfunctions))
		return -ENOENT;
	if (function <= p->nstored)
		return update_counts(p, function, have, calls, instrs);
	f = &p->fns[function - p->nstored - 1];
	f->have |= have;
	if (have & RTL_HAVE_CALLS)
		f->calls = calls;
	if (have & RTL_HAVE_INSTRS)
		f->instrs = instrs;
	return 0;
}

static void bind_u64_or_null(sqlite3_stmt *s, int i, int have, uint64_t v)
{
	if (have)
		sqlite3_bind_int64(s, i, (sqlite3_int64)v);
	else
		sqlite3_bind_null(s, i);
}

/* The functions held in memory, one INSERT each; a count that was never
 * set is NULL, as the UPDATE left it. */
int store_flush(rtl_profile *p)
{
	size_t n = (size_t)(p->nfunctions - p->nstored);

	for (size_t i = 0; i < n; i++) {
		const struct store_function *f = &p->fns[i];
		sqlite3_stmt *s;
		int err;

		if (!(s = store_stmt(p, ST_ADD_FUNCTION)))
			return -RTL_ERR_STORE;
		sqlite3_bind_int64(s, 1, p->nstored + 1);
		sqlite3_bind_int64(s, 2, f->module);
		bind_text(s, 3, f->name ? p->text + f->name - 1 : NULL);
		sqlite3_bind_int64(s, 4, (sqlite3_int64)f->addr);
		sqlite3_bind_int64(s, 5, (sqlite3_int64)f->size);
		sqlite3_bind_int(s, 6, f->instrumented);
		bind_text(s, 7, f->reason ? p->text + f->reason - 1 : NULL);
		sqlite3_bind_int(s, 8, (int)f->have);
		bind_u64_or_null(s, 9, f->have & RTL_HAVE_CALLS, f->calls);
		bind_u64_or_null(s, 10, f->have & RTL_HAVE_INSTRS, f->instrs);
		if ((err = step_insert(p, s, NULL, "add function"))) {
			memmove(p->fns, f, (n - i) * sizeof(*f));   /* keep fns[0] at nstored + 1 */
			return err;
		}
		p->nstored++;
	}
	p->ntext = 0;
	return 0;
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
