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
	ST_SET_META, ST_GET_META, ST_ADD_MODULE, ST_ADD_FUNCTION,
	ST_SET_COUNTS, ST_ADD_BLOCK, ST_ADD_CALL, ST_COUNT
};

struct rtl_profile {
	sqlite3 *db;
	char *path;        /* the profile's final name */
	char *tmp;         /* writer: the temporary file; NULL for a reader */
	int committed;
	int64_t nmodules, nfunctions;  /* writer: ids run from 1 to these */
	char *meta_value;  /* last rtl_profile_get_meta() result */
	sqlite3_stmt *st[ST_COUNT];
};

/* Logs the SQLite error of P's connection with WHAT and returns -RTL_ERR_STORE. */
int store_fail(rtl_profile *p, const char *what);

/* The prepared statement ID, reset, or NULL. Callers bind every parameter. */
sqlite3_stmt *store_stmt(rtl_profile *p, enum store_stmt id);

/* Runs one statement that returns no rows. */
int store_exec(rtl_profile *p, const char *sql);

#endif
