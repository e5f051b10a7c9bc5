/* Profile store, write side: the checks of every write. Meta and module
 * rows are inserted at once; function, block and call-site rows go to
 * profile_rows.c, which inserts them later, several to a statement. All
 * inside the writer's single transaction. Unsigned 64-bit values are
 * stored as SQLite's signed INTEGER (same bits). */
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

int rtl_profile_set_meta(rtl_profile *p, const char *key, const char *value)
{
	sqlite3_stmt *s;

	if (!writable(p) || !key || !strcmp(key, "schema_version"))
		return -EINVAL;
	if (!(s = store_stmt(p, ST_SET_META)))
		return -RTL_ERR_STORE;
	sqlite3_bind_text(s, 1, key, -1, SQLITE_STATIC);
	store_bind_text(s, 2, value);
	return step_insert(p, s, NULL, "set meta");
}

int rtl_profile_add_process_module(rtl_profile *p, int64_t process, const char *path,
				   uint64_t load_bias, int64_t *id)
{
	sqlite3_stmt *s;
	int64_t row = 0;
	int err;

	if (!writable(p) || !path || process < 1)
		return -EINVAL;
	if (!(s = store_stmt(p, ST_ADD_MODULE)))
		return -RTL_ERR_STORE;
	sqlite3_bind_text(s, 1, path, -1, SQLITE_STATIC);
	sqlite3_bind_int64(s, 2, (sqlite3_int64)load_bias);
	sqlite3_bind_int64(s, 3, process);
	if ((err = step_insert(p, s, &row, "add module")))
		return err;
	p->nmodules = row;
	if (id)
		*id = row;
	return 0;
}

int rtl_profile_add_module(rtl_profile *p, const char *path, uint64_t load_bias, int64_t *id)
{
	return rtl_profile_add_process_module(p, 1, path, load_bias, id);
}

/* The rows of earlier images are written first: a session of hundreds of
 * processes holds only one image's function rows in memory. */
