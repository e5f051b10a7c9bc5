/* Source text for line coverage as gcov counts it (labels.h). */
#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "report/labels.h"
#include "util/array.h"

void rpt_text_free(struct rpt_text *t)
{
	free(t->path);
	free(t->text);
	free(t->line);
	memset(t, 0, sizeof(*t));
}

int rpt_text_load(struct rpt_text *t, const char *path)
{
	FILE *f;
	size_t size = 0, cap = 0, caplines = 0;

	if (t->path && !strcmp(t->path, path))
		return t->err;
	rpt_text_free(t);
	if (!(t->path = strdup(path)))
		return -ENOMEM;
	if (!(f = fopen(path, "r")))
		return t->err = -errno;
	for (;;) {
		if (rtl_grow(&t->text, &cap, size + 4096, 1)) {
			fclose(f);
			return t->err = -ENOMEM;
		}
		size_t got = fread(t->text + size, 1, cap - size, f);
		if (!got)
			break;
		size += got;
	}
	fclose(f);
	/* line[i]: the start of line i + 1; line[nlines]: the end */
	for (size_t i = 0; i <= size; i++)
		if (i == 0 || i == size || t->text[i - 1] == '\n') {
			if (rtl_grow(&t->line, &caplines, t->nlines + 1, sizeof(*t->line)))
				return t->err = -ENOMEM;
			t->line[t->nlines++] = t->text + i;
		}
	t->nlines--;
	return 0;
}

const char *rpt_text_line(const struct rpt_text *t, uint32_t n, size_t *len)
{
	if (t->err || !t->line || n < 1 || n > t->nlines)
		return NULL;
	*len = (size_t)(t->line[n] - t->line[n - 1]);
	return t->line[n - 1];
}

static bool ident_char(char c)
{
	return isalnum((unsigned char)c) || c == '_';
}

/* Whether the line S (LEN bytes) begins, after spaces and closing braces,
 * with the keyword WORD. */
static bool begins_with(const char *s, size_t len, const char *word)
{
	size_t n = strlen(word), i = 0;

	while (i < len && (isspace((unsigned char)s[i]) || s[i] == '}'))
		i++;
	return len - i >= n && !memcmp(s + i, word, n) && (len - i == n || !ident_char(s[i + n]));
}

bool rpt_case_line(const char *s, size_t len)
{
	return begins_with(s, len, "case") || begins_with(s, len, "default");
}

bool rpt_switch_line(const char *s, size_t len)
{
	return begins_with(s, len, "switch");
}

bool rpt_jump_line(const char *s, size_t len)
{
	return begins_with(s, len, "break") || begins_with(s, len, "continue") || begins_with(s, len, "goto") ||
	       begins_with(s, len, "return");
}

bool rpt_va_end_line(const char *s, size_t len)
{
	return begins_with(s, len, "va_end");
}
