/* The probe language's parser (docs/probe.md has the grammar):
 *
 *     entry:send_msg /onstack(foo)/ { @t = time(); }
 *     exit:libc.so*:malloc /retval == 0/ { @failed[func] = count(); }
 *
 * A hand-written recursive descent over the text: the language is a few
 * productions, and its messages name the line and column. */
#include <ctype.h>
#include <errno.h>
#include <fnmatch.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <reticle/binary.h>
#include "probe/lang.h"

struct parser {
	const char *s, *p;   /* the text, where we are */
	char *err;
	size_t len;
	bool failed;
	struct probe_prog *prog;
};

static void where(const struct parser *ps, int *line, int *col)
{
	*line = 1;
	*col = 1;
	for (const char *c = ps->s; c < ps->p; c++) {
		if (*c == '\n') {
			++*line;
			*col = 1;
		} else {
			++*col;
		}
	}
}

__attribute__((format(printf, 2, 3))) static int fail(struct parser *ps, const char *fmt, ...)
{
	if (ps->failed)
		return -EINVAL;
	int line, col, n;
	where(ps, &line, &col);
	n = snprintf(ps->err, ps->len, "line %d, column %d: ", line, col);
	va_list ap;
	va_start(ap, fmt);
	if (n >= 0 && (size_t)n < ps->len)
		vsnprintf(ps->err + n, ps->len - (size_t)n, fmt, ap);
	va_end(ap);
	ps->failed = true;
	return -EINVAL;
}

/* What is at the cursor, for a message: a word or one character. */
static const char *found(const struct parser *ps)
{
	static __thread char buf[32];
	if (!*ps->p)
		return "the end";
	size_t n = 0;
	while (ps->p[n] && !isspace((unsigned char)ps->p[n]) && n < 20 && (n == 0 || isalnum((unsigned char)ps->p[n]) ||
									     ps->p[n] == '_'))
		n++;
	snprintf(buf, sizeof(buf), "'%.*s'", (int)(n ? n : 1), ps->p);
	return buf;
}

static void skip_space(struct parser *ps)
{
	for (;;) {
		while (isspace((unsigned char)*ps->p))
			ps->p++;
		if (*ps->p == '#' || (ps->p[0] == '/' && ps->p[1] == '/')) {
			while (*ps->p && *ps->p != '\n')
				ps->p++;
		} else {
			return;
		}
	}
}

static bool accept(struct parser *ps, const char *tok)
{
	skip_space(ps);
	size_t n = strlen(tok);
	if (strncmp(ps->p, tok, n))
		return false;
	/* a word ends where a name would not go on */
	if (isalpha((unsigned char)tok[n - 1]) && (isalnum((unsigned char)ps->p[n]) || ps->p[n] == '_'))
		return false;
	ps->p += n;
	return true;
}

static int expect(struct parser *ps, const char *tok, const char *what)
{
	return accept(ps, tok) ? 0 : fail(ps, "expected %s, found %s", what, found(ps));
}

/* A name: [A-Za-z_][A-Za-z0-9_.]*, malloc'd; NULL if none is here. */
static char *name(struct parser *ps)
{
	skip_space(ps);
	const char *b = ps->p;
	if (!isalpha((unsigned char)*b) && *b != '_')
		return NULL;
	while (isalnum((unsigned char)*ps->p) || *ps->p == '_' || *ps->p == '.')
		ps->p++;
	return strndup(b, (size_t)(ps->p - b));
}

/* A pattern: up to a space or one of STOP. */
static char *pattern(struct parser *ps, const char *stop)
{
	skip_space(ps);
	const char *b = ps->p;
	while (*ps->p && !isspace((unsigned char)*ps->p) && !strchr(stop, *ps->p))
		ps->p++;
	return ps->p > b ? strndup(b, (size_t)(ps->p - b)) : NULL;
}

