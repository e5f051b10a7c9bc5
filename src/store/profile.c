/* Profile store lifecycle: create (temporary file, one transaction), commit
 * (the rows still in memory, indexes, COMMIT, rename), open (read-only,
 * with identity checks), close.
 * The schema below is documented for users in docs/profile-schema.md. */
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <reticle/error.h>
#include "store/store_priv.h"
#include "util/log.h"

static const char *const schema_sql =
	"CREATE TABLE meta(key TEXT PRIMARY KEY NOT NULL, value TEXT) WITHOUT ROWID;"
	"CREATE TABLE processes(id INTEGER PRIMARY KEY, parent INTEGER, pid INTEGER NOT NULL,"
	" kind TEXT NOT NULL, command TEXT, exit_status INTEGER, start_ns INTEGER, end_ns INTEGER,"
	" rank INTEGER);"
	"CREATE TABLE modules(id INTEGER PRIMARY KEY, path TEXT NOT NULL,"
	" load_bias INTEGER NOT NULL, process INTEGER NOT NULL DEFAULT 1);"
	"CREATE TABLE functions(id INTEGER PRIMARY KEY,"
	" module INTEGER NOT NULL REFERENCES modules(id), name TEXT,"
	" addr INTEGER NOT NULL, size INTEGER NOT NULL,"
	" instrumented INTEGER NOT NULL, reason TEXT,"
	" have INTEGER NOT NULL DEFAULT 0, calls INTEGER, instrs INTEGER);"
	"CREATE TABLE blocks(function INTEGER NOT NULL REFERENCES functions(id),"
	" addr INTEGER NOT NULL, ninstrs INTEGER NOT NULL, count INTEGER NOT NULL,"
	" PRIMARY KEY(function, addr)) WITHOUT ROWID;"
	"CREATE TABLE call_sites(caller INTEGER NOT NULL REFERENCES functions(id),"
	" site INTEGER NOT NULL, callee INTEGER NOT NULL REFERENCES functions(id),"
	" count INTEGER NOT NULL, PRIMARY KEY(caller, site, callee)) WITHOUT ROWID;"
	"CREATE TABLE branches(function INTEGER NOT NULL REFERENCES functions(id),"
	" site INTEGER NOT NULL, taken INTEGER NOT NULL, not_taken INTEGER NOT NULL,"
	" PRIMARY KEY(function, site)) WITHOUT ROWID;"
	"CREATE TABLE function_times(function INTEGER NOT NULL REFERENCES functions(id),"
	" tid INTEGER NOT NULL, calls INTEGER NOT NULL, inclusive REAL NOT NULL,"
	" exclusive REAL NOT NULL, PRIMARY KEY(function, tid)) WITHOUT ROWID;"
	"CREATE TABLE contexts(id INTEGER PRIMARY KEY, parent INTEGER NOT NULL,"
	" function INTEGER NOT NULL REFERENCES functions(id), tid INTEGER NOT NULL,"
	" calls INTEGER NOT NULL, inclusive REAL NOT NULL, exclusive REAL NOT NULL);"
	"CREATE TABLE samples(id INTEGER PRIMARY KEY, parent INTEGER NOT NULL,"
	" function INTEGER NOT NULL REFERENCES functions(id), tid INTEGER NOT NULL,"
	" samples INTEGER NOT NULL, weight REAL NOT NULL);"
	"CREATE TABLE signal_runs(process INTEGER NOT NULL, tid INTEGER NOT NULL, value INTEGER NOT NULL,"
	" start_ns INTEGER NOT NULL, end_ns INTEGER NOT NULL);"
	"CREATE TABLE metrics(function INTEGER NOT NULL REFERENCES functions(id),"
	" name TEXT NOT NULL, site INTEGER NOT NULL, value REAL NOT NULL,"
	" PRIMARY KEY(function, name, site)) WITHOUT ROWID;"
	"CREATE VIEW function_report AS SELECT m.path AS module, f.name AS name,"
	" printf('0x%x', f.addr) AS address, f.calls AS calls, f.instrs AS instrs"
	" FROM functions f JOIN modules m ON m.id = f.module"
	" ORDER BY coalesce(f.instrs, 0) DESC, coalesce(f.calls, 0) DESC;";

