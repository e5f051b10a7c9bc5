/* reticle ctl: probes added to and removed from a running `reticle probe`
 * session, from another terminal; and the session's side of it, a UNIX
 * socket it listens on, named by the pid of the process it measures.
 *
 * A request is one connection: a verb line ("add", "remove ID", "list"),
 * then for add the clauses' text; the answer is text, its first line "ok"
 * or "error: WHY". The session serves requests between the engine's events
 * (its tick), where copies can be made again. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#include "cli.h"
#include "collectors/probe.h"

int ctl_socket_path(long pid, char *buf, size_t len, bool make_dir)
{
	const char *run = getenv("XDG_RUNTIME_DIR");
	char dir[200];
	if (run && *run)
		snprintf(dir, sizeof(dir), "%s/reticle", run);
	else
		snprintf(dir, sizeof(dir), "/tmp/reticle-%u", (unsigned)getuid());
	if (make_dir && mkdir(dir, 0700) && errno != EEXIST)
		return -errno;
	struct stat st;
	/* a directory of someone else's is no place for our socket */
	if (make_dir && (lstat(dir, &st) || !S_ISDIR(st.st_mode) || st.st_uid != getuid()))
		return -EACCES;
	int n = snprintf(buf, len, "%s/probe-%ld.sock", dir, pid);
	return n < 0 || (size_t)n >= len || (size_t)n >= sizeof(((struct sockaddr_un *)0)->sun_path) ? -ENAMETOOLONG
													  : 0;
}

int ctl_listen(long pid, char *path, size_t len)
{
	int err = ctl_socket_path(pid, path, len, true);
	if (err)
		return err;
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	memcpy(sa.sun_path, path, strlen(path) + 1);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	unlink(path);   /* a session of the same pid that died */
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) || listen(fd, 8)) {
		err = -errno;
		close(fd);
		return err;
	}
	return fd;
}

static long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* What FD sends until it closes, at most MAX bytes, waited for WAIT_MS in
 * all (-1: no limit; malloc'd, NUL-ended), or NULL. A signal (the session's
 * tick, its SIGIO) does not cut the wait short: the session serves a
 * request as soon as it connects, before its text may have come. */
static char *read_all(int fd, size_t max, int wait_ms)
{
	size_t n = 0, cap = 4096;
	char *buf = malloc(cap);
	struct pollfd pf = { fd, POLLIN, 0 };
	long end = now_ms() + wait_ms;
	for (;;) {
		long left = end - now_ms();
		int r = poll(&pf, 1, wait_ms < 0 ? -1 : left > 0 ? (int)left : 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (!buf || r != 1)
			break;
		if (n + 1 >= cap) {
			char *b = cap < max ? realloc(buf, cap *= 2) : NULL;
			if (!b) {
				free(buf);
				return NULL;
			}
			buf = b;
		}
		ssize_t got = read(fd, buf + n, cap - n - 1);
		if (got <= 0)
			break;
		n += (size_t)got;
	}
	if (buf)
		buf[n] = 0;
	return buf;
}

/* Reads a request from FD (up to 64 KiB, until the client's end), 1 s at
 * most. */
static char *read_request(int fd)
{
	return read_all(fd, 64 << 10, 1000);
}

/* "live" (reticle top PID on a session): each relocated function's counts
 * ("F PID ADDR CALLS INSTRS MODULE NAME") and each probe counter's
 * ("P PID ID VALUE MODULE NAME"), tab-separated, as they stand. */
static void live_counts(FILE *f, rtl_session *s)
{
	struct rtl_live_count *c;
	size_t n = rtl_session_live(s, &c);
	for (size_t i = 0; i < n; i++)
		fprintf(f, "F\t%d\t%llx\t%llu\t%llu\t%s\t%s\n", (int)c[i].pid, (unsigned long long)c[i].addr,
			(unsigned long long)c[i].calls, (unsigned long long)c[i].instrs, c[i].module,
			c[i].name ? c[i].name : "");
	free(c);
	struct rtl_live_point *p;
	n = rtl_session_live_points(s, &p);
	for (size_t i = 0; i < n; i++)
		if (p[i].module && p[i].op != RTL_PRIM_TIMER_START)   /* counters; timers are per thread */
			fprintf(f, "P\t%d\t%u\t%llu\t%s\t%s\n", (int)p[i].pid, (unsigned)p[i].id,
				(unsigned long long)p[i].value, p[i].module, p[i].name ? p[i].name : "");
	free(p);
}

static void answer(int fd, rtl_session *s, long pid, char *req)
{
	char msg[1024];
	char *body = strchr(req, '\n');
	if (body)
		*body++ = 0;
	char *out = NULL;
	size_t outlen = 0;
	FILE *f = open_memstream(&out, &outlen);
	if (!f)
		return;
	if (!strcmp(req, "add")) {
		struct cli_paths mods = { 0 };
		char what[64];
		cli_process_modules(pid, &mods);
		snprintf(what, sizeof(what), "process %ld", pid);
		int err = probe_collector_add(s, body ? body : "", mods.v, mods.n, what, msg, sizeof(msg));
		cli_paths_free(&mods);
		if (err)
			fprintf(f, "error: %s\n", msg);
		else
			fprintf(f, "ok %s\n", msg);
	} else if (!strncmp(req, "remove ", 7)) {
		size_t ids[256], n = 0;
		char *end, *at = req + 7;
		bool bad = false;
		while (*at && !bad) {
			long id = strtol(at, &end, 10);
			bad = end == at || id <= 0 || n == sizeof(ids) / sizeof(*ids) || (*end && *end != ' ');
			ids[n++] = (size_t)id;
			at = end + (*end == ' ');
		}
		if (bad || !n)
			fprintf(f, "error: remove takes clauses' numbers (reticle ctl PID list)\n");
		else if (probe_collector_remove(s, ids, n, msg, sizeof(msg)))
			fprintf(f, "error: %s\n", msg);
		else
			fprintf(f, "ok %s\n", msg);
	} else if (!strcmp(req, "list")) {
		fprintf(f, "ok\n");
		probe_collector_list(f);
	} else if (!strcmp(req, "live")) {
		fprintf(f, "ok\n");
		live_counts(f, s);
	} else {
		fprintf(f, "error: unknown request '%s'\n", req);
	}
	fclose(f);
	for (size_t done = 0; done < outlen;) {
		/* a client gone away is no reason for the session to die */
		ssize_t w = send(fd, out + done, outlen - done, MSG_NOSIGNAL);
		if (w <= 0)
			break;
		done += (size_t)w;
	}
	free(out);
}

void ctl_serve(int lfd, rtl_session *s, long pid)
{
	for (int c; (c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC)) >= 0;) {
		char *req = read_request(c);
		if (req)
			answer(c, s, pid, req);
		free(req);
		close(c);
	}
}