static void *push(void *arrp, size_t *n, size_t elem)
{
	void **arr = arrp;
	void *a = realloc(*arr, (*n + 1) * elem);
	if (!a)
		return NULL;
	*arr = a;
	void *e = (char *)a + *n * elem;
	memset(e, 0, elem);
	++*n;
	return e;
}

static int point(struct parser *ps, struct probe_clause *c)
{
	bool exit_ = false;
	if (accept(ps, "exit"))
		exit_ = true;
	else if (!accept(ps, "entry"))
		return fail(ps, "expected a probe point (entry:FUNCTION or exit:FUNCTION), found %s", found(ps));
	if (!accept(ps, ":"))
		return fail(ps, "expected ':' after '%s', found %s", exit_ ? "exit" : "entry", found(ps));
	if (isspace((unsigned char)*ps->p))
		return fail(ps, "expected a function name or pattern after ':'");
	char *pat = pattern(ps, ",/{");
	if (!pat)
		return fail(ps, "expected a function name or pattern, found %s", found(ps));
	struct probe_point *pt = push(&c->pts, &c->npts, sizeof(*pt));
	if (!pt) {
		free(pat);
		return -ENOMEM;
	}
	pt->exit = exit_;
	char *colon = probe_module_colon(pat);
	if (colon) {
		*colon = 0;
		pt->module = pat;
		pt->func = strdup(colon + 1);
		if (!*pt->module || !*pt->func || probe_module_colon(pt->func))
			return fail(ps, "a probe point is entry:[MODULE:]FUNCTION");
	} else {
		pt->func = pat;
	}
	return pt->func ? 0 : -ENOMEM;
}

static const struct { const char *name; uint8_t size; bool is_unsigned; } types[] = {
	{ "int8", 1, false }, { "int16", 2, false }, { "int32", 4, false }, { "int64", 8, false },
	{ "uint8", 1, true }, { "uint16", 2, true }, { "uint32", 4, true }, { "uint64", 8, true },
	{ "char", 1, false }, { "short", 2, false }, { "int", 4, false }, { "long", 8, false },
	{ "unsigned", 4, true }, { "bool", 1, true },
};

static int number(struct parser *ps, int64_t *v)
{
	skip_space(ps);
	char *end;
	errno = 0;
	bool neg = *ps->p == '-';
	unsigned long long u = strtoull(ps->p + neg, &end, 0);
	if (end == ps->p + neg || errno ||
	    isalnum((unsigned char)*end) || *end == '_')
		return fail(ps, "expected a number, found %s", found(ps));
	if (neg && u > (unsigned long long)INT64_MAX + 1)
		return fail(ps, "the number is out of 64 bits");
	*v = neg ? (int64_t)(0 - u) : (int64_t)u;
	ps->p = end;
	return 0;
}

static size_t onstack_index(struct probe_prog *prog, const char *pat)
{
	for (size_t i = 0; i < prog->nonstack; i++)
		if (!strcmp(prog->onstack[i], pat))
			return i;
	return SIZE_MAX;
}

/* onstack(PATTERN), after the name. */
static int onstack(struct parser *ps, struct probe_test *t)
{
	struct probe_prog *prog = ps->prog;
	if (expect(ps, "(", "'(' after onstack"))
		return -EINVAL;
	char *pat = pattern(ps, ")");
	if (!pat)
		return fail(ps, "expected a function name or pattern in onstack()");
	if (expect(ps, ")", "')'")) {
		free(pat);
		return -EINVAL;
	}
	size_t i = onstack_index(prog, pat);
	if (i == SIZE_MAX) {
		char **s = realloc(prog->onstack, (prog->nonstack + 1) * sizeof(*s));
		uint32_t *n = s ? realloc(prog->onstack_timer, (prog->nonstack + 1) * sizeof(*n)) : NULL;
		if (s)
			prog->onstack = s;
		if (!n) {
			free(pat);
			return -ENOMEM;
		}
		prog->onstack_timer = n;
		if (prog->next_timer > RTL_MAX_TIMER_ID) {
			free(pat);
			return fail(ps, "more than %d timers (time(), hist(latency), onstack()) in one program",
				    RTL_MAX_TIMER_ID);
		}
		i = prog->nonstack++;
		prog->onstack[i] = pat;
		prog->onstack_timer[i] = prog->next_timer++;
	} else {
		free(pat);
	}
	t->q.operand = RTL_OPND_ONSTACK;
	t->q.size = 8;
	t->q.where = prog->onstack_timer[i];
	t->onstack = i;
	t->q.cmp = RTL_CMP_NE;
	t->q.value = 0;
	return 0;
}