/* Secondary indexes. Function rows are all inserted at commit, in the
 * engine's order of module and address, so their index grows at its end:
 * cheaper than a CREATE INDEX after them (its sort, its schema change).
 * Call sites come in any order of callee, and their index is built once
 * at commit. Blocks and call sites need no other index for the common
 * queries: their primary keys (WITHOUT ROWID) order them by function. */
static const char *const early_index_sql =
	"CREATE INDEX functions_module ON functions(module, addr);";
static const char *const commit_index_sql =
	"CREATE INDEX call_sites_callee ON call_sites(callee);";

/* The temporary file is private: nobody reads it before the rename, and a
 * crash leaves it behind, so speed wins over durability here. */
static const char *const writer_pragmas =
	"PRAGMA journal_mode=OFF;"
	"PRAGMA synchronous=OFF;"
	"PRAGMA locking_mode=EXCLUSIVE;"
	"PRAGMA temp_store=MEMORY;"
	"PRAGMA cache_size=-65536;"
	"PRAGMA foreign_keys=OFF;";   /* ids are checked in C, more cheaply */

int store_fail(rtl_profile *p, const char *what)
{
	rtl_warn("profile store: %s: %s", what, p->db ? sqlite3_errmsg(p->db) : "no database");
	return -RTL_ERR_STORE;
}

int store_exec(rtl_profile *p, const char *sql)
{
	if (sqlite3_exec(p->db, sql, NULL, NULL, NULL) != SQLITE_OK)
		return store_fail(p, "exec");
	return 0;
}

static const char *const stmt_sql[ST_COUNT] = {
	[ST_SET_META] = "INSERT OR REPLACE INTO meta(key, value) VALUES (?1, ?2)",
	[ST_GET_META] = "SELECT value FROM meta WHERE key = ?1",
	[ST_ADD_MODULE] = "INSERT INTO modules(path, load_bias, process) VALUES (?1, ?2, ?3)",
	[ST_ADD_PROCESS] = "INSERT INTO processes(id, parent, pid, kind, command, exit_status,"
			   " start_ns, end_ns) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
	[ST_ADD_TIME] = "INSERT INTO function_times(function, tid, calls, inclusive, exclusive)"
			" VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT DO UPDATE SET calls = calls + excluded.calls,"
			" inclusive = inclusive + excluded.inclusive, exclusive = exclusive + excluded.exclusive",
	[ST_ADD_METRIC] = "INSERT INTO metrics(function, name, site, value) VALUES (?1, ?2, ?3, ?4)"
			  " ON CONFLICT DO UPDATE SET value = value + excluded.value",
	[ST_ADD_CONTEXT] = "INSERT INTO contexts(id, parent, function, tid, calls, inclusive, exclusive)"
			   " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) ON CONFLICT DO UPDATE SET"
			   " calls = calls + excluded.calls, inclusive = inclusive + excluded.inclusive,"
			   " exclusive = exclusive + excluded.exclusive",
	[ST_ADD_SAMPLE] = "INSERT INTO samples(id, parent, function, tid, samples, weight)"
			  " VALUES (?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT DO UPDATE SET"
			  " samples = samples + excluded.samples, weight = weight + excluded.weight",
	[ST_ADD_SIGNAL_RUN] = "INSERT INTO signal_runs(process, tid, value, start_ns, end_ns)"
			      " VALUES (?1, ?2, ?3, ?4, ?5)",
	[ST_SET_COUNTS] = "UPDATE functions SET have = have | ?1,"
			  " calls = CASE WHEN ?1 & 1 THEN ?2 ELSE calls END,"
			  " instrs = CASE WHEN ?1 & 2 THEN ?3 ELSE instrs END WHERE id = ?4",
};

