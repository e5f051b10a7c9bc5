/* Internal to src/report/: label lines of a source file (labels.c). */
#ifndef RETICLE_REPORT_LABELS_H
#define RETICLE_REPORT_LABELS_H

#include <stddef.h>
#include <stdint.h>

/* Calls FN(label, code) for every line of the file at PATH that holds only
 * labels, above a line CODE of the sorted CODE[0..N) with only blank or
 * comment lines between. Returns 0, -errno when the file cannot be read,
 * or FN's first non-zero value. */
int rpt_label_lines(const char *path, const uint32_t *code, size_t n,
		    int (*fn)(uint32_t label, uint32_t code, void *user), void *user);

#endif