/* [(TYPE)] arg0 ... arg5 | retval | VARIABLE into T; with *ONSTACK set,
 * 'onstack' was read, its parenthesis is the caller's. */
static int operand(struct parser *ps, struct probe_test *t, bool *is_onstack)
{
	*is_onstack = false;
	t->q.size = 8;
	const char *at = ps->p;
	if (accept(ps, "(")) {
		char *ty = name(ps);
		size_t k = 0;
		while (ty && k < sizeof(types) / sizeof(*types) && strcmp(types[k].name, ty))
			k++;
		free(ty);
		if (k == sizeof(types) / sizeof(*types)) {
			ps->p = at + 1;
			return fail(ps, "expected a type (int8 ... int64, uint8 ... uint64, char, short, int, long, "
				    "unsigned), found %s", found(ps));
		}
		t->q.size = types[k].size;
		t->q.is_unsigned = types[k].is_unsigned;
		t->typed = true;
		if (expect(ps, ")", "')' after the type"))
			return -EINVAL;
	}
	skip_space(ps);
	at = ps->p;
	char *id = name(ps);
	if (!id)
		return fail(ps, "expected arg0 ... arg5, retval, onstack(F) or a global variable, found %s", found(ps));
	int err = 0;
	if (!strcmp(id, "onstack")) {
		free(id);
		*is_onstack = true;
		return t->typed ? fail(ps, "onstack() takes no type") : 0;
	}
	if (!strncmp(id, "arg", 3) && id[3] >= '0' && id[3] <= '9' && !id[4]) {
		if (id[3] > '5') {
			ps->p = at;
			err = fail(ps, "%s: only arg0 ... arg5 (the integer argument registers) can be read", id);
		}
		t->q.operand = RTL_OPND_ARG;
		t->q.index = (uint8_t)(id[3] - '0');
		free(id);
	} else if (!strcmp(id, "retval")) {
		t->q.operand = RTL_OPND_RETVAL;
		free(id);
	} else {
		t->q.operand = RTL_OPND_GLOBAL;
		t->symbol = id;
	}
	return err;
}

/* [(TYPE)] OPERAND [CMP NUMBER] | [!] onstack(F) | ! OPERAND */
static int test(struct parser *ps, struct probe_test *t)
{
	bool negate = accept(ps, "!"), is_onstack;
	int err = operand(ps, t, &is_onstack);
	if (!err && is_onstack) {
		err = onstack(ps, t);
		if (!err && negate)
			t->q.cmp = RTL_CMP_EQ;
	}
	if (err || is_onstack)
		return err;
	static const struct { const char *op; uint8_t cmp; } ops[] = {
		{ "==", RTL_CMP_EQ }, { "!=", RTL_CMP_NE }, { "<=", RTL_CMP_LE },
		{ ">=", RTL_CMP_GE }, { "<", RTL_CMP_LT }, { ">", RTL_CMP_GT },
	};
	for (size_t k = 0; k < sizeof(ops) / sizeof(*ops); k++)
		if (accept(ps, ops[k].op)) {
			if (negate)
				return fail(ps, "'!' goes before an operand alone (write '!=' for not equal)");
			t->q.cmp = ops[k].cmp;
			return number(ps, &t->q.value);
		}
	t->q.cmp = negate ? RTL_CMP_EQ : RTL_CMP_NE;   /* alone: whether it is non-zero */
	t->q.value = 0;
	return 0;
}

