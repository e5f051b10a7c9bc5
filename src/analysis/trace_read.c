/* Readers of address-trace files: Dinero IV extended din ("r 1000 4",
 * -informat D), classic din ("0 1000", -informat d) and valgrind lackey
 * --trace-mem=yes (" L 1000,4"). Malformed lines stop the reader with a
 * message naming the line; see docs/cachesim.md for the label meanings. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <reticle/cachesim.h>
#include <reticle/error.h>

struct rtl_trace_reader {
	FILE *f;
	int own;
	int format;
	uint64_t lineno;
	char *buf;
	size_t cap;
	uint64_t last_iaddr;
	char err[256];
};

int rtl_trace_open(const char *path, int format, rtl_trace_reader **out)
{
	rtl_trace_reader *r = calloc(1, sizeof(*r));

	if (!r)
		return -ENOMEM;
	if (!path || !strcmp(path, "-")) {
		r->f = stdin;
	} else if (!(r->f = fopen(path, "r"))) {
		int e = -errno;
		free(r);
		return e;
	} else {
		r->own = 1;
	}
	setvbuf(r->f, NULL, _IOFBF, 1 << 20);
	r->format = format;
	*out = r;
	return 0;
}

void rtl_trace_close(rtl_trace_reader *r)
{
	if (!r)
		return;
	if (r->own)
		fclose(r->f);
	free(r->buf);
	free(r);
}

const char *rtl_trace_error(const rtl_trace_reader *r)
{
	return r->err;
}

uint64_t rtl_trace_line(const rtl_trace_reader *r)
{
	return r->lineno;
}

static int bad(rtl_trace_reader *r, const char *why)
{
	size_t n = strcspn(r->buf, "\r\n");
	snprintf(r->err, sizeof(r->err), "line %llu: %s: '%.*s'",
		 (unsigned long long)r->lineno, why, (int)(n > 60 ? 60 : n), r->buf);
	return -RTL_ERR_BAD_INPUT;
}

static int guess(const char *s)
{
	if (s[0] == 'I' || (s[0] == ' ' && strchr("LSM", s[1])))
		return RTL_TRACE_LACKEY;
	if (isdigit((unsigned char)s[0]))
		return RTL_TRACE_DIN_CLASSIC;
	return RTL_TRACE_DIN;
}

static const signed char hexval[256] = {
	['0'] = 1, ['1'] = 2, ['2'] = 3, ['3'] = 4, ['4'] = 5, ['5'] = 6, ['6'] = 7,
	['7'] = 8, ['8'] = 9, ['9'] = 10, ['a'] = 11, ['b'] = 12, ['c'] = 13, ['d'] = 14,
	['e'] = 15, ['f'] = 16, ['A'] = 11, ['B'] = 12, ['C'] = 13, ['D'] = 14, ['E'] = 15,
	['F'] = 16,
};

/* Hex number (optional 0x, at most 16 digits); END gets the first unused
 * character. By hand: strtoull was a third of the reading time. */
static int hexnum(const char *s, uint64_t *v, const char **end)
{
	uint64_t x = 0;
	int n = 0;

	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X') && hexval[(unsigned char)s[2]])
		s += 2;
	for (; hexval[(unsigned char)*s]; s++, n++)
		x = x << 4 | (uint64_t)(hexval[(unsigned char)*s] - 1);
	if (!n || n > 16)
		return -1;
	*v = x;
	*end = s;
	return 0;
}

