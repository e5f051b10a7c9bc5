/* Profile store: rows written through the API come back through the read
 * side, a profile appears only on commit, and foreign files are refused. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sqlite3.h>
#include <reticle/error.h>
#include <reticle/profile.h>
#include "check.h"

static char dir[] = "/tmp/rtl-test-profile-XXXXXX";

static char *in_dir(const char *name)
{
	static char buf[4][256];
	static int next;
	char *b = buf[next++ % 4];

	snprintf(b, sizeof(buf[0]), "%s/%s", dir, name);
	return b;
}

static int count_files(void)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

struct seen { int n; uint64_t calls, instrs; char names[8][32]; };

static int collect(const rtl_profile_function *f, void *user)
{
	struct seen *s = user;

	if (s->n < 8)
		snprintf(s->names[s->n], sizeof(s->names[0]), "%s", f->name ? f->name : "?");
	s->n++;
	s->calls += f->calls;
	s->instrs += f->instrs;
	return 0;
}

static int64_t fid[4];

static void write_rows(rtl_profile *p)
{
	int64_t exe, lib;

	CHECK_EQ(rtl_profile_set_meta(p, "command", "./a.out x"), 0);
	CHECK_EQ(rtl_profile_set_meta(p, "pid", "42"), 0);
	CHECK_EQ(rtl_profile_set_meta(p, "schema_version", "9"), -EINVAL);
	CHECK_EQ(rtl_profile_add_module(p, "/bin/a.out", 0x555555554000ull, &exe), 0);
	CHECK_EQ(rtl_profile_add_module(p, "/lib/libc.so.6", 0x7f0000000000ull, &lib), 0);
	CHECK_EQ(rtl_profile_add_function(p, exe, "main", 0x1130, 40, 1, NULL, &fid[0]), 0);
	CHECK_EQ(rtl_profile_add_function(p, exe, "work", 0x1160, 80, 1, NULL, &fid[1]), 0);
	CHECK_EQ(rtl_profile_add_function(p, lib, "puts", 0x80e50, 300, 1, NULL, &fid[2]), 0);
	CHECK_EQ(rtl_profile_add_function(p, exe, "_start", 0x1040, 4, 0, "too short", &fid[3]), 0);
	/* fcount and bbcount set their counts separately on the same row. */
	CHECK_EQ(rtl_profile_set_function_counts(p, fid[0], RTL_HAVE_CALLS, 1, 0), 0);
	CHECK_EQ(rtl_profile_set_function_counts(p, fid[0], RTL_HAVE_INSTRS, 0, 17), 0);
	CHECK_EQ(rtl_profile_set_function_counts(p, fid[1], RTL_HAVE_CALLS | RTL_HAVE_INSTRS,
						 10, 0xfffffffffull), 0);
	CHECK_EQ(rtl_profile_set_function_counts(p, fid[2], RTL_HAVE_CALLS, 3, 0), 0);
	CHECK_EQ(rtl_profile_set_function_counts(p, 999, RTL_HAVE_CALLS, 3, 0), -ENOENT);
	CHECK_EQ(rtl_profile_add_block(p, fid[1], 0x1160, 5, 10), 0);
	CHECK_EQ(rtl_profile_add_block(p, fid[1], 0x1170, 3, 7), 0);
	CHECK_EQ(rtl_profile_add_call(p, fid[0], 0x1138, fid[1], 10), 0);
	CHECK_EQ(rtl_profile_add_call(p, fid[1], 0x1180, fid[2], 2), 0);
	/* Rows that name ids that do not exist are refused. */
	CHECK_EQ(rtl_profile_add_call(p, fid[1], 0x1180, 12345, 3), -ENOENT);
	CHECK_EQ(rtl_profile_add_call(p, 0, 0x1180, fid[1], 3), -ENOENT);
	CHECK_EQ(rtl_profile_add_block(p, 77, 0x1180, 1, 1), -ENOENT);
	CHECK_EQ(rtl_profile_add_function(p, 3, "f", 0, 1, 1, NULL, NULL), -ENOENT);
	/* The same block twice (two collectors): the larger count is kept. */
	CHECK_EQ(rtl_profile_add_block(p, fid[1], 0x1170, 3, 2), 0);
	CHECK_EQ(rtl_profile_add_block(p, fid[1], 0x1160, 5, 10), 0);
	/* an arc two collectors both know: the larger count is kept */
	CHECK_EQ(rtl_profile_add_call(p, fid[1], 0x1180, fid[2], 3), 0);
	CHECK_EQ(rtl_profile_add_call(p, fid[1], 0x1180, fid[2], 1), 0);
}