static int agg_index(struct parser *ps, const char *nm, enum probe_agg_kind kind, enum probe_key key,
		     size_t *out)
{
	struct probe_prog *prog = ps->prog;
	for (size_t i = 0; i < prog->naggs; i++)
		if (!strcmp(prog->aggs[i].name, nm)) {
			if (prog->aggs[i].kind != kind || prog->aggs[i].key != key)
				return fail(ps, "@%s is used as two different aggregations", nm);
			*out = i;
			return 0;
		}
	struct probe_agg *a = push(&prog->aggs, &prog->naggs, sizeof(*a));
	if (!a || !(a->name = strdup(nm)))
		return -ENOMEM;
	a->kind = kind;
	a->key = key;
	*out = prog->naggs - 1;
	return 0;
}

/* A string literal ("...", with \n \t \\ \" escapes) into *OUT. */
static int string_literal(struct parser *ps, char **out)
{
	skip_space(ps);
	if (*ps->p != '"')
		return fail(ps, "expected a string in double quotes, found %s", found(ps));
	size_t n = 0, cap = strlen(ps->p) + 1;
	char *s = malloc(cap);
	if (!s)
		return -ENOMEM;
	for (ps->p++; *ps->p && *ps->p != '"' && *ps->p != '\n'; ps->p++) {
		char ch = *ps->p;
		if (ch == '\\') {
			static const char from[] = "nt\\\"0", to[] = "\n\t\\\"";
			const char *e = ps->p[1] ? strchr(from, ps->p[1]) : NULL;
			if (!e || e - from >= 4) {
				free(s);
				ps->p++;
				return fail(ps, "unknown escape in a string (\\n, \\t, \\\\ and \\\" are known)");
			}
			ch = to[e - from];
			ps->p++;
		}
		s[n++] = ch;
	}
	if (*ps->p != '"') {
		free(s);
		return fail(ps, "the string has no closing '\"' on its line");
	}
	ps->p++;
	s[n] = 0;
	*out = s;
	return 0;
}

/* The conversions of printf() format FMT, in CONV (at most MAX): d i u x X
 * o c p take a number, s a string; flags, width, precision and a length
 * modifier are allowed. -1 when one is not supported. */
static int conversions(const char *fmt, char *conv, int max)
{
	int n = 0;
	for (const char *f = fmt; *f; f++) {
		if (*f != '%')
			continue;
		if (*++f == '%')
			continue;
		f += strspn(f, "-+ #0");
		f += strspn(f, "0123456789");
		if (*f == '.')
			f += 1 + strspn(f + 1, "0123456789");
		f += strspn(f, "hljzt");
		if (!*f || !strchr("diuxXocps", *f) || n == max)
			return -1;
		conv[n++] = *f;
	}
	return n;
}

/* printf("FORMAT", ARG, ...): ARG is func, tid, pid, str(OPERAND) or an
 * OPERAND (arg0 ... arg5, retval, with a cast). */