/* 1: one access in *A; 0: line carries no access; <0: malformed. */
static int parse_lackey(rtl_trace_reader *r, const char *s, rtl_access *a)
{
	const char *p, *e;
	uint64_t size;

	if (s[0] == '=' && s[1] == '=')
		return 0;   /* valgrind's own messages */
	if (s[0] == 'I' && s[1] == ' ' && s[2] == ' ')
		a->kind = RTL_ACC_IFETCH;
	else if (s[0] == ' ' && s[2] == ' ' && (p = strchr("LSM", s[1])) && *p)
		a->kind = s[1] == 'L' ? RTL_ACC_LOAD : s[1] == 'S' ? RTL_ACC_STORE : RTL_ACC_MODIFY;
	else
		return bad(r, "expected 'I  ADDR,SIZE' or ' L|S|M ADDR,SIZE'");
	if (hexnum(s + 3, &a->addr, &p))
		return bad(r, "bad address");
	if (*p != ',')
		return bad(r, "expected ADDRESS,SIZE");
	size = 0;
	for (e = p + 1; *e >= '0' && *e <= '9' && size <= 4096; e++)
		size = size * 10 + (uint64_t)(*e - '0');
	if (e == p + 1 || !size || size > 4096 || (*e && *e != '\n' && *e != '\r'))
		return bad(r, "bad size");
	a->size = (uint32_t)size;
	return 1;
}

static int parse_din(rtl_trace_reader *r, const char *s, rtl_access *a)
{
	const char *p;
	uint64_t size = 4;

	while (*s == ' ' || *s == '\t')
		s++;
	if (!*s || *s == '\n' || *s == '#')
		return 0;
	switch (*s) {
	case 'r': case 'm': a->kind = RTL_ACC_LOAD; break;
	case 'w': a->kind = RTL_ACC_STORE; break;
	case 'i': a->kind = RTL_ACC_IFETCH; break;
	case 'c': case 'v': return 0;   /* flush / invalidate records: not simulated */
	default: return bad(r, "unknown access type (r w i m c v)");
	}
	s++;
	if (*s != ' ' && *s != '\t')
		return bad(r, "expected TYPE ADDRESS SIZE");
	while (*s == ' ' || *s == '\t')
		s++;
	if (hexnum(s, &a->addr, &p))
		return bad(r, "bad address");
	while (*p == ' ' || *p == '\t')
		p++;
	if (*p && *p != '\n' && *p != '\r' && (hexnum(p, &size, &p) || !size || size > 4096))
		return bad(r, "bad size");
	a->size = (uint32_t)size;
	return 1;
}

static int parse_classic(rtl_trace_reader *r, const char *s, rtl_access *a)
{
	const char *p;
	static const int kinds[] = { RTL_ACC_LOAD, RTL_ACC_STORE, RTL_ACC_IFETCH, RTL_ACC_LOAD };

	while (*s == ' ' || *s == '\t')
		s++;
	if (!*s || *s == '\n' || *s == '#')
		return 0;
	if (*s < '0' || *s > '4' || (s[1] != ' ' && s[1] != '\t'))
		return bad(r, "expected LABEL(0-4) ADDRESS");
	if (*s == '4')
		return 0;   /* flush */
	a->kind = kinds[*s - '0'];
	s += 2;
	while (*s == ' ' || *s == '\t')
		s++;
	if (hexnum(s, &a->addr, &p))
		return bad(r, "bad address");
	a->size = 4;
	return 1;
}

long rtl_trace_read(rtl_trace_reader *r, rtl_access *buf, size_t max)
{
	size_t n = 0;
	ssize_t len;

	while (n < max && (len = getline(&r->buf, &r->cap, r->f)) >= 0) {
		rtl_access *a = &buf[n];
		int rc;
		r->lineno++;
		if (len == 0 || r->buf[0] == '\n')
			continue;
		if (r->format == RTL_TRACE_AUTO) {
			if (r->buf[0] == '=' && r->buf[1] == '=')
				continue;   /* valgrind's banner before a lackey trace */
			r->format = guess(r->buf);
		}
		a->iaddr = 0;
		if (r->format == RTL_TRACE_LACKEY)
			rc = parse_lackey(r, r->buf, a);
		else if (r->format == RTL_TRACE_DIN_CLASSIC)
			rc = parse_classic(r, r->buf, a);
		else
			rc = parse_din(r, r->buf, a);
		if (rc < 0)
			return rc;
		if (rc == 0)
			continue;
		/* lackey: data accesses belong to the last instruction fetched */
		if (a->kind == RTL_ACC_IFETCH)
			r->last_iaddr = a->addr;
		a->iaddr = r->last_iaddr;
		n++;
	}
	if (ferror(r->f))
		return -EIO;
	return (long)n;
}
