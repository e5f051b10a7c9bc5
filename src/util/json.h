/* JSON text written by the reports and the commands that print JSON. */
#ifndef RETICLE_UTIL_JSON_H
#define RETICLE_UTIL_JSON_H

#include <stdio.h>

/* Length of the valid UTF-8 sequence at S, or 0 (overlong forms and
 * surrogates are invalid too: strict JSON and XML readers reject them). */
int rtl_utf8_len(const unsigned char *s);
/* S (NULL: empty) as a JSON string literal, quotes included; invalid UTF-8
 * becomes U+FFFD (symbol names are bytes, not text). */
void rtl_json_string(FILE *out, const char *s);

#endif