static int printf_action(struct parser *ps, struct probe_clause *c)
{
	struct probe_action a = { .agg = SIZE_MAX };
	char conv[PROBE_MAX_FMT_ARGS];
	int err = expect(ps, "(", "'(' after printf");
	if (!err)
		err = string_literal(ps, &a.fmt);
	int nconv = err ? 0 : conversions(a.fmt, conv, PROBE_MAX_FMT_ARGS);
	if (!err && nconv < 0)
		err = fail(ps, "the format has a conversion printf() does not take here (d i u x X o c p s, at most %d)",
			   PROBE_MAX_FMT_ARGS);
	while (!err && accept(ps, ",")) {
		if (a.nfargs == PROBE_MAX_FMT_ARGS) {
			err = fail(ps, "more than %d printf() arguments", PROBE_MAX_FMT_ARGS);
			break;
		}
		size_t i = a.nfargs++;
		bool is_onstack, str = accept(ps, "str");
		if (str)
			err = expect(ps, "(", "'(' after str");
		if (!err && !str && accept(ps, "func"))
			a.fkind[i] = PROBE_FMT_FUNC;
		else if (!err && !str && accept(ps, "tid"))
			a.fkind[i] = PROBE_FMT_TID;
		else if (!err && !str && accept(ps, "pid"))
			a.fkind[i] = PROBE_FMT_PID;
		else if (!err && !(err = operand(ps, &a.fargs[i], &is_onstack))) {
			a.fkind[i] = str ? PROBE_FMT_STR : PROBE_FMT_VALUE;
			if (is_onstack || a.fargs[i].q.operand == RTL_OPND_GLOBAL)
				err = fail(ps, "printf() reads func, tid, pid, arg0 ... arg5, retval and str() of them");
			for (size_t k = 0; k < c->npts && !err && a.fargs[i].q.operand == RTL_OPND_RETVAL; k++)
				if (!c->pts[k].exit)
					err = fail(ps, "retval is read in exit: clauses only");
		}
		if (!err && str)
			err = expect(ps, ")", "')' after str's operand");
		if (!err && (int)i < nconv && (conv[i] == 's') != (a.fkind[i] == PROBE_FMT_STR ||
							 a.fkind[i] == PROBE_FMT_FUNC))
			err = fail(ps, "printf() argument %zu does not fit %%%c (%%s takes str() or func)", i + 1, conv[i]);
	}
	if (!err && (int)a.nfargs != nconv)
		err = fail(ps, "the format has %d conversions and printf() %zu arguments", nconv, a.nfargs);
	if (!err)
		err = expect(ps, ")", "')' or ','");
	if (!err && ps->prog->next_id > RTL_MAX_SNIPPET_ID)
		err = fail(ps, "more than %d counters in one program", RTL_MAX_SNIPPET_ID - RTL_MAX_TIMER_ID);
	struct probe_action *p = err ? NULL : push(&c->acts, &c->nacts, sizeof(*p));
	if (!p) {
		for (size_t i = 0; i < a.nfargs; i++)
			free(a.fargs[i].symbol);
		free(a.fmt);
		return err ? err : -ENOMEM;
	}
	a.id = ps->prog->next_id++;
	*p = a;
	return 0;
}

