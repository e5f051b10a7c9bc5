/* JSON text: strings written so that strict readers accept them. */
#include "util/json.h"

int rtl_utf8_len(const unsigned char *s)
{
	int n = s[0] < 0xc2 ? 0 : s[0] < 0xe0 ? 2 : s[0] < 0xf0 ? 3 : s[0] < 0xf5 ? 4 : 0;

	for (int i = 1; i < n; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	if ((s[0] == 0xe0 && s[1] < 0xa0) || (s[0] == 0xed && s[1] > 0x9f) ||
	    (s[0] == 0xf0 && s[1] < 0x90) || (s[0] == 0xf4 && s[1] > 0x8f))
		return 0;
	return n;
}

void rtl_json_string(FILE *out, const char *str)
{
	const unsigned char *s = (const unsigned char *)(str ? str : "");

	fputc('"', out);
	while (*s) {
		int n;

		if (*s == '"' || *s == '\\')
			fprintf(out, "\\%c", *s++);
		else if (*s < 0x20)
			fprintf(out, "\\u%04x", *s++);
		else if (*s < 0x80)
			fputc(*s++, out);
		else if ((n = rtl_utf8_len(s))) {
			fwrite(s, 1, n, out);
			s += n;
		} else {
			fputs("\\ufffd", out);
			s++;
		}
	}
	fputc('"', out);
}
