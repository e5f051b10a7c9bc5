/* Reports and exporters over a profile (include/reticle/profile.h).
 *
 * Each writer reads the profile P (owned by the caller, not modified) and
 * writes one document to OUT (owned by the caller, not closed); O may be
 * NULL for the defaults (a zeroed rtl_report_options). They return
 * 0, -EIO when OUT fails, or the store's error. Nothing is printed
 * elsewhere. */
#ifndef RETICLE_REPORT_H
#define RETICLE_REPORT_H

#include <reticle/api.h>

#include <stdio.h>
#include <reticle/profile.h>

enum rtl_report_format {
	RTL_REPORT_TEXT,
	RTL_REPORT_JSON,
	RTL_REPORT_CALLGRIND,
	RTL_REPORT_LCOV,
	RTL_REPORT_FDATA,
	RTL_REPORT_FOLDED,
	RTL_REPORT_CHROME,
	RTL_REPORT_PPROF,
	RTL_REPORT_SVG,
	RTL_REPORT_CACHEGRIND,
};

/* Zero-initialize, then set what you need; new fields keep 0 as default. */
typedef struct rtl_report_options {
	unsigned long top;  /* at most this many function rows; 0: no limit */
	int all;            /* also functions without counts (never executed,
			     * not instrumented) */
	int no_demangle;    /* text and callgrind: keep C++/Rust names mangled */
	const char *module; /* fdata: the module written (path or basename);
			     * NULL: the program's */
	int inlined;        /* text: also the Ir of inlined code by the inlined
			     * function (DWARF's inlined calls) */
	int samples;        /* folded, svg, chrome, pprof: draw the sampled
			     * stacks (sample collector), not calltime's tree;
			     * they are drawn anyway when there is no tree */
} rtl_report_options;

/* The format named NAME ("text", "json", "callgrind", "lcov", "fdata",
 * "folded", "chrome", "pprof", "svg", "cachegrind") or -RTL_ERR_BAD_OPTION. */
RTL_API int rtl_report_format_parse(const char *name);

RTL_API int rtl_report_write(rtl_profile *p, int format, const rtl_report_options *o, FILE *out);

/* A header (meta facts, totals) and a table of functions by count. */
RTL_API int rtl_report_text(rtl_profile *p, const rtl_report_options *o, FILE *out);
/* One JSON object: meta, totals, modules, functions, call sites. */
RTL_API int rtl_report_json(rtl_profile *p, const rtl_report_options *o, FILE *out);
/* Callgrind format for callgrind_annotate and KCachegrind: events Ir
 * and/or Calls, exact self costs and call counts, gprof-style estimated
 * inclusive costs on calls= lines (see docs/report.md). O->top is ignored:
 * a call graph needs every function. */
RTL_API int rtl_report_callgrind(rtl_profile *p, const rtl_report_options *o, FILE *out);

/* lcov tracefile (genhtml, lcov --summary): per source file on disk, the
 * lines DWARF gives code and their executions (from blocks: bbcount,
 * cover), the functions that start there and their calls, and the
 * conditional branches (edges). O is ignored. -ENODATA when P has no
 * block counts. */
RTL_API int rtl_report_lcov(rtl_profile *p, const rtl_report_options *o, FILE *out);

/* BOLT's profile (llvm-bolt -data=FILE) of one module, O->module or the
 * program: edge counts of its conditional branches (edges), jumps and
 * fall-throughs of its blocks (bbcount), calls between its functions.
 * -ENOENT when the profile has no such module, -ENODATA when it has no
 * counts to write, -ENOTSUP when its binary has no function symbols (a
 * stripped one: BOLT reads functions by their names). */
RTL_API int rtl_report_fdata(rtl_profile *p, const rtl_report_options *o, FILE *out);

/* The calling-context tree (calltime), or the tree of sampled stacks
 * (sample collector: O->samples, or a profile without calltime's), for
 * the tools that draw it; each returns -ENODATA when P has neither. With
 * samples, "calls" are samples and times are the samples' periods.
 * Folded stacks (flame graphs): "f1;f2;...;fn N" per call path, its
 * exclusive nanoseconds (calltime's tree) or samples (sampled stacks),
 * threads and images merged. */
RTL_API int rtl_report_folded(rtl_profile *p, const rtl_report_options *o, FILE *out);
/* Chrome trace event JSON (Perfetto): per process and thread, one complete
 * event per call path, as long as its inclusive time, nested under its
 * caller's: the tree drawn, not a timeline of the calls. */
RTL_API int rtl_report_chrome(rtl_profile *p, const rtl_report_options *o, FILE *out);
/* pprof's profile.proto (uncompressed): a sample per call path with its
 * calls and exclusive nanoseconds. */
RTL_API int rtl_report_pprof(rtl_profile *p, const rtl_report_options *o, FILE *out);
/* A flame graph (SVG, for a browser): a box per call path as wide as its
 * exclusive time and its descendants', threads and images merged. */
RTL_API int rtl_report_svg(rtl_profile *p, const rtl_report_options *o, FILE *out);
/* Cachegrind's format (cg_annotate), from the memtrace collector: data
 * reads, writes and L1D misses per source line (events Dr D1mr Dw D1mw).
 * -ENODATA for a profile without memtrace's measures. */
RTL_API int rtl_report_cachegrind(rtl_profile *p, const rtl_report_options *o, FILE *out);

/* A and B compared function by function (functions matched by their
 * module's file name and their name): each one's Ir (or calls, when the
 * two do not both have instructions) in both, the difference, the ratio
 * and Ir per call, by the size of the difference; O->top rows (0: all).
 * -ENODATA when the two have no count in common. */
RTL_API int rtl_report_diff(rtl_profile *a, rtl_profile *b, const rtl_report_options *o, FILE *out);

/* The process tree: every process image of the session under the one that
 * forked it or that it replaced by exec, with pid, exit status, wall time
 * and counts. */
RTL_API int rtl_report_tree(rtl_profile *p, FILE *out);

/* Every function named FUNCTION (its symbol's name, or as demangled), in
 * every module: the source lines of its executed instructions with their Ir
 * (bbcount), from DWARF and the source files, or, where DWARF does not
 * place them or DISASM is set, its instructions with their counts. Returns
 * 0, -ENOENT when no function has that name, -EIO or the store's error. */
RTL_API int rtl_report_annotate(rtl_profile *p, const char *function, int disasm, FILE *out);

#endif
