/* Line coverage against gcov (tests/run/cover_gcov.py): built -O0
 * --coverage for gcov and -O0 -g for reticle; the executed lines of both
 * must be the same set. Labels, stacked cases, a label before a brace,
 * goto, loops of every kind, multi-line statements, a longjmp, a signal
 * handler, functions that never run and an exit from a nested call; a
 * va_end after an if/else whose first arm never runs, case labels above a
 * "break;" with no code, a struct returned in memory. */
#include <setjmp.h>
#include <stdarg.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static jmp_buf env;
static volatile sig_atomic_t got;

struct shape {
	int kind;
	double size;
};

static void on_signal(int sig)
{
	got = sig;
}

static int classify(int c)
{
	int r = 0;

	switch (c % 9) {
	case 0:
	case 1:
		r = 1;
		break;
	case 2:
		r = 2;
		/* falls through */
	case 3: {
		r += 3;
		break;
	}
	case 4:
	retry:
		r += 4;
		if (r < 10)
			goto retry;
		break;
	case 5: r = 5; break;
	case 6:
		// a comment between
		r = 6;
		break;
	default:
		r = -1;
	}
	return r;
}

static double area(const struct shape *s)
{
	if (s->kind == 0)
		return s->size * s->size;
	else if (s->kind == 1)
		return 3.14159 * s->size * s->size;
	else
		return 0.5 * s->size
		       * s->size;
}

static long loops(int n)
{
	long sum = 0;
	int i = 0;

	for (int j = 0; j < n; j++)
		sum += j;
	while (i < n)
		i += 3;
	do {
		sum -= i;
		i--;
	} while (i > n / 2);
	for (;;) {
		if (++i > n)
			break;
		if (i & 1)
			continue;
		sum += i;
	}
	sum += n > 5 ?
		1 :
		2;
	return sum;
}

static void never_called(void)
{
	puts("never");
}

static int unused_with_switch(int x)
{
	switch (x) {
	case 1:
		return 10;
	default:
		return 0;
	}
}

static void jumper(int depth)
{
	if (depth > 0)
		jumper(depth - 1);
	else
		longjmp(env, 7);
}

static void finish(int code)
{
	fflush(stdout);
	exit(code);
}

static int loud, quiet_ok;

static int warn(const char *fmt, ...)
{
	va_list args;
	int n = 0;
	va_start(args, fmt);
	if (loud)
	{
		n = vsnprintf(NULL, 0, fmt, args);
		loud++;
	}
	else
		if (quiet_ok)
		{
			n = vsnprintf(NULL, 0, fmt, args) + 1;
		}
	va_end(args);
	return n;
}

static char said[64];

static void say(const char *fmt, ...)
{
	va_list args;
	va_start(args, fmt);
	if (loud)
	{
		vsnprintf(said, sizeof(said), fmt, args);
		loud++;
	}
	else
		if (quiet_ok)
		{
			vsnprintf(said, sizeof(said), fmt, args);
		}
	va_end(args);
}

static int parse_mode(const char *mode)
{
	int m = 0, cloexec = 0, excl = 0;
	while (*mode) {
		switch (*mode) {
		case 'r':
			m = 1;
			break;
		case 'b':       /* ignored */
			break;
		case 'e':
			cloexec = 1;
			break;
		case 'x':
			excl = 1;
			break;
		default:        /* ignored too */
			;
		}
		mode++;
	}
	return m + cloexec + excl;
}

struct triple { void *a; size_t na; void *b; size_t nb; int d; };

static struct triple make_triple(size_t n)
{
	struct triple t;
	t.na = n;
	t.a = NULL;
	t.nb = n * 2;
	t.b = NULL;
	t.d = 3;
	return t;
}

int main(int argc, char **argv)
{
	struct shape shapes[3] = { { 0, 2.0 }, { 1, 1.0 }, { 2, 3.0 } };
	volatile double total = 0;
	long sum = 0;
	int n = argc > 1 ? atoi(argv[1]) : 40;

	for (int i = 0; i < n; i++)
		sum += classify(i);
	for (int i = 0; i < 3; i++)
		total += area(&shapes[i]);
	sum += loops(n);
	if (setjmp(env) == 0)
		jumper(3);
	else
		sum += 1;
	signal(SIGUSR1, on_signal);
	raise(SIGUSR1);
	if (argc > 5) {
		never_called();
		sum += unused_with_switch(argc);
	}
	sum += warn("%d", 1);
	quiet_ok = 1;
	sum += warn("%d", 2);
	say("%d", 3);
	sum += said[0];
	sum += parse_mode("rb") + parse_mode("wb9");
	struct triple t = make_triple(100);
	sum += (long)(t.na + t.nb) + t.d;
	printf("%ld %.3f %d\n", sum, total, (int)got);
	finish(0);
	return 1;
}