static int check_block(const rtl_profile_block *b, void *user)
{
	int *n = user;

	CHECK_EQ(b->function, fid[1]);
	CHECK_EQ(b->addr, *n ? 0x1170 : 0x1160);
	CHECK_EQ(b->ninstrs, *n ? 3 : 5);
	CHECK_EQ(b->count, *n ? 7 : 10);
	(*n)++;
	return 0;
}

static int check_call(const rtl_profile_call *c, void *user)
{
	int *n = user;

	CHECK_EQ(c->caller, *n ? fid[1] : fid[0]);
	CHECK_EQ(c->callee, *n ? fid[2] : fid[1]);
	CHECK_EQ(c->count, *n ? 3 : 10);
	(*n)++;
	return 0;
}

static int stop_at_first(const rtl_profile_function *f, void *user)
{
	return 7;
}

static void read_rows(rtl_profile *p)
{
	struct seen s = { 0 };
	rtl_profile_totals t;
	int n = 0;

	CHECK_STR(rtl_profile_get_meta(p, "command"), "./a.out x");
	CHECK_STR(rtl_profile_get_meta(p, "schema_version"), "2");
	CHECK(rtl_profile_get_meta(p, "nothing") == NULL);
	CHECK_EQ(rtl_profile_foreach_function(p, 0, collect, &s), 0);
	CHECK_EQ(s.n, 3);
	CHECK_STR(s.names[0], "work");
	CHECK_STR(s.names[1], "main");
	CHECK_STR(s.names[2], "puts");
	CHECK_EQ(s.calls, 14);
	CHECK_EQ(s.instrs, 0xfffffffffull + 17);
	memset(&s, 0, sizeof(s));
	CHECK_EQ(rtl_profile_foreach_function(p, 1, collect, &s), 0);
	CHECK_EQ(s.n, 4);
	CHECK_STR(s.names[3], "_start");
	memset(&s, 0, sizeof(s));
	CHECK_EQ(rtl_profile_foreach_function_by_addr(p, 1, collect, &s), 0);
	CHECK_STR(s.names[0], "_start");
	CHECK_STR(s.names[3], "puts");
	CHECK_EQ(rtl_profile_foreach_function(p, 0, stop_at_first, NULL), 7);
	CHECK_EQ(rtl_profile_foreach_block(p, fid[1], check_block, &n), 0);
	CHECK_EQ(n, 2);
	n = 0;
	CHECK_EQ(rtl_profile_foreach_block(p, fid[0], check_block, &n), 0);
	CHECK_EQ(n, 0);
	CHECK_EQ(rtl_profile_foreach_call(p, check_call, &n), 0);
	CHECK_EQ(n, 2);
	CHECK_EQ(rtl_profile_get_totals(p, &t), 0);
	CHECK_EQ(t.have, RTL_HAVE_CALLS | RTL_HAVE_INSTRS);
	CHECK_EQ(t.calls, 14);
	CHECK_EQ(t.instrs, 0xfffffffffull + 17);
	CHECK_EQ(t.functions, 4);
	CHECK_EQ(t.counted, 3);
	CHECK_EQ(t.modules, 2);
	CHECK_EQ(t.blocks, 2);
	CHECK_EQ(t.call_sites, 2);
}

static void test_round_trip(void)
{
	rtl_profile *p;

	CHECK_EQ(rtl_profile_create(in_dir("a.db"), &p), 0);
	write_rows(p);
	/* Nothing under the final name before the commit. */
	CHECK(access(in_dir("a.db"), F_OK) < 0);
	CHECK_EQ(rtl_profile_commit(p), 0);
	CHECK_EQ(rtl_profile_commit(p), -EINVAL);
	CHECK_EQ(rtl_profile_set_meta(p, "late", "x"), -EINVAL);
	rtl_profile_close(p);
	CHECK_EQ(count_files(), 1);
	/* The mode creat() would give, not mkstemp's 0600. */
	struct stat st;
	mode_t mask = umask(022);
	umask(mask);
	CHECK_EQ(stat(in_dir("a.db"), &st), 0);
	CHECK_EQ(st.st_mode & 0777, 0666 & ~mask);
	CHECK_EQ(rtl_profile_open(in_dir("a.db"), &p), 0);
	read_rows(p);
	CHECK_EQ(rtl_profile_set_meta(p, "ro", "x"), -EINVAL);
	rtl_profile_close(p);
}

struct metrics_seen { int n; char text[256]; };

