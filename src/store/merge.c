/* Profiles merged into one (reticle merge: the ranks of an MPI job, or any
 * runs): every process image of every input becomes an image of the
 * output, its rows copied with their ids moved past those already there,
 * and marked with its rank (the input's mpi_rank, else the input's
 * position). Readers then add the images up as they do for one run, and
 * can tell the ranks apart (processes.rank). */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <reticle/error.h>
#include "store/store_priv.h"

static int64_t max_id(rtl_profile *p, const char *table)
{
	char sql[96];
	sqlite3_stmt *s;
	int64_t v = 0;
	snprintf(sql, sizeof(sql), "SELECT coalesce(max(id), 0) FROM main.%s", table);
	if (sqlite3_prepare_v2(p->db, sql, -1, &s, NULL) == SQLITE_OK && sqlite3_step(s) == SQLITE_ROW)
		v = sqlite3_column_int64(s, 0);
	sqlite3_finalize(s);
	return v;
}

/* Whether the attached input has TABLE (optional tables: older profiles
 * lack some), or TABLE's COLUMN. */
static int src_has(rtl_profile *p, const char *table, const char *column)
{
	char *sql = column ? sqlite3_mprintf("SELECT 1 FROM pragma_table_info(%Q, 'src') WHERE name = %Q",
					     table, column)
			   : sqlite3_mprintf("SELECT 1 FROM src.sqlite_master WHERE type = 'table' AND name = %Q",
					     table);
	sqlite3_stmt *s;
	int has = sql && sqlite3_prepare_v2(p->db, sql, -1, &s, NULL) == SQLITE_OK && sqlite3_step(s) == SQLITE_ROW;
	if (sql)
		sqlite3_finalize(s);
	sqlite3_free(sql);
	return has;
}

/* The input's mpi_rank, or DEFAULT_RANK. */
static int64_t src_rank(rtl_profile *p, int64_t default_rank)
{
	sqlite3_stmt *s;
	int64_t rank = default_rank;
	if (sqlite3_prepare_v2(p->db, "SELECT value FROM src.meta WHERE key = 'mpi_rank'", -1, &s, NULL) == SQLITE_OK &&
	    sqlite3_step(s) == SQLITE_ROW && sqlite3_column_type(s, 0) != SQLITE_NULL)
		rank = sqlite3_column_int64(s, 0);
	sqlite3_finalize(s);
	return rank;
}

