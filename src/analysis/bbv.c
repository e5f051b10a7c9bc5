/* Basic-block vectors: storage and valgrind exp-bbv's file format
 * ("T:id:count :id:count ..." per interval). */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <reticle/error.h>
#include <reticle/simpoint.h>
#include "bbv.h"

int rtl_bbv_create(rtl_bbv **out)
{
	*out = calloc(1, sizeof(**out));
	return *out ? 0 : -ENOMEM;
}

void rtl_bbv_destroy(rtl_bbv *v)
{
	if (!v)
		return;
	free(v->start);
	free(v->id);
	free(v->count);
	free(v->total);
	free(v);
}

static int reserve(rtl_bbv *v, size_t entries)
{
	if (v->n + entries > v->cap) {
		size_t nc = v->cap ? v->cap * 2 : 4096;
		while (nc < v->n + entries)
			nc *= 2;
		uint32_t *ni = realloc(v->id, nc * sizeof(*ni));
		if (!ni)
			return -ENOMEM;
		v->id = ni;
		uint64_t *nn = realloc(v->count, nc * sizeof(*nn));
		if (!nn)
			return -ENOMEM;
		v->count = nn;
		v->cap = nc;
	}
	if (v->nint + 2 > v->intcap) {
		size_t nc = v->intcap ? v->intcap * 2 : 256;
		size_t *ns = realloc(v->start, nc * sizeof(*ns));
		if (!ns)
			return -ENOMEM;
		v->start = ns;
		uint64_t *nt = realloc(v->total, nc * sizeof(*nt));
		if (!nt)
			return -ENOMEM;
		v->total = nt;
		v->intcap = nc;
	}
	return 0;
}

int rtl_bbv_add_interval(rtl_bbv *v, const uint32_t *ids, const uint64_t *counts, size_t n)
{
	uint64_t total = 0;

	for (size_t i = 0; i < n; i++)
		if (!ids[i])
			return -EINVAL;   /* ids are 1-based: exp-bbv writes none as 0 */
	if (reserve(v, n) < 0)
		return -ENOMEM;
	v->start[v->nint] = v->n;
	for (size_t i = 0; i < n; i++) {
		v->id[v->n] = ids[i];
		v->count[v->n++] = counts[i];
		total += counts[i];
	}
	v->total[v->nint++] = total;
	v->start[v->nint] = v->n;
	return 0;
}

size_t rtl_bbv_intervals(const rtl_bbv *v)
{
	return v->nint;
}

uint64_t rtl_bbv_interval_total(const rtl_bbv *v, size_t i)
{
	return i < v->nint ? v->total[i] : 0;
}

/* One "T:id:count :id:count" line into the scratch arrays. */
static int parse_line(char *s, uint32_t **ids, uint64_t **cnt, size_t *n, size_t *cap)
{
	char *p = s + 1, *e;

	*n = 0;
	while (*p) {
		while (*p == ' ' || *p == '\t')
			p++;
		if (!*p || *p == '\n' || *p == '\r')
			break;
		if (*p != ':' || !isdigit((unsigned char)p[1]))
			return -1;
		unsigned long long id = strtoull(p + 1, &e, 10);
		if (*e != ':' || !isdigit((unsigned char)e[1]) || !id || id > UINT32_MAX)
			return -1;
		unsigned long long c = strtoull(e + 1, &p, 10);
		if (*p && *p != ' ' && *p != '\t' && *p != '\n' && *p != '\r')
			return -1;
		if (*n == *cap) {
			*cap = *cap ? *cap * 2 : 1024;
			*ids = realloc(*ids, *cap * sizeof(**ids));
			*cnt = realloc(*cnt, *cap * sizeof(**cnt));
			if (!*ids || !*cnt)
				return -2;
		}
		(*ids)[*n] = (uint32_t)id;
		(*cnt)[(*n)++] = c;
	}
	return 0;
}

int rtl_bbv_read(const char *path, rtl_bbv **out, char *err, size_t errlen)
{
	FILE *f = fopen(path, "r");
	char *line = NULL;
	size_t lcap = 0, n, cap = 0, lineno = 0;
	uint32_t *ids = NULL;
	uint64_t *cnt = NULL;
	rtl_bbv *v = NULL;
	int rc = 0;

	if (!f)
		return -errno;
	if ((rc = rtl_bbv_create(&v)) < 0)
		goto out;
	while (getline(&line, &lcap, f) >= 0) {
		lineno++;
		if (line[0] == '#' || line[0] == '\n' || line[0] == '\r')
			continue;
		int pr = line[0] == 'T' ? parse_line(line, &ids, &cnt, &n, &cap) : -1;
		if (pr == -2 || (!pr && rtl_bbv_add_interval(v, ids, cnt, n) < 0)) {
			rc = -ENOMEM;
			goto out;
		}
		if (pr < 0) {
			snprintf(err, errlen, "%s: line %zu: expected 'T:ID:COUNT :ID:COUNT ...'",
				 path, lineno);
			rc = -RTL_ERR_BAD_INPUT;
			goto out;
		}
	}
	if (!v->nint) {
		snprintf(err, errlen, "%s: no basic-block vector (empty file?)", path);
		rc = -RTL_ERR_BAD_INPUT;
	}
out:
	fclose(f);
	free(line);
	free(ids);
	free(cnt);
	if (rc < 0)
		rtl_bbv_destroy(v);
	else
		*out = v;
	return rc;
}