static int collect_metric(const rtl_profile_metric *m, void *user)
{
	struct metrics_seen *s = user;
	size_t used = strlen(s->text);
	snprintf(s->text + used, sizeof(s->text) - used, "%s:%lld:%llx:%g ", m->name,
		 (long long)m->function, (unsigned long long)m->site, m->value);
	s->n++;
	return 0;
}

/* A plug-in's measures: one value per (function, name, site), added up
 * when written twice and across the images of a run. */
static void test_metrics(void)
{
	rtl_profile *p;
	int64_t mod, fn, mod2, fn2;
	rtl_profile_process first = { .id = 1, .pid = 10, .kind = "launch", .exit_status = 0 };
	rtl_profile_process second = { .id = 2, .parent = 1, .pid = 11, .kind = "fork", .exit_status = 0 };

	CHECK_EQ(rtl_profile_create(in_dir("m.db"), &p), 0);
	CHECK_EQ(rtl_profile_add_process(p, &first), 0);
	CHECK_EQ(rtl_profile_add_process_module(p, 1, "/bin/x", 0, &mod), 0);
	CHECK_EQ(rtl_profile_add_function(p, mod, "f", 0x1000, 16, 1, NULL, &fn), 0);
	CHECK_EQ(rtl_profile_add_metric(p, fn, "bias", 0x1004, 2.5), 0);
	CHECK_EQ(rtl_profile_add_metric(p, fn, "bias", 0x1004, 1), 0);
	CHECK_EQ(rtl_profile_add_metric(p, fn, "alpha", 0x1000, 7), 0);
	CHECK_EQ(rtl_profile_add_metric(p, fn + 5, "bias", 0, 1), -ENOENT);
	CHECK_EQ(rtl_profile_add_metric(p, fn, "", 0, 1), -EINVAL);
	CHECK_EQ(rtl_profile_add_metric(p, fn, NULL, 0, 1), -EINVAL);
	CHECK_EQ(rtl_profile_add_process(p, &second), 0);
	CHECK_EQ(rtl_profile_add_process_module(p, 2, "/bin/x", 0, &mod2), 0);
	CHECK_EQ(rtl_profile_add_function(p, mod2, "f", 0x1000, 16, 1, NULL, &fn2), 0);
	CHECK_EQ(rtl_profile_add_metric(p, fn2, "bias", 0x1004, 0.5), 0);
	CHECK_EQ(rtl_profile_commit(p), 0);
	rtl_profile_close(p);

	struct metrics_seen all = { 0 }, one = { 0 };
	char want[128];
	CHECK_EQ(rtl_profile_open(in_dir("m.db"), &p), 0);
	CHECK_EQ(rtl_profile_foreach_metric(p, collect_metric, &all), 0);
	snprintf(want, sizeof(want), "alpha:%lld:1000:7 bias:%lld:1004:4 ", (long long)fn, (long long)fn);
	CHECK_EQ(all.n, 2);
	CHECK(!strcmp(all.text, want));
	CHECK_EQ(rtl_profile_select_process(p, 2), 0);
	CHECK_EQ(rtl_profile_foreach_metric(p, collect_metric, &one), 0);
	snprintf(want, sizeof(want), "bias:%lld:1004:0.5 ", (long long)fn2);
	CHECK(!strcmp(one.text, want));
	rtl_profile_close(p);
	unlink(in_dir("m.db"));   /* later tests count the files */
}

static void test_abandon(void)
{
	rtl_profile *p;

	CHECK_EQ(rtl_profile_create(in_dir("b.db"), &p), 0);
	write_rows(p);
	CHECK_EQ(count_files(), 2);       /* a.db and b.db's temporary file */
	rtl_profile_close(p);
	CHECK_EQ(count_files(), 1);
	CHECK(access(in_dir("b.db"), F_OK) < 0);
	CHECK_EQ(rtl_profile_create(in_dir("nodir/c.db"), &p), -ENOENT);
	CHECK(p == NULL);
	/* a directory: refused at once, no temporary file beside it */
	CHECK_EQ(mkdir(in_dir("d.db"), 0755), 0);
	CHECK_EQ(rtl_profile_create(in_dir("d.db"), &p), -EISDIR);
	CHECK(p == NULL);
	CHECK_EQ(count_files(), 2);       /* a.db and the directory */
	CHECK_EQ(rmdir(in_dir("d.db")), 0);
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	fputs(text, f);
	fclose(f);
}

