/* Internal to src/report/: function rows copied out of the store (the
 * store's strings live only during a callback) and small formatting
 * helpers the exporters share. */
#ifndef RETICLE_REPORT_PRIV_H
#define RETICLE_REPORT_PRIV_H

#include <stdio.h>
#include <reticle/profile.h>
#include <reticle/report.h>
#include "util/json.h"

/* What a NULL options pointer means: every counted row. */
extern const rtl_report_options rpt_default_options;

/* A function row with strings owned by the row list. */
struct rpt_rows {
	rtl_profile_function *fn;
	size_t n, cap;
	unsigned long limit;  /* stop after this many rows; 0: no limit */
	int demangle;         /* names as c++filt prints them (rtl_demangle) */
};

/* Loads function rows: by count (the report's order) or by module and
 * address. ROWS must be zeroed (limit may be set) and freed with
 * rpt_rows_free(). */
int rpt_rows_load(rtl_profile *p, int all, int by_addr, struct rpt_rows *rows);
void rpt_rows_free(struct rpt_rows *rows);
/* Rows loaded by address: the index of the first row of MODULE (an id) at
 * ADDR or after it (ROWS->n when none). */
size_t rpt_rows_lower_bound(const struct rpt_rows *rows, int64_t module, uint64_t addr);
/* Rows sorted by id (rpt_rows_sort_by_id), then the row of profile id ID,
 * or NULL. */
void rpt_rows_sort_by_id(struct rpt_rows *rows);
const rtl_profile_function *rpt_rows_by_id(const struct rpt_rows *rows, int64_t id);

/* The last component of PATH. */
const char *rpt_basename(const char *path);

/* F's name, or "sub_<hex addr>" in BUF for unnamed code (the binary
 * analyzer's spelling). */
const char *rpt_name(const rtl_profile_function *f, char buf[32]);


/* The time table (times.c) when P has function times: *SHOWN set then. */
int rpt_times(rtl_profile *p, const rtl_report_options *o, FILE *out, int *shown);
/* The loops collector's metric, and its table (loops.c); the metric
 * tables leave it to that one. */
#define RPT_LOOP_METRIC "loop_iterations"
/* bbcount's iterations of the rep string instructions of a block (the
 * metric's site: the block's address), which valgrind counts as
 * instructions executed */
#define RPT_REP_METRIC "rep_iterations"
/* The rows of one metric (metrics.c): loops' back-edges, rep iterations
 * by block. */
struct rpt_site_value { int64_t function; uint64_t site; double value; };
struct rpt_site_values { struct rpt_site_value *v; size_t n, cap; const char *name; };
/* Metric NAME's rows, by function then site. */
int rpt_site_values_load(rtl_profile *p, const char *name, struct rpt_site_values *r);
/* FUNCTION's value at SITE (0 if none). */
double rpt_site_value_at(const struct rpt_site_values *r, int64_t function, uint64_t site);
void rpt_site_values_free(struct rpt_site_values *r);
int rpt_loops(rtl_profile *p, const rtl_report_options *o, FILE *out);
/* The load-imbalance table of a merged profile with ranks (ranks.c). */
int rpt_ranks(rtl_profile *p, const rtl_report_options *o, FILE *out);
/* The hottest call arcs, when the profile has call sites (arcs.c). */
int rpt_arcs(rtl_profile *p, const rtl_report_options *o, FILE *out);
/* The inlined-code table (inlined.c): Ir by inlined function. */
int rpt_inlined(rtl_profile *p, const rtl_report_options *o, FILE *out);
/* The metric tables (plug-in collectors' own measures), if P has any. */
int rpt_metrics(rtl_profile *p, const rtl_report_options *o, FILE *out);

/* The process tree (report/tree.c): at most LIMIT lines (0: all), with the
 * counts HAVE names; and the one line that describes image ID. */
int rpt_tree(rtl_profile *p, unsigned have, unsigned long limit, FILE *out);
/* The memtrace collector's caches as a table (caches.c); nothing without them. */
int rpt_caches(rtl_profile *p, FILE *out);
int rpt_process_line(rtl_profile *p, int64_t id, FILE *out);

/* Source places of the profile's modules (source.c): zero it, free it with
 * rpt_sources_free. */
struct rpt_sources {
	struct rpt_source_module {
		char *path;
		struct rtl_binary *bin;    /* NULL: cannot be read */
	} *mod;
	size_t n, cap, last;
};
/* MODULE's binary (opened on first need, without function discovery), or
 * NULL when it cannot be read. */
struct rtl_binary *rpt_sources_binary(struct rpt_sources *s, const char *module);
/* File and line of the instruction at link-time ADDR of MODULE: 0, or
 * non-zero when unknown (no binary, no DWARF). *FILE lives until
 * rpt_sources_free. */
int rpt_source_line(struct rpt_sources *s, const char *module, uint64_t addr,
		    const char **file, int *line);
void rpt_sources_free(struct rpt_sources *s);

/* 0, or -EIO when OUT has failed. */
int rpt_out_status(FILE *out);

#endif
