/* Test helper: writes a profile through the public API from a text spec, so
 * that tests can build profiles with known rows without running a target.
 *
 *   mkprofile SPEC OUT.db
 *
 * SPEC lines (fields separated by blanks; '#' starts a comment line):
 *   meta KEY VALUE...                      (VALUE is the rest of the line)
 *   module KEY PATH BIAS
 *   function KEY MODULE ADDR SIZE [name=N|noname] [calls=N] [instrs=N] [skip=REASON]
 *   block FUNCTION ADDR NINSTRS COUNT
 *   call CALLER SITE CALLEE COUNT
 * Numbers accept 0x. KEY names a module or function for later lines; a
 * function's name defaults to its KEY; in name= values %XX stands for a
 * byte (names like "(below main)" have blanks). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <reticle/error.h>
#include <reticle/profile.h>

#define MAX_KEYS 100000

static struct { char *key; int64_t id; } keys[MAX_KEYS];
static int nkeys;

static int64_t lookup(const char *key, int line)
{
	for (int i = 0; i < nkeys; i++)
		if (!strcmp(keys[i].key, key))
			return keys[i].id;
	fprintf(stderr, "mkprofile: line %d: unknown key '%s'\n", line, key);
	exit(2);
}

static void define(const char *key, int64_t id)
{
	if (nkeys == MAX_KEYS) {
		fprintf(stderr, "mkprofile: too many keys\n");
		exit(2);
	}
	keys[nkeys].key = strdup(key);
	keys[nkeys++].id = id;
}

static uint64_t num(const char *s)
{
	return strtoull(s, NULL, 0);
}

/* Decodes %XX escapes in place. */
static char *unescape(char *s)
{
	char *w = s;

	for (const char *r = s; *r; r++) {
		unsigned v;

		if (*r == '%' && sscanf(r + 1, "%2x", &v) == 1) {
			*w++ = (char)v;
			r += 2;
		} else {
			*w++ = *r;
		}
	}
	*w = 0;
	return s;
}

static int function_line(rtl_profile *p, char **f, int n, int line)
{
	const char *name = f[1], *reason = NULL;
	unsigned have = 0;
	uint64_t calls = 0, instrs = 0;
	int64_t id;
	int err;

	for (int i = 5; i < n; i++) {
		if (!strncmp(f[i], "name=", 5))
			name = unescape(f[i] + 5);
		else if (!strcmp(f[i], "noname"))
			name = NULL;
		else if (!strncmp(f[i], "calls=", 6))
			calls = num(f[i] + 6), have |= RTL_HAVE_CALLS;
		else if (!strncmp(f[i], "instrs=", 7))
			instrs = num(f[i] + 7), have |= RTL_HAVE_INSTRS;
		else if (!strncmp(f[i], "skip=", 5))
			reason = f[i] + 5;
	}
	err = rtl_profile_add_function(p, lookup(f[2], line), name, num(f[3]), num(f[4]),
				       reason == NULL, reason, &id);
	if (!err && have)
		err = rtl_profile_set_function_counts(p, id, have, calls, instrs);
	if (!err)
		define(f[1], id);
	return err;
}

static int spec_line(rtl_profile *p, char *s, int line)
{
	char *f[16], *rest = NULL, *save;
	int n = 0;
	int64_t id;
	int err;

	for (char *t = strtok_r(s, " \t\n", &save); t && n < 16; t = strtok_r(NULL, " \t\n", &save)) {
		f[n++] = t;
		if (n == 2 && !strcmp(f[0], "meta")) {
			rest = strtok_r(NULL, "\n", &save);
			break;
		}
	}
	if (!n || f[0][0] == '#')
		return 0;
	if (!strcmp(f[0], "meta") && n == 2)
		return rtl_profile_set_meta(p, f[1], rest ? rest : "");
	if (!strcmp(f[0], "module") && n == 4) {
		if ((err = rtl_profile_add_module(p, f[2], num(f[3]), &id)))
			return err;
		define(f[1], id);
		return 0;
	}
	if (!strcmp(f[0], "function") && n >= 5)
		return function_line(p, f, n, line);
	if (!strcmp(f[0], "block") && n == 5)
		return rtl_profile_add_block(p, lookup(f[1], line), num(f[2]),
					     (uint32_t)num(f[3]), num(f[4]));
	if (!strcmp(f[0], "call") && n == 5)
		return rtl_profile_add_call(p, lookup(f[1], line), num(f[2]),
					    lookup(f[3], line), num(f[4]));
	fprintf(stderr, "mkprofile: line %d: cannot parse\n", line);
	exit(2);
}

int main(int argc, char **argv)
{
	static char buf[65536];
	rtl_profile *p;
	FILE *in;
	int err = 0, line = 0;

	if (argc != 3 || !(in = fopen(argv[1], "r"))) {
		fprintf(stderr, "usage: mkprofile SPEC OUT.db\n");
		return 2;
	}
	if ((err = rtl_profile_create(argv[2], &p))) {
		fprintf(stderr, "mkprofile: %s: %s\n", argv[2], rtl_strerror(err));
		return 1;
	}
	while (!err && fgets(buf, sizeof(buf), in))
		err = spec_line(p, buf, ++line);
	if (!err)
		err = rtl_profile_commit(p);
	if (err)
		fprintf(stderr, "mkprofile: line %d: %s\n", line, rtl_strerror(err));
	rtl_profile_close(p);
	fclose(in);
	return err ? 1 : 0;
}