static void sql_file(const char *path, const char *sql)
{
	sqlite3 *db;

	CHECK_EQ(sqlite3_open(path, &db), SQLITE_OK);
	CHECK_EQ(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
}

static void test_foreign_files(void)
{
	rtl_profile *p = (rtl_profile *)1;

	CHECK_EQ(rtl_profile_open(in_dir("missing.db"), &p), -ENOENT);
	CHECK(p == NULL);
	CHECK_EQ(rtl_profile_open(dir, &p), -EISDIR);
	CHECK_EQ(rtl_profile_open("/dev/null", &p), -RTL_ERR_NOT_PROFILE);
	write_file(in_dir("text.db"), "this is not a database, just some text\n");
	CHECK_EQ(rtl_profile_open(in_dir("text.db"), &p), -RTL_ERR_NOT_PROFILE);
	write_file(in_dir("empty.db"), "");
	CHECK_EQ(rtl_profile_open(in_dir("empty.db"), &p), -RTL_ERR_NOT_PROFILE);
	sql_file(in_dir("other.db"), "CREATE TABLE t(x);");
	CHECK_EQ(rtl_profile_open(in_dir("other.db"), &p), -RTL_ERR_NOT_PROFILE);
	/* Our application id but no meta table: not a profile either. */
	sql_file(in_dir("half.db"), "PRAGMA application_id=1381253964; CREATE TABLE t(x);");
	CHECK_EQ(rtl_profile_open(in_dir("half.db"), &p), -RTL_ERR_NOT_PROFILE);
	/* A profile from a future reticle. */
	CHECK_EQ(rtl_profile_create(in_dir("new.db"), &p), 0);
	CHECK_EQ(rtl_profile_commit(p), 0);
	rtl_profile_close(p);
	sql_file(in_dir("new.db"), "UPDATE meta SET value = '99' WHERE key = 'schema_version';");
	CHECK_EQ(rtl_profile_open(in_dir("new.db"), &p), -RTL_ERR_PROFILE_VERSION);
	CHECK_STR(rtl_strerror(-RTL_ERR_NOT_PROFILE), "not a reticle profile");
}

/* Writes many rows; returns the first error. */
static int write_many(rtl_profile *p, int nfn)
{
	int64_t mod, fn;
	int err = rtl_profile_add_module(p, "/bin/x", 0, &mod);

	for (int f = 0; f < nfn && !err; f++) {
		err = rtl_profile_add_function(p, mod, "some_function_name", 0x1000 + f * 64,
					       64, 1, NULL, &fn);
		for (int b = 0; b < 20 && !err; b++)
			err = rtl_profile_add_block(p, fn, 0x1000 + f * 64 + b, 2, b);
	}
	return err;
}

/* A writer killed before commit leaves no profile under the final name. */
static void test_killed_writer(void)
{
	int status;
	pid_t pid = fork();

	if (pid == 0) {
		rtl_profile *p;

		if (rtl_profile_create(in_dir("killed.db"), &p) || write_many(p, 1000))
			_exit(1);
		raise(SIGKILL);
	}
	CHECK(waitpid(pid, &status, 0) == pid && WIFSIGNALED(status));
	CHECK(access(in_dir("killed.db"), F_OK) < 0);
	CHECK_EQ(count_files(), 2);        /* a.db and the dead writer's temporary */
	char cmd[300];
	snprintf(cmd, sizeof(cmd), "rm -f '%s'/killed.db.tmp.*", dir);
	CHECK_EQ(system(cmd), 0);
	CHECK_EQ(count_files(), 1);
}

/* A full disk (here a file size limit) makes the write or the commit fail;
 * closing then removes the temporary file. */
static void test_disk_full(void)
{
	int status;
	pid_t pid = fork();

	if (pid == 0) {
		struct rlimit lim = { 256 * 1024, 256 * 1024 };
		rtl_profile *p;
		int err;

		signal(SIGXFSZ, SIG_IGN);
		setrlimit(RLIMIT_FSIZE, &lim);
		if (rtl_profile_create(in_dir("full.db"), &p))
			_exit(2);
		err = write_many(p, 20000);
		if (!err)
			err = rtl_profile_commit(p);
		rtl_profile_close(p);
		_exit(err ? 0 : 3);
	}
	CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status));
	CHECK_EQ(WEXITSTATUS(status), 0);
	CHECK(access(in_dir("full.db"), F_OK) < 0);
	CHECK_EQ(count_files(), 1);
}

int main(void)
{
	char cmd[300];

	if (!mkdtemp(dir))
		return perror("mkdtemp"), 1;
	test_round_trip();
	test_abandon();
	test_metrics();
	test_killed_writer();
	test_disk_full();
	test_foreign_files();
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		return 1;
	return CHECK_DONE();
}