/* @NAME [ '[' func | OPERAND ']' ] = count() | time() | hist(...), or printf(...) */
static int action(struct parser *ps, struct probe_clause *c)
{
	if (accept(ps, "printf"))
		return printf_action(ps, c);
	if (!accept(ps, "@"))
		return fail(ps, "expected an aggregation (@name = count() or @name = time()), found %s", found(ps));
	char *nm = name(ps);
	if (!nm)
		return fail(ps, "expected a name after '@'");
	enum probe_key key = PROBE_KEY_NONE;
	struct probe_test kt = { 0 };
	int err = 0;
	if (accept(ps, "[")) {
		bool is_onstack;
		if (accept(ps, "func")) {
			key = PROBE_KEY_FUNC;
		} else if (!(err = operand(ps, &kt, &is_onstack))) {
			key = PROBE_KEY_VALUE;
			if (is_onstack)
				err = fail(ps, "onstack() is no key: a key is func, arg0 ... arg5, retval or a variable");
			for (size_t i = 0; i < c->npts && !err && kt.q.operand == RTL_OPND_RETVAL; i++)
				if (!c->pts[i].exit)
					err = fail(ps, "retval is read in exit: clauses only");
		}
		if (!err)
			err = expect(ps, "]", "']'");
	}
	if (!err)
		err = expect(ps, "=", "'='");
	enum probe_agg_kind kind = PROBE_COUNT;
	bool latency = false;
	if (!err) {
		if (accept(ps, "count"))
			kind = PROBE_COUNT;
		else if (accept(ps, "time"))
			kind = PROBE_TIME;
		else if (accept(ps, "hist"))
			kind = PROBE_HIST;
		else
			err = fail(ps, "expected count(), time() or hist(), found %s", found(ps));
	}
	if (!err)
		err = expect(ps, "(", "'('");
	if (!err && kind == PROBE_HIST) {   /* hist(latency) or hist(OPERAND) */
		bool is_onstack;
		if (key != PROBE_KEY_NONE)
			err = fail(ps, "hist() takes no key: give each function or value a clause of its own");
		else if (accept(ps, "latency"))
			latency = true;
		else if (!(err = operand(ps, &kt, &is_onstack)) && is_onstack)
			err = fail(ps, "hist() takes latency, arg0 ... arg5, retval or a variable");
		for (size_t i = 0; i < c->npts && !err; i++)
			if (latency && c->pts[i].exit)
				err = fail(ps, "hist(latency) goes in an entry: clause (it times from the entry to the "
					   "return)");
			else if (!latency && kt.q.operand == RTL_OPND_RETVAL && !c->pts[i].exit)
				err = fail(ps, "retval is read in exit: clauses only");
		kt.q.log2 = true;
	}
	if (!err)
		err = expect(ps, ")", "')'");
	if (!err && kind == PROBE_TIME) {
		if (key != PROBE_KEY_NONE)
			err = fail(ps, "time() takes no key: give each function or value a clause of its own");
		for (size_t i = 0; i < c->npts && !err; i++)
			if (c->pts[i].exit)
				err = fail(ps, "time() goes in an entry: clause (it times from the entry to the return)");
		for (size_t i = 0; i < c->nacts && !err; i++)
			if (c->acts[i].agg != SIZE_MAX && ps->prog->aggs[c->acts[i].agg].kind == PROBE_TIME)
				err = fail(ps, "one time() per clause");
	}
	size_t agg = 0;
	if (!err)
		err = agg_index(ps, nm, kind, key, &agg);
	free(nm);
	if (err) {
		free(kt.symbol);
		return err;
	}
	/* timers are numbered apart, below RTL_MAX_TIMER_ID; counters after */
	bool timer = kind == PROBE_TIME || latency;
	if (timer ? ps->prog->next_timer > RTL_MAX_TIMER_ID : ps->prog->next_id > RTL_MAX_SNIPPET_ID) {
		free(kt.symbol);
		return timer ? fail(ps, "more than %d timers (time(), hist(latency), onstack()) in one program",
				    RTL_MAX_TIMER_ID)
			     : fail(ps, "more than %d counters in one program", RTL_MAX_SNIPPET_ID - RTL_MAX_TIMER_ID);
	}
	struct probe_action *a = push(&c->acts, &c->nacts, sizeof(*a));
	if (!a) {
		free(kt.symbol);
		return -ENOMEM;
	}
	a->agg = agg;
	a->key = kt;
	a->latency = latency;
	a->id = timer ? ps->prog->next_timer++ : ps->prog->next_id++;
	return 0;
}

