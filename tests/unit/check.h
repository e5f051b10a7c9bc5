/* Minimal assertion helpers for unit tests: a failed CHECK prints the
 * location and makes the test exit non-zero at the end. */
#ifndef RETICLE_TEST_CHECK_H
#define RETICLE_TEST_CHECK_H
#include <stdio.h>
#include <string.h>

static int check_failures;

#define CHECK(cond) do { if (!(cond)) { \
	fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
	check_failures++; } } while (0)
#define CHECK_EQ(a, b) do { long long _a = (long long)(a), _b = (long long)(b); \
	if (_a != _b) { fprintf(stderr, "%s:%d: CHECK_EQ failed: %s == %lld, %s == %lld\n", \
	__FILE__, __LINE__, #a, _a, #b, _b); check_failures++; } } while (0)
#define CHECK_STR(a, b) do { const char *_a = (a), *_b = (b); \
	if (!_a || !_b || strcmp(_a, _b)) { fprintf(stderr, "%s:%d: CHECK_STR failed: '%s' != '%s'\n", \
	__FILE__, __LINE__, _a ? _a : "(null)", _b ? _b : "(null)"); check_failures++; } } while (0)
#define CHECK_DONE() (check_failures ? (fprintf(stderr, "%d check(s) failed\n", check_failures), 1) : 0)

#endif
