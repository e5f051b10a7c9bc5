/* Profile store, rows held in memory and written several to a statement:
 * function rows until commit (their counts are set after them), blocks and
 * call sites until STORE_BATCH of them fill an INSERT. */
#include <reticle/error.h>
#include "store/store_priv.h"
#include "util/log.h"

static void bind_u64_or_null(sqlite3_stmt *s, int i, int have, uint64_t v)
{
	if (have)
		sqlite3_bind_int64(s, i, (sqlite3_int64)v);
	else
		sqlite3_bind_null(s, i);
}

/* Function row I of those in memory, from parameter AT on. A count never
 * set is NULL, as an UPDATE left it. */
static void bind_function(rtl_profile *p, sqlite3_stmt *s, int at, size_t i)
{
	const struct store_function *f = &p->fns[i];

	sqlite3_bind_int64(s, at, f->module);
	store_bind_text(s, at + 1, f->name ? p->text + f->name - 1 : NULL);
	sqlite3_bind_int64(s, at + 2, (sqlite3_int64)f->addr);
	sqlite3_bind_int64(s, at + 3, (sqlite3_int64)f->size);
	sqlite3_bind_int(s, at + 4, f->instrumented);
	store_bind_text(s, at + 5, f->reason ? p->text + f->reason - 1 : NULL);
	sqlite3_bind_int(s, at + 6, (int)f->have);
	bind_u64_or_null(s, at + 7, f->have & RTL_HAVE_CALLS, f->calls);
	bind_u64_or_null(s, at + 8, f->have & RTL_HAVE_INSTRS, f->instrs);
}

/* Inserts rows 0 to N - 1 held for table T: STORE_BATCH to a statement,
 * the rest one by one (a statement for the few left over would cost more
 * to prepare than they cost to insert). */
static int insert_rows(rtl_profile *p, enum store_table t, size_t n)
{
	static const char *const what[TB_COUNT] = { "add functions", "add blocks", "add call sites",
						    "add branches" };
	const int ncols = t == TB_FUNCTIONS ? 9 : 4;

	for (size_t i = 0; i < n;) {
		int many = n - i >= STORE_BATCH;
		sqlite3_stmt *s = store_insert(p, t, many);

		if (!s)
			return -RTL_ERR_STORE;
		for (int at = 1; at <= (many ? STORE_BATCH : 1) * ncols; at += ncols, i++) {
			if (t == TB_FUNCTIONS)
				bind_function(p, s, at, i);
			else
				for (int c = 0; c < 4; c++)
					sqlite3_bind_int64(s, at + c, store_batch_of(p, t)->row[i][c]);
		}
		if (sqlite3_step(s) != SQLITE_DONE)
			return store_fail(p, what[t]);
		/* SQLite numbers function rows (max + 1, cheaper than checking
		 * given ids), so the ids handed out must be what it chose */
		if (t == TB_FUNCTIONS && sqlite3_last_insert_rowid(p->db) != p->nstored + (int64_t)i) {
			rtl_warn("profile store: function ids out of step");
			return -RTL_ERR_STORE;
		}
	}
	return 0;
}

/* Rows that could not be inserted are lost: the writer keeps the error,
 * and commit returns it instead of writing an incomplete profile. */
static int lost(rtl_profile *p, int err)
{
	if (err && !p->failed)
		p->failed = err;
	return err;
}

int store_write_batch(rtl_profile *p, enum store_table t)
{
	struct store_batch *b = store_batch_of(p, t);
	int err = insert_rows(p, t, (size_t)b->n);

	b->n = 0;
	return lost(p, err);
}

int store_flush(rtl_profile *p)
{
	int err = insert_rows(p, TB_FUNCTIONS, (size_t)(p->nfunctions - p->nstored));

	if (err)
		return lost(p, err);
	p->nstored = p->nfunctions;
	p->ntext = 0;
	if ((err = store_write_batch(p, TB_BLOCKS)) || (err = store_write_batch(p, TB_CALLS)))
		return err;
	return store_write_batch(p, TB_BRANCHES);
}
