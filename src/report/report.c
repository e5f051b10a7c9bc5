/* Report dispatch and the helpers every exporter shares. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <reticle/binary.h>
#include <reticle/error.h>
#include "report/report_priv.h"
#include "util/array.h"

const rtl_report_options rpt_default_options;

static const char *const format_names[] = {
	[RTL_REPORT_TEXT] = "text",
	[RTL_REPORT_JSON] = "json",
	[RTL_REPORT_CALLGRIND] = "callgrind",
	[RTL_REPORT_LCOV] = "lcov",
	[RTL_REPORT_FDATA] = "fdata",
	[RTL_REPORT_FOLDED] = "folded",
	[RTL_REPORT_CHROME] = "chrome",
	[RTL_REPORT_PPROF] = "pprof",
	[RTL_REPORT_SVG] = "svg",
	[RTL_REPORT_CACHEGRIND] = "cachegrind",
};

int rtl_report_format_parse(const char *name)
{
	for (size_t i = 0; name && i < sizeof(format_names) / sizeof(format_names[0]); i++)
		if (!strcmp(name, format_names[i]))
			return (int)i;
	return -RTL_ERR_BAD_OPTION;
}

int rtl_report_write(rtl_profile *p, int format, const rtl_report_options *o, FILE *out)
{
	switch (format) {
	case RTL_REPORT_TEXT: return rtl_report_text(p, o, out);
	case RTL_REPORT_JSON: return rtl_report_json(p, o, out);
	case RTL_REPORT_CALLGRIND: return rtl_report_callgrind(p, o, out);
	case RTL_REPORT_LCOV: return rtl_report_lcov(p, o, out);
	case RTL_REPORT_FDATA: return rtl_report_fdata(p, o, out);
	case RTL_REPORT_FOLDED: return rtl_report_folded(p, o, out);
	case RTL_REPORT_CHROME: return rtl_report_chrome(p, o, out);
	case RTL_REPORT_PPROF: return rtl_report_pprof(p, o, out);
	case RTL_REPORT_SVG: return rtl_report_svg(p, o, out);
	case RTL_REPORT_CACHEGRIND: return rtl_report_cachegrind(p, o, out);
	}
	return -RTL_ERR_BAD_OPTION;
}

static char *dup_or_null(const char *s)
{
	return s ? strdup(s) : NULL;
}

static int add_row(const rtl_profile_function *f, void *user)
{
	struct rpt_rows *rows = user;
	rtl_profile_function *r;

	if (rows->limit && rows->n >= rows->limit)
		return 1;
	if (rtl_grow(&rows->fn, &rows->cap, rows->n + 1, sizeof(*rows->fn)))
		return -ENOMEM;
	r = &rows->fn[rows->n];
	*r = *f;
	r->module = dup_or_null(f->module);
	r->name = rows->demangle ? rtl_demangle(f->name) : NULL;
	if (!r->name)
		r->name = dup_or_null(f->name);
	r->reason = dup_or_null(f->reason);
	rows->n++;
	if ((f->module && !r->module) || (f->name && !r->name) || (f->reason && !r->reason))
		return -ENOMEM;
	return 0;
}

int rpt_rows_load(rtl_profile *p, int all, int by_addr, struct rpt_rows *rows)
{
	int err = by_addr ? rtl_profile_foreach_function_by_addr(p, all, add_row, rows)
			  : rtl_profile_foreach_function(p, all, add_row, rows);

	return err == 1 ? 0 : err;    /* 1: the limit was reached */
}

void rpt_rows_free(struct rpt_rows *rows)
{
	for (size_t i = 0; i < rows->n; i++) {
		free((char *)rows->fn[i].module);
		free((char *)rows->fn[i].name);
		free((char *)rows->fn[i].reason);
	}
	free(rows->fn);
	memset(rows, 0, sizeof(*rows));
}

size_t rpt_rows_lower_bound(const struct rpt_rows *rows, int64_t module, uint64_t addr)
{
	size_t lo = 0, hi = rows->n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		const rtl_profile_function *f = &rows->fn[mid];

		if (f->module_id < module || (f->module_id == module && f->addr < addr))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static int by_id(const void *a, const void *b)
{
	const rtl_profile_function *x = a, *y = b;

	return (x->id > y->id) - (x->id < y->id);
}

void rpt_rows_sort_by_id(struct rpt_rows *rows)
{
	if (rows->n)
		qsort(rows->fn, rows->n, sizeof(*rows->fn), by_id);
}

const rtl_profile_function *rpt_rows_by_id(const struct rpt_rows *rows, int64_t id)
{
	rtl_profile_function key = { .id = id };

	return rows->n ? bsearch(&key, rows->fn, rows->n, sizeof(*rows->fn), by_id) : NULL;
}

const char *rpt_basename(const char *path)
{
	const char *slash = path ? strrchr(path, '/') : NULL;

	return slash ? slash + 1 : path ? path : "?";
}

const char *rpt_name(const rtl_profile_function *f, char buf[32])
{
	if (f->name && *f->name)
		return f->name;
	snprintf(buf, 32, "sub_%" PRIx64, f->addr);
	return buf;
}

int rpt_out_status(FILE *out)
{
	return fflush(out) || ferror(out) ? -EIO : 0;
}