static int run(rtl_profile *p, const char *fmt, ...)
{
	char sql[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(sql, sizeof(sql), fmt, ap);
	va_end(ap);
	return store_exec(p, sql);
}

/* Copies the attached input "src" into P, its ids past P's own. */
static int copy_input(rtl_profile *p, int64_t rank, int first)
{
	int64_t op = max_id(p, "processes"), om = max_id(p, "modules"), of = max_id(p, "functions");
	int err;
	if (!src_has(p, "processes", NULL) || !src_has(p, "modules", "process"))
		return -RTL_ERR_PROFILE_CORRUPT;   /* schema 1: one process, no tree */
	if ((err = run(p, "INSERT INTO processes(id, parent, pid, kind, command, exit_status, start_ns, end_ns, rank)"
		       " SELECT id + %" PRId64 ", CASE WHEN coalesce(parent, 0) = 0 THEN parent ELSE parent + %" PRId64
		       " END, pid, kind, command, exit_status, start_ns, end_ns, %" PRId64 " FROM src.processes",
		       op, op, rank)) ||
	    (err = run(p, "INSERT INTO modules(id, path, load_bias, process) SELECT id + %" PRId64 ", path, load_bias,"
		       " process + %" PRId64 " FROM src.modules", om, op)) ||
	    (err = run(p, "INSERT INTO functions(id, module, name, addr, size, instrumented, reason, have, calls, instrs)"
		       " SELECT id + %" PRId64 ", module + %" PRId64 ", name, addr, size, instrumented, reason, have,"
		       " calls, instrs FROM src.functions", of, om)) ||
	    (err = run(p, "INSERT INTO blocks(function, addr, ninstrs, count) SELECT function + %" PRId64
		       ", addr, ninstrs, count FROM src.blocks", of)) ||
	    (err = run(p, "INSERT INTO call_sites(caller, site, callee, count) SELECT caller + %" PRId64
		       ", site, callee + %" PRId64 ", count FROM src.call_sites", of, of)))
		return err;
	if (src_has(p, "branches", NULL) &&
	    (err = run(p, "INSERT INTO branches(function, site, taken, not_taken) SELECT function + %" PRId64
		       ", site, taken, not_taken FROM src.branches", of)))
		return err;
	if (src_has(p, "function_times", NULL) &&
	    (err = run(p, "INSERT INTO function_times(function, tid, calls, inclusive, exclusive) SELECT function + %"
		       PRId64 ", tid, calls, inclusive, exclusive FROM src.function_times",
		       of)))
		return err;
	/* a context's id holds its image's: image << 32 | number */
	if (src_has(p, "contexts", NULL) &&
	    (err = run(p, "INSERT INTO contexts(id, parent, function, tid, calls, inclusive, exclusive) SELECT"
		       " id + (%" PRId64 " << 32), CASE parent WHEN 0 THEN 0 ELSE parent + (%" PRId64 " << 32) END,"
		       " function + %" PRId64 ", tid, calls, inclusive, exclusive FROM src.contexts", op, op, of)))
		return err;
	if (src_has(p, "samples", NULL) &&
	    (err = run(p, "INSERT INTO samples(id, parent, function, tid, samples, weight) SELECT"
		       " id + (%" PRId64 " << 32), CASE parent WHEN 0 THEN 0 ELSE parent + (%" PRId64 " << 32) END,"
		       " function + %" PRId64 ", tid, samples, weight FROM src.samples", op, op, of)))
		return err;
	if (src_has(p, "signal_runs", NULL) &&
	    (err = run(p, "INSERT INTO signal_runs(process, tid, value, start_ns, end_ns) SELECT process + %" PRId64
		       ", tid, value, start_ns, end_ns FROM src.signal_runs", op)))
		return err;
	if (src_has(p, "metrics", NULL) &&
	    (err = run(p, "INSERT INTO metrics(function, name, site, value) SELECT function + %" PRId64
		       ", name, site, value FROM src.metrics", of)))
		return err;
	/* the first input's facts stand for the whole; its rank does not */
	if (first && (err = store_exec(p, "INSERT OR REPLACE INTO meta(key, value) SELECT key, value FROM src.meta"
				       " WHERE key NOT IN ('mpi_rank', 'schema_version')")))
		return err;
	return 0;
}

int rtl_profile_merge(const char *out, const char *const *inputs, size_t n, int (*progress)(size_t i, void *user),
		      void *user)
{
	rtl_profile *p, *check;
	int err;
	if (!n)
		return -EINVAL;
	/* each input is a profile this reticle reads (version, header, damage) */
	for (size_t i = 0; i < n; i++) {
		if ((err = rtl_profile_open(inputs[i], &check)))
			return err;
		rtl_profile_close(check);
	}
	if ((err = rtl_profile_create(out, &p)))
		return err;
	/* SQLite attaches only outside a transaction: the writer's, ended here,
	 * opens again for its commit */
	err = store_exec(p, "COMMIT");
	for (size_t i = 0; i < n && !err; i++) {
		char *attach = sqlite3_mprintf("ATTACH %Q AS src", inputs[i]);
		err = attach ? store_exec(p, attach) : -ENOMEM;
		sqlite3_free(attach);
		if (err)
			break;
		if (!(err = store_exec(p, "BEGIN")) && !(err = copy_input(p, src_rank(p, (int64_t)i), i == 0)))
			err = store_exec(p, "COMMIT");
		else
			store_exec(p, "ROLLBACK");
		int derr = store_exec(p, "DETACH src");
		err = err ? err : derr;
		if (!err && progress)
			err = progress(i, user);
	}
	if (!err)
		err = store_exec(p, "BEGIN");
	char count[24];
	snprintf(count, sizeof(count), "%zu", n);
	if (!err)
		err = rtl_profile_set_meta(p, "merged_profiles", count);
	if (!err)
		err = rtl_profile_commit(p);
	rtl_profile_close(p);
	return err;
}
