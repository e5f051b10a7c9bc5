/* stdio input: counts lines, words and bytes of stdin, sorts its lines
 * (qsort, malloc'd copies: large inputs reach mmap), prints the first and
 * last, and the size of a file named in argv[1] via fopen/fseek/ftell. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(int argc, char **argv)
{
	char buf[4096], **lines = NULL;
	long nlines = 0, words = 0, bytes = 0, cap = 0;

	while (fgets(buf, sizeof buf, stdin)) {
		int inword = 0;
		bytes += strlen(buf);
		for (char *p = buf; *p; p++) {
			if (*p == ' ' || *p == '\n' || *p == '\t')
				inword = 0;
			else if (!inword)
				inword = 1, words++;
		}
		if (nlines == cap) {
			cap = cap ? cap * 2 : 64;
			lines = realloc(lines, cap * sizeof *lines);
		}
		lines[nlines++] = strdup(buf);
	}
	qsort(lines, nlines, sizeof *lines, cmp);
	printf("%ld lines %ld words %ld bytes\n", nlines, words, bytes);
	if (nlines)
		printf("first: %slast: %s", lines[0], lines[nlines - 1]);
	if (argc > 1) {
		FILE *f = fopen(argv[1], "rb");
		if (!f) {
			perror(argv[1]);
			return 4;
		}
		fseek(f, 0, SEEK_END);
		printf("%s: %ld bytes\n", argv[1], ftell(f));
		fclose(f);
	}
	return nlines % 7;
}
