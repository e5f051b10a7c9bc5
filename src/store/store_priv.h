/* Internal to the profile store (src/store/): the handle and the helpers the
 * three files share. profile.c owns the lifecycle (create, open, commit,
 * close) and the schema; profile_write.c the inserts; profile_read.c the
 * queries. Nothing outside src/store/ sees SQLite. */
#ifndef RETICLE_STORE_PRIV_H
#define RETICLE_STORE_PRIV_H

#include <sqlite3.h>
#include <reticle/profile.h>

/* PRAGMA application_id of every reticle profile: "RTCL". It lets a reader
 * tell a profile from any other SQLite file before it looks at tables. */
#define RTL_PROFILE_APP_ID 0x5254434c

/* Write statements, prepared once on first use and reused. */
enum store_stmt {
	ST_SET_META, ST_GET_META, ST_ADD_MODULE, ST_ADD_PROCESS, ST_SET_COUNTS, ST_ADD_TIME, ST_ADD_METRIC, ST_ADD_CONTEXT, ST_ADD_SAMPLE, ST_ADD_SIGNAL_RUN, ST_COUNT
};

/* Tables whose rows are inserted STORE_BATCH to a statement: SQLite's cost
 * per statement (cursors, statement journal, halt) was half of a row's. */
enum store_table { TB_FUNCTIONS, TB_BLOCKS, TB_CALLS, TB_BRANCHES, TB_COUNT };
#define STORE_BATCH 64

/* A function row not yet in the table. Each collector sets its counts
 * after the row is added; kept here, the row is written once, complete,
 * instead of an INSERT and an UPDATE per collector. */
struct store_function {
	int64_t module;
	uint64_t addr, size, calls, instrs;
	size_t name, reason;   /* offset + 1 in the writer's text, 0 for NULL */
	unsigned have;
	int instrumented;
};

/* Blocks or call sites waiting for a full statement: four integer columns
 * in the order of the table's. */
struct store_batch {
	int64_t row[STORE_BATCH][4];
	int n;
};

struct rtl_profile {
	sqlite3 *db;
	char *path;        /* the profile's final name */
	char *tmp;         /* writer: the temporary file; NULL for a reader */
	int committed;
	int failed;        /* writer: the error that lost rows, kept for commit */
	int64_t nmodules, nfunctions;  /* writer: ids run from 1 to these */
	/* writer: functions 1 to nstored are in the table, the others in fns
	 * (id nstored + 1 first), their strings in text */
	int64_t nstored;
	struct store_function *fns;
	size_t fns_cap;
	char *text;
	size_t ntext, text_cap;
	struct store_batch blocks, calls, branches;
	char *meta_value;  /* last rtl_profile_get_meta() result */
	int version;       /* reader: the file's schema version */
	/* reader: the process rtl_profile_select_process() chose (0: all);
	 * scoped is set while temporary tables of that name shadow the
	 * file's modules, functions, blocks and call_sites */
	int64_t process;
	int scoped, scope_built;
	sqlite3_stmt *st[ST_COUNT];
	sqlite3_stmt *insert[TB_COUNT][2];   /* one row, STORE_BATCH rows */
};

/* Logs the SQLite error of P's connection with WHAT and returns -RTL_ERR_STORE. */
int store_fail(rtl_profile *p, const char *what);

/* The prepared statement ID, reset, or NULL. Callers bind every parameter. */
sqlite3_stmt *store_stmt(rtl_profile *p, enum store_stmt id);
/* The same for the INSERT of one row (MANY 0) or STORE_BATCH rows into T. */
sqlite3_stmt *store_insert(rtl_profile *p, enum store_table t, int many);

static inline struct store_batch *store_batch_of(rtl_profile *p, enum store_table t)
{
	return t == TB_BLOCKS ? &p->blocks : t == TB_CALLS ? &p->calls : &p->branches;
}

/* Inserts the rows waiting in P's batch of T (blocks or calls) and
 * empties it. */
int store_write_batch(rtl_profile *p, enum store_table t);

/* Writes the rows the writer P still holds in memory (nothing for a
 * reader): at commit, and before a query, so that a writer reads its own
 * rows. */
int store_flush(rtl_profile *p);

/* Binds TEXT, or NULL, to parameter I of S; TEXT must outlive the step. */
static inline void store_bind_text(sqlite3_stmt *s, int i, const char *text)
{
	if (text)
		sqlite3_bind_text(s, i, text, -1, SQLITE_STATIC);
	else
		sqlite3_bind_null(s, i);
}

/* Runs one statement that returns no rows. */
int store_exec(rtl_profile *p, const char *sql);

#endif