static int clause(struct parser *ps)
{
	struct probe_clause *c = push(&ps->prog->cl, &ps->prog->ncl, sizeof(*c));
	if (!c)
		return -ENOMEM;
	int line, col;
	where(ps, &line, &col);
	c->line = line;
	int err = point(ps, c);
	while (!err && accept(ps, ","))
		err = point(ps, c);
	if (!err && accept(ps, "/")) {
		do {
			struct probe_test *t = push(&c->tests, &c->ntests, sizeof(*t));
			if (!t)
				return -ENOMEM;
			if (c->ntests > RTL_MAX_PREDICATES)
				return fail(ps, "more than %d tests in one predicate", RTL_MAX_PREDICATES);
			err = test(ps, t);
			if (!err && t->q.operand == RTL_OPND_RETVAL)
				for (size_t i = 0; i < c->npts && !err; i++)
					if (!c->pts[i].exit)
						err = fail(ps, "retval is read in exit: clauses only");
			if (!err && accept(ps, "||"))
				c->tests[c->ntests - 1].q.or_after = true;
			else if (!err && !accept(ps, "&&"))
				break;
		} while (!err);
		if (!err)
			err = expect(ps, "/", "'&&', '||' or the '/' that ends the predicate");
	}
	if (!err)
		err = expect(ps, "{", "'{'");
	while (!err && !accept(ps, "}")) {
		err = action(ps, c);
		if (!err && !accept(ps, ";")) {
			skip_space(ps);
			if (*ps->p != '}')
				err = fail(ps, "expected ';' or '}', found %s", found(ps));
		}
	}
	if (!err && !c->nacts)
		err = fail(ps, "the clause has no aggregation or printf(): it would measure nothing");
	return err;
}

static void free_clause(struct probe_clause *c)
{
	for (size_t k = 0; k < c->npts; k++) {
		free(c->pts[k].module);
		free(c->pts[k].func);
	}
	for (size_t k = 0; k < c->ntests; k++)
		free(c->tests[k].symbol);
	for (size_t k = 0; k < c->nacts; k++) {
		free(c->acts[k].key.symbol);
		free(c->acts[k].fmt);
	}
	free(c->pts);
	free(c->tests);
	free(c->acts);
	free(c->text);
}

struct probe_mark probe_prog_mark(const struct probe_prog *p)
{
	return (struct probe_mark){ p->ncl, p->naggs, p->nonstack, p->next_id, p->next_timer };
}

void probe_prog_truncate(struct probe_prog *prog, const struct probe_mark *m)
{
	for (size_t i = m->ncl; i < prog->ncl; i++)
		free_clause(&prog->cl[i]);
	for (size_t i = m->naggs; i < prog->naggs; i++)
		free(prog->aggs[i].name);
	for (size_t i = m->nonstack; i < prog->nonstack; i++)
		free(prog->onstack[i]);
	prog->ncl = m->ncl;
	prog->naggs = m->naggs;
	prog->nonstack = m->nonstack;
	prog->next_id = m->next_id;
	prog->next_timer = m->next_timer;
}

int probe_parse_more(const char *text, struct probe_prog *prog, char *err, size_t len)
{
	struct probe_mark mark = probe_prog_mark(prog);
	struct parser ps = { text, text, err, len, false, prog };
	int rc = 0;
	skip_space(&ps);
	if (!*ps.p)
		rc = fail(&ps, "the program has no clause (e.g. 'entry:main { @calls = count(); }')");
	while (!rc && (skip_space(&ps), *ps.p)) {
		const char *start = ps.p;
		rc = clause(&ps);
		struct probe_clause *c = &prog->cl[prog->ncl - 1];
		if (!rc && !(c->text = strndup(start, (size_t)(ps.p - start))))
			rc = -ENOMEM;
	}
	if (rc == -ENOMEM && len)
		snprintf(err, len, "out of memory");
	if (rc)   /* as it was */
		probe_prog_truncate(prog, &mark);
	return rc;
}

int probe_parse(const char *text, struct probe_prog *out, char *err, size_t len)
{
	memset(out, 0, sizeof(*out));
	out->next_id = RTL_MAX_TIMER_ID + 1;
	out->next_timer = 1;
	int rc = probe_parse_more(text, out, err, len);
	if (rc)
		probe_prog_free(out);
	return rc;
}

void probe_prog_free(struct probe_prog *p)
{
	for (size_t i = 0; i < p->ncl; i++)
		free_clause(&p->cl[i]);
	for (size_t i = 0; i < p->naggs; i++)
		free(p->aggs[i].name);
	for (size_t i = 0; i < p->nonstack; i++)
		free(p->onstack[i]);
	free(p->cl);
	free(p->aggs);
	free(p->onstack);
	free(p->onstack_timer);
	memset(p, 0, sizeof(*p));
}

