/* Label lines of a source file, for line coverage as gcov counts it: a
 * line that holds only labels ("case 3:", "default:", "retry:") has no
 * code of its own, so DWARF gives it no row, but gcov counts it with the
 * block it starts, which is the code of the next line that has any. Of
 * several labels in a row, gcov keeps what GCC keeps (cleanup_dead_labels):
 * every named label, and the first case label only when no named label is
 * among them. */
#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "report/labels.h"

/* [S, *END) with spaces trimmed at both ends. */
static const char *trim(const char *s, const char **end)
{
	while (s < *end && isspace((unsigned char)*s))
		s++;
	while (*end > s && isspace((unsigned char)(*end)[-1]))
		(*end)--;
	return s;
}

static bool starts(const char *s, const char *end, const char *word)
{
	size_t n = strlen(word);
	return (size_t)(end - s) >= n && !memcmp(s, word, n);
}

/* Blank, or only a comment (or the inside or end of one). */
static bool blank_line(const char *s, const char *end)
{
	s = trim(s, &end);
	return s == end || starts(s, end, "//") || starts(s, end, "/*") || *s == '*' ||
	       (end - s >= 2 && end[-2] == '*' && end[-1] == '/') || (end - s == 1 && *s == '{');
}

static bool ident_char(char c)
{
	return isalnum((unsigned char)c) || c == '_';
}

enum label_kind { NOT_LABEL, CASE_LABEL, NAMED_LABEL };

/* Only labels: "case ...:", "default:" or "name:", then perhaps "{" and a
 * comment. C++'s access specifiers are not labels. */
static enum label_kind label_line(const char *s, const char *end)
{
	const char *c;

	for (c = s; c + 1 < end; c++)     /* a trailing // comment */
		if (c[0] == '/' && c[1] == '/') {
			end = c;
			break;
		}
	s = trim(s, &end);
	if (end - s >= 2 && end[-2] == '*' && end[-1] == '/')
		for (c = end - 2; c > s; c--)
			if (c[-1] == '/' && c[0] == '*') {
				end = c - 1;
				break;
			}
	s = trim(s, &end);
	if (end > s && end[-1] == '{') {
		end--;
		s = trim(s, &end);
	}
	if (end - s < 2 || end[-1] != ':' || end[-2] == ':')
		return NOT_LABEL;
	if ((starts(s, end, "case") && end - s > 4 && !ident_char(s[4])) ||
	    (starts(s, end, "default") && !ident_char(s[7])))
		return CASE_LABEL;
	if (starts(s, end, "public") || starts(s, end, "private") || starts(s, end, "protected"))
		return NOT_LABEL;
	for (c = s; c < end - 1 && ident_char(*c); c++)
		;
	if (c == s || isdigit((unsigned char)*s))
		return NOT_LABEL;
	while (c < end - 1 && isspace((unsigned char)*c))
		c++;
	return c == end - 1 ? NAMED_LABEL : NOT_LABEL;
}

int rpt_label_lines(const char *path, const uint32_t *code, size_t n,
		    int (*fn)(uint32_t label, uint32_t code, void *user), void *user)
{
	FILE *f = fopen(path, "r");
	char *text = NULL;
	size_t size = 0, cap = 0, nlines = 0, caplines = 0;
	const char **line = NULL;   /* line[i]: start of line i + 1; line[nlines]: the end */
	int err = 0;

	if (!f)
		return -errno;
	for (;;) {
		if (size + 4096 > cap) {
			char *t = realloc(text, cap = cap * 2 + 65536);
			if (!t) {
				err = -ENOMEM;
				goto out;
			}
			text = t;
		}
		size_t got = fread(text + size, 1, cap - size, f);
		if (!got)
			break;
		size += got;
	}
	for (size_t i = 0; i <= size; i++)
		if (i == 0 || i == size || text[i - 1] == '\n') {
			if (nlines + 1 >= caplines) {
				const char **l = realloc(line, (caplines = caplines * 2 + 1024) * sizeof(*l));
				if (!l) {
					err = -ENOMEM;
					goto out;
				}
				line = l;
			}
			line[nlines++] = text + i;
		}
	nlines--;                   /* the last entry is the end */
	for (size_t k = 0; k < n && !err; k++) {
		uint32_t first_case = 0, named = 0;

		/* upwards from the line before CODE[k]; a code line stops it */
		for (uint32_t l = code[k] - 1; l >= 1 && l <= nlines && !err; l--) {
			const char *s = line[l - 1], *e = line[l];
			enum label_kind kind;
			bool coded = false;

			for (size_t j = k; j-- > 0 && code[j] >= l;)
				coded |= code[j] == l;
			if (coded)
				break;
			if ((kind = label_line(s, e)) == NAMED_LABEL) {
				named++;
				err = fn(l, code[k], user);
			} else if (kind == CASE_LABEL) {
				first_case = l;
			} else if (!blank_line(s, e)) {
				break;
			}
		}
		if (first_case && !named && !err)
			err = fn(first_case, code[k], user);
	}
out:
	fclose(f);
	free(text);
	free(line);
	return err;
}