int rtl_profile_add_process(rtl_profile *p, const rtl_profile_process *proc)
{
	sqlite3_stmt *s;
	int err;

	if (!writable(p) || !proc || proc->id < 1 || proc->parent < 0 || !proc->kind)
		return -EINVAL;
	if ((err = store_flush(p)))
		return err;
	if (!(s = store_stmt(p, ST_ADD_PROCESS)))
		return -RTL_ERR_STORE;
	sqlite3_bind_int64(s, 1, proc->id);
	if (proc->parent)
		sqlite3_bind_int64(s, 2, proc->parent);
	else
		sqlite3_bind_null(s, 2);
	sqlite3_bind_int(s, 3, proc->pid);
	sqlite3_bind_text(s, 4, proc->kind, -1, SQLITE_STATIC);
	store_bind_text(s, 5, proc->command);
	if (proc->exit_status >= 0 || proc->exit_status == RTL_PROCESS_RUNNING)
		sqlite3_bind_int(s, 6, proc->exit_status);
	else
		sqlite3_bind_null(s, 6);
	sqlite3_bind_int64(s, 7, (sqlite3_int64)proc->start_ns);
	sqlite3_bind_int64(s, 8, (sqlite3_int64)proc->end_ns);
	return step_insert(p, s, NULL, "add process");
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

/* Adds a row of four integers to the batch of T, written when full. */
static int batch_add(rtl_profile *p, enum store_table t, int64_t a, int64_t b,
		     int64_t c, int64_t d)
{
	struct store_batch *q = store_batch_of(p, t);
	int64_t *row = q->row[q->n++];

	row[0] = a;
	row[1] = b;
	row[2] = c;
	row[3] = d;
	return q->n == STORE_BATCH ? store_write_batch(p, t) : 0;
}

int rtl_profile_add_block(rtl_profile *p, int64_t function, uint64_t addr,
			  uint32_t ninstrs, uint64_t count)
{
	if (!writable(p))
		return -EINVAL;
	if (!known(function, p->nfunctions))
		return -ENOENT;
	return batch_add(p, TB_BLOCKS, function, (int64_t)addr, ninstrs, (int64_t)count);
}

int rtl_profile_add_call(rtl_profile *p, int64_t caller, uint64_t site,
			 int64_t callee, uint64_t count)
{
	if (!writable(p))
		return -EINVAL;
	if (!known(caller, p->nfunctions) || !known(callee, p->nfunctions))
		return -ENOENT;
	return batch_add(p, TB_CALLS, caller, (int64_t)site, callee, (int64_t)count);
}

int rtl_profile_add_branch(rtl_profile *p, int64_t function, uint64_t site, uint64_t taken,
			   uint64_t not_taken)
{
	if (!writable(p))
		return -EINVAL;
	if (!known(function, p->nfunctions))
		return -ENOENT;
	return batch_add(p, TB_BRANCHES, function, (int64_t)site, (int64_t)taken, (int64_t)not_taken);
}

int rtl_profile_add_time(rtl_profile *p, int64_t function, int tid, uint64_t calls, double inclusive,
			 double exclusive)
{
	sqlite3_stmt *s;
	if (!writable(p))
		return -EINVAL;
	if (!known(function, p->nfunctions))
		return -ENOENT;
	if (!(s = store_stmt(p, ST_ADD_TIME)))
		return -RTL_ERR_STORE;
	sqlite3_bind_int64(s, 1, function);
	sqlite3_bind_int64(s, 2, tid);
	sqlite3_bind_int64(s, 3, (sqlite3_int64)calls);
	sqlite3_bind_double(s, 4, inclusive);
	sqlite3_bind_double(s, 5, exclusive);
	return step_insert(p, s, NULL, "add function time");
}

int rtl_profile_add_context(rtl_profile *p, const rtl_profile_context *c)
{
	sqlite3_stmt *s;
	if (!writable(p) || !c || !c->id || c->id > INT64_MAX || c->parent > INT64_MAX)
		return -EINVAL;
	if (!known(c->function, p->nfunctions))
		return -ENOENT;
	if (!(s = store_stmt(p, ST_ADD_CONTEXT)))
		return -RTL_ERR_STORE;
	sqlite3_bind_int64(s, 1, (sqlite3_int64)c->id);
	sqlite3_bind_int64(s, 2, (sqlite3_int64)c->parent);
	sqlite3_bind_int64(s, 3, c->function);
	sqlite3_bind_int64(s, 4, c->tid);
	sqlite3_bind_int64(s, 5, (sqlite3_int64)c->calls);
	sqlite3_bind_double(s, 6, c->inclusive);
	sqlite3_bind_double(s, 7, c->exclusive);
	return step_insert(p, s, NULL, "add context");
}

int rtl_profile_add_sample(rtl_profile *p, const rtl_profile_sample *c)
{
	sqlite3_stmt *s;
	if (!writable(p) || !c || !c->id || c->id > INT64_MAX || c->parent > INT64_MAX)
		return -EINVAL;
	if (!known(c->function, p->nfunctions))
		return -ENOENT;
	if (!(s = store_stmt(p, ST_ADD_SAMPLE)))
		return -RTL_ERR_STORE;
	sqlite3_bind_int64(s, 1, (sqlite3_int64)c->id);
	sqlite3_bind_int64(s, 2, (sqlite3_int64)c->parent);
	sqlite3_bind_int64(s, 3, c->function);
	sqlite3_bind_int64(s, 4, c->tid);
	sqlite3_bind_int64(s, 5, (sqlite3_int64)c->samples);
	sqlite3_bind_double(s, 6, c->weight);
	return step_insert(p, s, NULL, "add sample");
}

int rtl_profile_add_signal_run(rtl_profile *p, const rtl_profile_signal_run *r)
{
	sqlite3_stmt *s;
	if (!writable(p) || !r || r->end_ns < r->start_ns)
		return -EINVAL;
	if (!(s = store_stmt(p, ST_ADD_SIGNAL_RUN)))
		return -RTL_ERR_STORE;
	sqlite3_bind_int64(s, 1, r->process);
	sqlite3_bind_int64(s, 2, r->tid);
	sqlite3_bind_int64(s, 3, (sqlite3_int64)r->value);
	sqlite3_bind_int64(s, 4, (sqlite3_int64)r->start_ns);
	sqlite3_bind_int64(s, 5, (sqlite3_int64)r->end_ns);
	return step_insert(p, s, NULL, "add signal run");
}

int rtl_profile_add_metric(rtl_profile *p, int64_t function, const char *name, uint64_t site,
			   double value)
{
	sqlite3_stmt *s;
	if (!writable(p) || !name || !*name)
		return -EINVAL;
	if (!known(function, p->nfunctions))
		return -ENOENT;
	if (!(s = store_stmt(p, ST_ADD_METRIC)))
		return -RTL_ERR_STORE;
	sqlite3_bind_int64(s, 1, function);
	sqlite3_bind_text(s, 2, name, -1, SQLITE_TRANSIENT);
	sqlite3_bind_int64(s, 3, (sqlite3_int64)site);
	sqlite3_bind_double(s, 4, value);
	return step_insert(p, s, NULL, "add metric");
}
