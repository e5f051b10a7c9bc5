/* memcpy first, then enough of libc to fill a small code cache, then
 * mempcpy (which goes on inside memcpy's first instruction) in a loop. */
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <wchar.h>

static int cmp(const void *a, const void *b) { return *(const int *)a - *(const int *)b; }

int main(int argc, char **argv)
{
	static char a[4096], b[4096];
	volatile size_t n = 64 + (size_t)argc;
	memset(a, 'x', sizeof(a));
	memcpy(b, a, n);
	double s = 0;
	int v[64];
	char buf[256];
	wchar_t w[64];
	for (int i = 0; i < 64; i++)
		v[i] = (i * 7919) % 64;
	qsort(v, 64, sizeof(*v), cmp);
	for (int i = 0; i < 20; i++) {
		snprintf(buf, sizeof(buf), "%d %g %s %x", i, i * 1.5, argv[0], i);
		s += strtod(buf + 2, NULL) + atoi(buf) + strtol(buf, NULL, 16) + (double)strlen(buf);
		s += (double)mbstowcs(w, buf, 64) + (double)wcslen(w) + (strstr(buf, "1") != NULL);
		struct tm tm;
		time_t t = 86400 * i;
		gmtime_r(&t, &tm);
		s += (double)strftime(buf, sizeof(buf), "%Y-%m-%d %H", &tm);
		s += (double)(strncmp(buf, "1970", 4) + strcasecmp(buf, "X") + (strchr(buf, '-') != NULL));
	}
	size_t total = 0;
	for (int i = 0; i < 1000000; i++) {
		char *e = mempcpy(b, a, 100 + (size_t)(i % 200));
		total += (size_t)(e - b);
		memcpy(a + 1, b, n);
	}
	printf("%zu %.1f %d\n", total, s, v[63]);
	return 0;
}