/* Inserts: HEAD, then ROW once per row, then TAIL. */
static const struct { const char *head, *row, *tail; } insert_sql[TB_COUNT] = {
	[TB_FUNCTIONS] = { "INSERT INTO functions(module, name, addr, size, instrumented,"
			   " reason, have, calls, instrs) VALUES ", "(?,?,?,?,?,?,?,?,?)", "" },
	/* A block or call site added twice (by two collectors that share
	 * its counter) keeps the larger count, which is the same one. */
	[TB_BLOCKS] = { "INSERT INTO blocks(function, addr, ninstrs, count) VALUES ", "(?,?,?,?)",
			" ON CONFLICT DO UPDATE SET count = max(count, excluded.count)" },
	[TB_CALLS] = { "INSERT INTO call_sites(caller, site, callee, count) VALUES ", "(?,?,?,?)",
		       " ON CONFLICT DO UPDATE SET count = max(count, excluded.count)" },
	[TB_BRANCHES] = { "INSERT INTO branches(function, site, taken, not_taken) VALUES ", "(?,?,?,?)",
			  " ON CONFLICT DO UPDATE SET taken = taken + excluded.taken,"
			  " not_taken = not_taken + excluded.not_taken" },
};

static sqlite3_stmt *prepare(rtl_profile *p, sqlite3_stmt **slot, const char *sql)
{
	if (sqlite3_prepare_v3(p->db, sql, -1, SQLITE_PREPARE_PERSISTENT, slot, NULL) != SQLITE_OK) {
		store_fail(p, "prepare");
		*slot = NULL;
	}
	return *slot;
}

sqlite3_stmt *store_stmt(rtl_profile *p, enum store_stmt id)
{
	sqlite3_stmt *s = p->st[id];

	if (!s)
		return prepare(p, &p->st[id], stmt_sql[id]);
	sqlite3_reset(s);     /* every caller binds every parameter anew */
	return s;
}

sqlite3_stmt *store_insert(rtl_profile *p, enum store_table t, int many)
{
	const char *head = insert_sql[t].head, *row = insert_sql[t].row, *tail = insert_sql[t].tail;
	int rows = many ? STORE_BATCH : 1;
	sqlite3_stmt *s = p->insert[t][many];
	char *sql, *end;

	if (s) {
		sqlite3_reset(s);
		return s;
	}
	/* a comma after each row but the last, a NUL after the tail */
	if (!(sql = malloc(strlen(head) + rows * (strlen(row) + 1) + strlen(tail)))) {
		rtl_warn("profile store: out of memory");
		return NULL;
	}
	end = stpcpy(sql, head);
	for (int i = 0; i < rows; i++)
		end = stpcpy(stpcpy(end, i ? "," : ""), row);
	strcpy(end, tail);
	s = prepare(p, &p->insert[t][many], sql);
	free(sql);
	return s;
}

static rtl_profile *profile_new(const char *path)
{
	rtl_profile *p = calloc(1, sizeof(*p));

	if (p && !(p->path = strdup(path))) {
		free(p);
		p = NULL;
	}
	return p;
}

/* The process's umask without changing it (umask() can only be read by
 * setting it, which would race with other threads creating files). */
static mode_t current_umask(void)
{
	FILE *f = fopen("/proc/self/status", "re");
	char line[128];
	unsigned mask = 022;

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "Umask: %o", &mask) == 1)
			break;
	if (f)
		fclose(f);
	return (mode_t)mask;
}

/* A temporary file beside PATH (same file system, so rename is atomic),
 * with the mode a plain creat() would give, not mkstemp's 0600. */
/* Whether PATH exists and is not a regular file: /dev/null, a FIFO, a
 * terminal. A profile is an SQLite file, written under a temporary name;
 * such a destination gets the finished file's bytes copied into it (the
 * temporary name beside it would be in /dev, and a rename would replace
 * the device: `-o /dev/null` once left a regular file there). */