char *probe_module_colon(char *s)
{
	for (char *c = strchr(s, ':'); c; c = strchr(c + 1, ':')) {
		if (c[1] == ':') {   /* a '::' */
			c++;
			continue;
		}
		return c;
	}
	return NULL;
}

/* Rust's "::h" and 16 hex digits at the end of a legacy name. */
static void drop_rust_hash(char *d)
{
	size_t n = strlen(d);
	if (n < 19 || strncmp(d + n - 19, "::h", 3))
		return;
	for (size_t i = n - 16; i < n; i++)
		if (!isxdigit((unsigned char)d[i]))
			return;
	d[n - 19] = 0;
}

/* Rust v0's crate disambiguators: "std[e28293b1aa0f68bd]::" */
static void drop_disambiguators(char *d)
{
	char *w = d;
	for (const char *r = d; *r;) {
		if (*r == '[') {
			const char *e = r + 1;
			while (isxdigit((unsigned char)*e))
				e++;
			if (*e == ']' && e > r + 1) {
				r = e + 1;
				continue;
			}
		}
		*w++ = *r++;
	}
	*w = 0;
}

/* A C++ parameter list at the end, "(int const&)" and " const" after it. */
static void drop_parameters(char *d)
{
	size_t n = strlen(d);
	if (n >= 6 && !strcmp(d + n - 6, " const"))
		n -= 6;
	if (!n || d[n - 1] != ')')
		return;
	int depth = 0;
	for (size_t i = n; i-- > 0;) {
		depth += d[i] == ')' ? 1 : d[i] == '(' ? -1 : 0;
		if (!depth) {
			if (i)   /* not a name that is all parentheses */
				d[i] = 0;
			return;
		}
	}
}

/* The last name's demangled forms, per thread: a function's name is
 * tried against every point and onstack() pattern in a row. */
struct demangled {
	char *name, *full, *brief;
};
static _Thread_local struct demangled last;

static const struct demangled *demangled_of(const char *name)
{
	if (last.name && !strcmp(last.name, name))
		return &last;
	free(last.name);
	free(last.full);
	free(last.brief);
	last = (struct demangled){ strdup(name), rtl_demangle(name), NULL };
	if (last.full && (last.brief = strdup(last.full))) {
		drop_parameters(last.brief);
		drop_rust_hash(last.brief);
		drop_disambiguators(last.brief);
	}
	return last.name ? &last : NULL;
}

bool probe_name_matches(const char *pattern, const char *name)
{
	if (!fnmatch(pattern, name, 0))
		return true;
	if (strncmp(name, "_Z", 2) && strncmp(name, "_R", 2))
		return false;
	const struct demangled *d = demangled_of(name);
	return d && ((d->full && !fnmatch(pattern, d->full, 0)) || (d->brief && !fnmatch(pattern, d->brief, 0)));
}

bool probe_point_matches(const struct probe_point *pt, const char *module, const char *name)
{
	if (!name || !probe_name_matches(pt->func, name))
		return false;
	if (!pt->module)
		return true;
	const char *base = module ? strrchr(module, '/') : NULL;
	base = base ? base + 1 : module;
	return base && !fnmatch(pt->module, base, 0);
}

struct probe_point probe_onstack_point(const struct probe_prog *p, size_t i, char *buf, size_t len)
{
	snprintf(buf, len, "%s", i < p->nonstack ? p->onstack[i] : "");
	char *colon = probe_module_colon(buf);
	struct probe_point pt = { false, NULL, buf, false };
	if (colon) {   /* MODULE:F */
		*colon = 0;
		pt.module = buf;
		pt.func = colon + 1;
	}
	return pt;
}