int ctl_ask(long pid, const char *req, int wait_ms, char **answer)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char path[sizeof(sa.sun_path)];
	*answer = NULL;
	int err = ctl_socket_path(pid, path, sizeof(path), false);
	if (err)
		return err;
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	memcpy(sa.sun_path, path, strlen(path) + 1);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		err = -errno;
		close(fd);
		return err;
	}
	size_t len = strlen(req);
	for (size_t done = 0; done < len;) {
		ssize_t w = write(fd, req + done, len - done);
		if (w <= 0)
			break;
		done += (size_t)w;
	}
	shutdown(fd, SHUT_WR);
	*answer = read_all(fd, 256 << 20, wait_ms);
	close(fd);
	return *answer ? 0 : -EIO;
}

static void usage(FILE *f)
{
	fputs("usage: reticle ctl PID add 'CLAUSES'\n"
	      "       reticle ctl PID remove ID...\n"
	      "       reticle ctl PID list\n"
	      "\n"
	      "Changes the probe program of the 'reticle probe' session that measures\n"
	      "process PID while it runs: add compiles more clauses (docs/probe.md) into\n"
	      "the functions they name, those that ran already made again; remove takes\n"
	      "clauses out, at once (their aggregations keep what they counted while\n"
	      "they were in);\n"
	      "list shows the clauses with their numbers. The session prints every\n"
	      "aggregation at its end.\n", f);
}

int cmd_ctl(int argc, char **argv)
{
	if (argc >= 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		usage(stdout);
		return 0;
	}
	char *end;
	long pid = argc >= 3 ? strtol(argv[1], &end, 10) : 0;
	if (argc < 3 || !*argv[1] || *end || pid <= 0) {
		cli_error("ctl: give a process id and a request (try 'reticle ctl --help')");
		return CLI_EXIT_USAGE;
	}
	const char *verb = argv[2];
	char req[70000];
	if (!strcmp(verb, "add") && argc == 4)
		snprintf(req, sizeof(req), "add\n%s", argv[3]);
	else if (!strcmp(verb, "remove") && argc >= 4) {
		int n = snprintf(req, sizeof(req), "remove");
		for (int i = 3; i < argc && n > 0 && (size_t)n < sizeof(req); i++)
			n += snprintf(req + n, sizeof(req) - (size_t)n, " %s", argv[i]);
	}
	else if (!strcmp(verb, "list") && argc == 3)
		snprintf(req, sizeof(req), "list");
	else {
		cli_error("ctl: the requests are add 'CLAUSES', remove ID... and list (try 'reticle ctl --help')");
		return CLI_EXIT_USAGE;
	}
	char *answer;
	int err = ctl_ask(pid, req, -1, &answer);
	if (err == -ENOENT || err == -ECONNREFUSED) {
		cli_error("ctl: no 'reticle probe' session measures process %ld (%s)", pid, strerror(-err));
		return CLI_EXIT_FAIL;
	}
	if (err || !*answer) {
		cli_error("ctl: the session of process %ld did not answer%s%s", pid, err ? ": " : "",
			  err ? strerror(-err) : "");
		free(answer);
		return CLI_EXIT_FAIL;
	}
	bool ok = !strncmp(answer, "ok", 2);
	fputs(answer, ok ? stdout : stderr);
	free(answer);
	return ok ? 0 : CLI_EXIT_FAIL;
}