static bool special_destination(const char *path)
{
	struct stat st;
	return !stat(path, &st) && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode);
}

static int make_temp(rtl_profile *p)
{
	int fd;
	const char *tmpdir = getenv("TMPDIR");

	if (special_destination(p->path) ?
	    asprintf(&p->tmp, "%s/reticle-profile.XXXXXX", tmpdir && *tmpdir ? tmpdir : "/tmp") < 0 :
	    asprintf(&p->tmp, "%s.tmp.XXXXXX", p->path) < 0) {
		p->tmp = NULL;
		return -ENOMEM;
	}
	fd = mkstemp(p->tmp);
	if (fd < 0) {
		int err = -errno;

		free(p->tmp);
		p->tmp = NULL;
		return err;
	}
	fchmod(fd, 0666 & ~current_umask());
	close(fd);
	return 0;
}

static int init_writer(rtl_profile *p)
{
	char sql[128];
	int err;

	/* NOMUTEX: a profile is used by one thread (profile.h); SQLite's
	 * per-call locking cost 7% of the write time. */
	if (sqlite3_open_v2(p->tmp, &p->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX,
			    NULL) != SQLITE_OK)
		return store_fail(p, p->tmp);
	snprintf(sql, sizeof(sql), "PRAGMA application_id=%d;", RTL_PROFILE_APP_ID);
	if ((err = store_exec(p, writer_pragmas)) || (err = store_exec(p, sql)) ||
	    (err = store_exec(p, "BEGIN")) || (err = store_exec(p, schema_sql)) ||
	    (err = store_exec(p, early_index_sql)))
		return err;
	snprintf(sql, sizeof(sql), "INSERT INTO meta VALUES ('schema_version', '%d');",
		 RTL_PROFILE_SCHEMA_VERSION);
	return store_exec(p, sql);
}

int rtl_profile_create(const char *path, rtl_profile **out)
{
	rtl_profile *p;
	struct stat st;
	int err;

	*out = NULL;
	if (!path || !*path)
		return -EINVAL;
	if (!stat(path, &st) && S_ISDIR(st.st_mode))
		return -EISDIR;   /* at once: the rename at the end would fail, after the run */
	if (!(p = profile_new(path)))
		return -ENOMEM;
	if ((err = make_temp(p)) || (err = init_writer(p))) {
		rtl_profile_close(p);
		return err;
	}
	*out = p;
	return 0;
}

/* The bytes of file FROM written into TO (opened for writing, not
 * created; a FIFO no process reads is an error, not a wait for ever). */
