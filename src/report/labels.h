/* Internal to src/report/: the source text that line coverage reads
 * (labels.c). gcov counts a few lines that have no code of their own, so
 * no DWARF row: case labels ("case 3:", "default:"), counted with the block
 * they start, and va_end(), a call GCC drops only after gcov has seen it.
 * The lcov export finds them in the text, between a function's lines with
 * code. */
#ifndef RETICLE_REPORT_LABELS_H
#define RETICLE_REPORT_LABELS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One file's lines; zero it, free it with rpt_text_free. */
struct rpt_text {
	char *path;
	char *text;
	const char **line;
	size_t nlines;
	int err;              /* the file could not be read */
};

/* Loads PATH into T unless T holds it already: 0, or -errno (kept: a
 * second load of the same file fails alike without reading). */
int rpt_text_load(struct rpt_text *t, const char *path);
/* Line N (from 1) and its length, or NULL. */
const char *rpt_text_line(const struct rpt_text *t, uint32_t n, size_t *len);
void rpt_text_free(struct rpt_text *t);

/* Whether a line begins (after spaces and closing braces) with a case
 * label, with "switch", with "va_end". */
bool rpt_case_line(const char *s, size_t len);
bool rpt_switch_line(const char *s, size_t len);
bool rpt_va_end_line(const char *s, size_t len);
/* Whether a line begins with break, continue, goto or return. */
bool rpt_jump_line(const char *s, size_t len);

#endif