static int copy_into(const char *from, const char *to)
{
	int in = open(from, O_RDONLY | O_CLOEXEC), out = in < 0 ? -1 : open(to, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
	int err = in < 0 || out < 0 || fcntl(out, F_SETFL, fcntl(out, F_GETFL) & ~O_NONBLOCK) < 0 ? -errno : 0;
	char buf[65536];
	ssize_t n;
	while (!err && (n = read(in, buf, sizeof(buf))) != 0) {
		if (n < 0) {
			err = -errno;
			break;
		}
		for (ssize_t off = 0; off < n && !err;) {
			ssize_t w = write(out, buf + off, (size_t)(n - off));
			if (w < 0)
				err = -errno;
			else
				off += w;
		}
	}
	if (in >= 0)
		close(in);
	if (out >= 0 && close(out) && !err)
		err = -errno;
	return err;
}

int rtl_profile_commit(rtl_profile *p)
{
	int err;

	if (!p->tmp || p->committed)
		return -EINVAL;
	if (p->failed)
		return p->failed;      /* rows are missing: no profile */
	if ((err = store_flush(p)) || (err = store_exec(p, commit_index_sql)) ||
	    (err = store_exec(p, "COMMIT")))
		return err;
	if (special_destination(p->path)) {
		if ((err = copy_into(p->tmp, p->path))) {
			rtl_warn("profile store: cannot write %s: %s", p->path, strerror(-err));
			return err;
		}
		unlink(p->tmp);
		p->committed = 1;
		return 0;
	}
	if (rename(p->tmp, p->path) < 0) {
		err = -errno;
		rtl_warn("profile store: cannot rename %s to %s: %s", p->tmp, p->path,
			 strerror(errno));
		return err;
	}
	p->committed = 1;
	return 0;
}

void rtl_profile_close(rtl_profile *p)
{
	if (!p)
		return;
	for (int i = 0; i < ST_COUNT; i++)
		sqlite3_finalize(p->st[i]);
	for (int t = 0; t < TB_COUNT; t++) {
		sqlite3_finalize(p->insert[t][0]);
		sqlite3_finalize(p->insert[t][1]);
	}
	sqlite3_close(p->db);
	if (p->tmp && !p->committed)
		unlink(p->tmp);
	free(p->fns);
	free(p->text);
	free(p->tmp);
	free(p->path);
	free(p->meta_value);
	free(p);
}

/* The file header (sqlite.org/fileformat.html): a 16-byte magic string and
 * the application id at offset 68, big-endian. Read directly, so that a
 * profile cut short is told apart from a file that never was one. */
static int check_header(const char *path)
{
	unsigned char h[100];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, h, sizeof(h));
	close(fd);
	if (n < 0)
		return -EIO;
	if (n < (ssize_t)sizeof(h) || memcmp(h, "SQLite format 3", 16))
		return -RTL_ERR_NOT_PROFILE;
	if (((uint32_t)h[68] << 24 | (uint32_t)h[69] << 16 | (uint32_t)h[70] << 8 | h[71]) !=
	    RTL_PROFILE_APP_ID)
		return -RTL_ERR_NOT_PROFILE;
	return 0;
}

/* After check_header: a schema version this build understands. */
static int check_version(rtl_profile *p)
{
	sqlite3_stmt *s = NULL;
	int rc, version = 0;

	rc = sqlite3_prepare_v2(p->db, "SELECT value FROM meta WHERE key = 'schema_version'",
				-1, &s, NULL);
	if (rc == SQLITE_OK && (rc = sqlite3_step(s)) == SQLITE_ROW)
		version = sqlite3_column_int(s, 0);
	sqlite3_finalize(s);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE && (rc & 0xff) != SQLITE_ERROR)
		return -RTL_ERR_PROFILE_CORRUPT;    /* our id, unreadable pages */
	if (version <= 0)
		return -RTL_ERR_NOT_PROFILE;        /* our id, no meta table */
	p->version = version;
	if (version > RTL_PROFILE_SCHEMA_VERSION) {
		rtl_info("profile %s has schema version %d; this reticle reads up to %d",
			 p->path, version, RTL_PROFILE_SCHEMA_VERSION);
		return -RTL_ERR_PROFILE_VERSION;
	}
	return 0;
}

int rtl_profile_open(const char *path, rtl_profile **out)
{
	struct stat st;
	rtl_profile *p;
	int err;

	*out = NULL;
	if (!path || !*path)
		return -EINVAL;
	if (stat(path, &st) < 0)
		return -errno;
	if (S_ISDIR(st.st_mode))
		return -EISDIR;
	if (!S_ISREG(st.st_mode))
		return -RTL_ERR_NOT_PROFILE;    /* SQLite needs a seekable file */
	if ((err = check_header(path)))
		return err;
	if (!(p = profile_new(path)))
		return -ENOMEM;
	if (sqlite3_open_v2(path, &p->db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX,
			    NULL) != SQLITE_OK)
		err = store_fail(p, path);
	else
		err = check_version(p);
	if (err) {
		rtl_profile_close(p);
		return err;
	}
	*out = p;
	return 0;
}
