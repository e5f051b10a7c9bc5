/* Sim-nML dialect lexer and recursive-descent parser. Errors name
 * file:line:column and what was expected, then exit (host tool). */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include "nml.h"

void nml_die(struct loc loc, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s:%d:%d: error: ", loc.file, loc.line, loc.col);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

void *nml_alloc(size_t n)
{
	void *p = calloc(1, n ? n : 1);

	if (!p) {
		fputs("nmlgen: out of memory\n", stderr);
		exit(1);
	}
	return p;
}

char *nml_strdup(const char *s)
{
	char *d = nml_alloc(strlen(s) + 1);

	return strcpy(d, s);
}

#define GROW(arr, n) ((arr) = realloc((arr), sizeof(*(arr)) * ((n) + 1)), \
	memset(&(arr)[n], 0, sizeof(*(arr))), &(arr)[(n)++])

/* ---- lexer ---------------------------------------------------------- */

struct lexer { const char *src, *p, *file; int line; const char *bol; struct token *toks; int n; };

static struct loc here(struct lexer *L)
{
	return (struct loc){ L->file, L->line, (int)(L->p - L->bol) + 1 };
}

static int is_open_quote(const unsigned char *p)
{
	return p[0] == '"' || (p[0] == 0xe2 && p[1] == 0x80 && (p[2] == 0x9c || p[2] == 0x9d));
}

static void lex_string(struct lexer *L, struct token *t)
{
	char buf[4096];
	size_t n = 0;

	L->p += (*L->p == '"') ? 1 : 3;
	for (;;) {
		const unsigned char *u = (const unsigned char *)L->p;
		if (!*u || *u == '\n')
			nml_die(t->loc, "unterminated string");
		if (is_open_quote(u)) {
			L->p += (*u == '"') ? 1 : 3;
			break;
		}
		if (*u == '\\' && u[1]) {
			char c = u[1];
			buf[n++] = c == 'n' ? '\n' : c == 't' ? '\t' : c;
			L->p += 2;
		} else {
			buf[n++] = *L->p++;
		}
		if (n >= sizeof(buf) - 1)
			nml_die(t->loc, "string too long");
	}
	buf[n] = 0;
	t->k = T_STR;
	t->s = nml_strdup(buf);
}

static void lex_number(struct lexer *L, struct token *t)
{
	int base = 10;
	uint64_t v = 0;

	if (L->p[0] == '0' && (L->p[1] == 'x' || L->p[1] == 'X'))
		base = 16, L->p += 2;
	else if (L->p[0] == '0' && (L->p[1] == 'b' || L->p[1] == 'B'))
		base = 2, L->p += 2;
	for (;; L->p++) {
		int c = *L->p, d;
		if (c == '_')
			continue;
		if (isdigit(c))
			d = c - '0';
		else if (isxdigit(c) && base == 16)
			d = tolower(c) - 'a' + 10;
		else
			break;
		if (d >= base)
			nml_die(here(L), "digit '%c' not valid in base %d", c, base);
		v = v * base + d;
	}
	if (isalpha(*L->p))
		nml_die(here(L), "unexpected '%c' after number", *L->p);
	t->k = T_NUM;
	t->num = v;
}

static const struct { const char *s; enum tkind k; } punct[] = {
	{ "..", T_DOTDOT }, { "||", T_OROR }, { "&&", T_ANDAND }, { "==", T_EQEQ },
	{ "!=", T_NE }, { "<=", T_LE }, { ">=", T_GE }, { "<<", T_SHL }, { ">>", T_SHR },
	{ "::", T_CONCAT }, { "**", T_POW },
	{ "(", T_LP }, { ")", T_RP }, { "[", T_LB }, { "]", T_RB }, { "{", T_LC },
	{ "}", T_RC }, { ",", T_COMMA }, { ";", T_SEMI }, { ":", T_COLON }, { ".", T_DOT },
	{ "=", T_EQ }, { "|", T_PIPE }, { "#", T_HASH }, { "&", T_AMP }, { "^", T_CARET },
	{ "<", T_LT }, { ">", T_GT }, { "+", T_PLUS }, { "-", T_MINUS }, { "*", T_STAR },
	{ "/", T_SLASH }, { "%", T_PERCENT }, { "~", T_TILDE }, { "!", T_BANG },
};

static void skip_space(struct lexer *L)
{
	for (;;) {
		if (*L->p == '\n') {
			L->line++;
			L->bol = ++L->p;
		} else if (isspace((unsigned char)*L->p)) {
			L->p++;
		} else if (L->p[0] == '/' && L->p[1] == '/') {
			while (*L->p && *L->p != '\n')
				L->p++;
		} else if (L->p[0] == '/' && L->p[1] == '*') {
			struct loc start = here(L);
			for (L->p += 2; !(L->p[0] == '*' && L->p[1] == '/'); L->p++) {
				if (!*L->p)
					nml_die(start, "unterminated comment");
				if (*L->p == '\n') {
					L->line++;
					L->bol = L->p + 1;
				}
			}
			L->p += 2;
		} else {
			return;
		}
	}
}

static void lex_one(struct lexer *L, struct token *t)
{
	skip_space(L);
	t->loc = here(L);
	if (!*L->p) {
		t->k = T_EOF;
		return;
	}
	if (is_open_quote((const unsigned char *)L->p))
		return lex_string(L, t);
	if (isdigit((unsigned char)*L->p))
		return lex_number(L, t);
	if (isalpha((unsigned char)*L->p) || *L->p == '_') {
		const char *s = L->p;
		while (isalnum((unsigned char)*L->p) || *L->p == '_')
			L->p++;
		t->k = T_ID;
		t->s = strndup(s, L->p - s);
		return;
	}
	for (size_t i = 0; i < sizeof(punct) / sizeof(punct[0]); i++) {
		size_t n = strlen(punct[i].s);
		if (!strncmp(L->p, punct[i].s, n)) {
			t->k = punct[i].k;
			t->s = (char *)punct[i].s;
			L->p += n;
			return;
		}
	}
	nml_die(t->loc, "unexpected character '%c'", *L->p);
}

static char *read_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	long n;

	if (!f) {
		fprintf(stderr, "%s: error: cannot open: %s\n", path, strerror(errno));
		exit(1);
	}
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	buf = nml_alloc(n + 1);
	if (fread(buf, 1, n, f) != (size_t)n) {
		fprintf(stderr, "%s: error: read failed\n", path);
		exit(1);
	}
	fclose(f);
	return buf;
}

/* ---- parser --------------------------------------------------------- */

struct parser { struct token *t; int i, n; struct spec *spec; };

static struct token *cur(struct parser *P) { return &P->t[P->i]; }
static struct token *peek(struct parser *P, int k)
{
	return &P->t[P->i + k < P->n ? P->i + k : P->n - 1];
}

static const char *tok_text(struct token *t)
{
	static char buf[64];
	switch (t->k) {
	case T_EOF: return "end of file";
	case T_NUM: snprintf(buf, sizeof buf, "number %llu", (unsigned long long)t->num); return buf;
	case T_STR: return "string";
	case T_ID: snprintf(buf, sizeof buf, "'%.40s'", t->s); return buf;
	default: snprintf(buf, sizeof buf, "'%s'", t->s); return buf;
	}
}

static void expected(struct parser *P, const char *what)
{
	nml_die(cur(P)->loc, "expected %s, found %s", what, tok_text(cur(P)));
}

static int accept(struct parser *P, enum tkind k)
{
	if (cur(P)->k != k)
		return 0;
	P->i++;
	return 1;
}

static void expect(struct parser *P, enum tkind k, const char *what)
{
	if (!accept(P, k))
		expected(P, what);
}

static int is_kw(struct token *t, const char *kw) { return t->k == T_ID && !strcmp(t->s, kw); }

static int accept_kw(struct parser *P, const char *kw)
{
	if (!is_kw(cur(P), kw))
		return 0;
	P->i++;
	return 1;
}

static char *expect_id(struct parser *P, const char *what)
{
	if (cur(P)->k != T_ID)
		expected(P, what);
	return P->t[P->i++].s;
}

static struct expr *parse_expr(struct parser *P);

static struct expr *new_expr(enum ekind k, struct loc loc)
{
	struct expr *e = nml_alloc(sizeof(*e));
	e->k = k;
	e->loc = loc;
	return e;
}

static int64_t const_int(struct parser *P, struct expr *e, const char *what)
{
	int64_t v;
	if (!nml_const(P->spec, e, &v))
		nml_die(e->loc, "%s must be a constant expression", what);
	return v;
}

static struct type parse_type(struct parser *P)
{
	struct type ty = { 0 };
	struct loc loc = cur(P)->loc;

	if (accept_kw(P, "card")) {
		ty.k = TY_CARD;
	} else if (accept_kw(P, "int")) {
		ty.k = TY_INT;
	} else if (accept_kw(P, "bool")) {
		ty.k = TY_BOOL;
		ty.w = 1;
		return ty;
	} else if (accept_kw(P, "float")) {
		ty.k = TY_FLOAT;
		expect(P, T_LP, "'(' after float");
		ty.w = const_int(P, parse_expr(P), "float mantissa size");
		expect(P, T_COMMA, "',' in float(mantissa, exponent)");
		ty.e = const_int(P, parse_expr(P), "float exponent size");
		expect(P, T_RP, "')'");
		if (!((ty.w == 23 && ty.e == 9) || (ty.w == 52 && ty.e == 12)))
			nml_die(loc, "only float(23, 9) and float(52, 12) are supported");
		return ty;
	} else if (cur(P)->k == T_ID && nml_tdef(P->spec, cur(P)->s)) {
		return nml_tdef(P->spec, P->t[P->i++].s)->ty;
	} else {
		expected(P, "a type (card, int, bool, float or a type name)");
	}
	expect(P, T_LP, "'(' after card/int");
	ty.w = const_int(P, parse_expr(P), "type width");
	expect(P, T_RP, "')'");
	if (ty.w < 1 || ty.w > 128)
		nml_die(loc, "type width %d out of range 1..128", ty.w);
	return ty;
}

/* A '<' after an operand starts a bit slice when a '..' follows before any
 * token that cannot be part of a bound expression. */
static int slice_ahead(struct parser *P)
{
	int depth = 0;
	for (int i = P->i + 1; i < P->n; i++) {
		enum tkind k = P->t[i].k;
		if (k == T_LP || k == T_LB)
			depth++;
		else if ((k == T_RP || k == T_RB) && depth-- == 0)
			return 0;
		else if (k == T_DOTDOT && depth == 0)
			return 1;
		else if (k == T_COMMA && depth > 0)
			continue;
		else if (k == T_SEMI || k == T_LC || k == T_RC || k == T_EOF || k == T_STR ||
			 k == T_LT || k == T_GT || k == T_EQ || k == T_COMMA)
			return 0;
	}
	return 0;
}

static struct expr *parse_shift(struct parser *P);

static struct expr *parse_postfix(struct parser *P, struct expr *e)
{
	for (;;) {
		struct loc loc = cur(P)->loc;
		if (cur(P)->k == T_LT && slice_ahead(P)) {
			struct expr *s = new_expr(E_SLICE, loc);
			P->i++;
			s->a = e;
			s->b = parse_shift(P);
			expect(P, T_DOTDOT, "'..' in bit slice");
			s->c = parse_shift(P);
			expect(P, T_GT, "'>' closing bit slice");
			e = s;
		} else {
			return e;
		}
	}
}

static struct expr *parse_args(struct parser *P, struct expr *e)
{
	while (!accept(P, T_RP)) {
		if (e->nargs)
			expect(P, T_COMMA, "',' or ')' in argument list");
		e->args = realloc(e->args, sizeof(*e->args) * (e->nargs + 1));
		e->args[e->nargs++] = parse_expr(P);
	}
	return e;
}

static struct expr *parse_primary(struct parser *P)
{
	struct token *t = cur(P);
	struct expr *e;

	switch (t->k) {
	case T_NUM:
		P->i++;
		e = new_expr(E_NUM, t->loc);
		e->num = t->num;
		return e;
	case T_STR:
		P->i++;
		e = new_expr(E_STR, t->loc);
		e->name = t->s;
		return e;
	case T_LP:
		P->i++;
		e = parse_expr(P);
		expect(P, T_RP, "')'");
		return e;
	case T_ID:
		break;
	default:
		expected(P, "an expression");
	}
	P->i++;
	if (!strcmp(t->s, "if")) {
		e = new_expr(E_COND, t->loc);
		e->a = parse_expr(P);
		if (!accept_kw(P, "then"))
			expected(P, "'then'");
		e->b = parse_expr(P);
		if (!accept_kw(P, "else"))
			expected(P, "'else' (an if expression needs both branches)");
		e->c = parse_expr(P);
		if (!accept_kw(P, "endif"))
			expected(P, "'endif'");
		return e;
	}
	if (!strcmp(t->s, "coerce")) {
		e = new_expr(E_COERCE, t->loc);
		expect(P, T_LP, "'(' after coerce");
		e->ty = parse_type(P);
		expect(P, T_COMMA, "',' in coerce(type, expression)");
		e->a = parse_expr(P);
		expect(P, T_RP, "')'");
		return e;
	}
	if (!strcmp(t->s, "format")) {
		e = new_expr(E_FORMAT, t->loc);
		expect(P, T_LP, "'(' after format");
		if (cur(P)->k != T_STR)
			expected(P, "a format string");
		e->name = P->t[P->i++].s;
		while (accept(P, T_COMMA)) {
			e->args = realloc(e->args, sizeof(*e->args) * (e->nargs + 1));
			e->args[e->nargs++] = parse_expr(P);
		}
		expect(P, T_RP, "')' closing format");
		return e;
	}
	if (accept(P, T_LP)) {
		e = new_expr(E_CALL, t->loc);
		e->name = t->s;
		return parse_args(P, e);
	}
	if (accept(P, T_LB)) {
		e = new_expr(E_INDEX, t->loc);
		e->name = t->s;
		e->a = parse_expr(P);
		expect(P, T_RB, "']'");
		return e;
	}
	if (accept(P, T_DOT)) {
		e = new_expr(E_DOT, t->loc);
		e->name = t->s;
		e->attr = expect_id(P, "an attribute name after '.'");
		return e;
	}
	e = new_expr(E_ID, t->loc);
	e->name = t->s;
	return e;
}

static struct expr *parse_unary(struct parser *P)
{
	struct token *t = cur(P);
	if (t->k == T_MINUS || t->k == T_TILDE || t->k == T_BANG) {
		struct expr *e = new_expr(E_UN, t->loc);
		P->i++;
		e->op = t->k;
		e->a = parse_unary(P);
		return e;
	}
	return parse_postfix(P, parse_primary(P));
}

/* Binary operators from loosest to tightest. */
static const enum tkind levels[][4] = {
	{ T_OROR }, { T_ANDAND }, { T_PIPE }, { T_CARET }, { T_AMP },
	{ T_EQEQ, T_NE }, { T_LT, T_LE, T_GT, T_GE }, { T_SHL, T_SHR }, { T_CONCAT },
	{ T_PLUS, T_MINUS }, { T_STAR, T_SLASH, T_PERCENT }, { T_POW },
};
#define NLEVELS ((int)(sizeof(levels) / sizeof(levels[0])))

static struct expr *parse_level(struct parser *P, int lvl)
{
	struct expr *e;

	if (lvl == NLEVELS)
		return parse_unary(P);
	e = parse_level(P, lvl + 1);
	for (;;) {
		struct token *t = cur(P);
		int hit = 0;
		for (int j = 0; j < 4 && levels[lvl][j]; j++)
			hit |= t->k == levels[lvl][j];
		if (!hit)
			return e;
		P->i++;
		struct expr *b = new_expr(E_BIN, t->loc);
		b->op = t->k;
		b->a = e;
		b->b = parse_level(P, lvl + 1);
		e = b;
	}
}

static struct expr *parse_shift(struct parser *P) { return parse_level(P, 7); }
static struct expr *parse_expr(struct parser *P) { return parse_level(P, 0); }

static struct stmt *parse_stmts(struct parser *P, int (*end)(struct parser *));

static int end_brace(struct parser *P) { return cur(P)->k == T_RC; }
static int end_if(struct parser *P)
{
	return is_kw(cur(P), "else") || is_kw(cur(P), "endif");
}
static int end_case(struct parser *P)
{
	return is_kw(cur(P), "case") || is_kw(cur(P), "default") || cur(P)->k == T_RC;
}

static struct stmt *parse_switch(struct parser *P, struct stmt *s)
{
	s->k = S_SWITCH;
	expect(P, T_LP, "'(' after switch");
	s->cond = parse_expr(P);
	expect(P, T_RP, "')'");
	expect(P, T_LC, "'{' opening switch cases");
	while (!accept(P, T_RC)) {
		struct scase *c = GROW(s->cases, s->ncases);
		if (accept_kw(P, "case"))
			c->val = parse_expr(P);
		else if (!accept_kw(P, "default"))
			expected(P, "'case', 'default' or '}'");
		expect(P, T_COLON, "':' after case value");
		c->body = parse_stmts(P, end_case);
	}
	accept(P, T_SEMI);
	return s;
}

static struct stmt *parse_stmt(struct parser *P)
{
	struct stmt *s = nml_alloc(sizeof(*s));
	struct expr *e;

	s->loc = cur(P)->loc;
	if (accept_kw(P, "if")) {
		s->k = S_IF;
		s->cond = parse_expr(P);
		if (!accept_kw(P, "then"))
			expected(P, "'then'");
		s->then = parse_stmts(P, end_if);
		if (accept_kw(P, "else"))
			s->els = parse_stmts(P, end_if);
		if (!accept_kw(P, "endif"))
			expected(P, "'endif'");
		expect(P, T_SEMI, "';' after endif");
		return s;
	}
	if (accept_kw(P, "switch"))
		return parse_switch(P, s);
	if (cur(P)->k != T_ID)
		expected(P, "a statement");
	e = parse_unary(P);
	if (accept(P, T_EQ)) {
		s->k = S_ASSIGN;
		s->lhs = e;
		s->rhs = parse_expr(P);
	} else if (e->k == E_CALL) {
		s->k = S_CALL;
		s->rhs = e;
	} else if (e->k == E_DOT || e->k == E_ID) {
		s->k = S_ATTR;
		s->lhs = e;
	} else {
		nml_die(s->loc, "expected an assignment, a call or an attribute reference");
	}
	expect(P, T_SEMI, "';' after statement");
	return s;
}

static struct stmt *parse_stmts(struct parser *P, int (*end)(struct parser *))
{
	struct stmt *head = NULL, **tail = &head;

	while (!end(P)) {
		if (cur(P)->k == T_EOF)
			expected(P, "'}' or 'endif' closing a statement block");
		if (accept(P, T_SEMI))
			continue;
		*tail = parse_stmt(P);
		tail = &(*tail)->next;
	}
	return head;
}

static int attr_start(struct parser *P)
{
	return cur(P)->k == T_ID && peek(P, 1)->k == T_EQ;
}

static int decl_start(struct token *t)
{
	static const char *const kws[] = { "let", "type", "reg", "var", "mem", "mode", "op", "resource", "macro", 0 };
	if (t->k == T_EOF)
		return 1;
	for (int i = 0; kws[i]; i++)
		if (is_kw(t, kws[i]))
			return 1;
	return 0;
}

static void parse_attrs(struct parser *P, struct attr **attrs, int *n)
{
	while (attr_start(P)) {
		struct attr *a = GROW(*attrs, *n);
		a->loc = cur(P)->loc;
		a->name = P->t[P->i].s;
		P->i += 2;
		if (!strcmp(a->name, "uses")) {
			/* The resource model is parsed over, not used (functional simulation). */
			while (!decl_start(cur(P)) && !attr_start(P))
				P->i++;
			continue;
		}
		if (accept(P, T_LC)) {
			a->is_action = 1;
			a->body = parse_stmts(P, end_brace);
			expect(P, T_RC, "'}'");
		} else {
			a->e = parse_expr(P);
		}
	}
}

static void parse_params(struct parser *P, struct rule *r)
{
	while (!accept(P, T_RP)) {
		struct param *p;
		if (r->nparams)
			expect(P, T_COMMA, "',' or ')' in parameter list");
		p = GROW(r->params, r->nparams);
		p->loc = cur(P)->loc;
		p->name = expect_id(P, "a parameter name");
		expect(P, T_COLON, "':' after parameter name");
		if (cur(P)->k == T_ID && (nml_rule(P->spec, cur(P)->s) ||
		    !(nml_tdef(P->spec, cur(P)->s) || is_kw(cur(P), "card") || is_kw(cur(P), "int") ||
		      is_kw(cur(P), "bool") || is_kw(cur(P), "float")))) {
			p->tname = P->t[P->i++].s;  /* mode or op, possibly declared later */
		} else {
			p->ty = parse_type(P);
			p->is_type = 1;
		}
	}
}

static void parse_rule(struct parser *P, enum rkind k)
{
	struct rule *r;
	struct loc loc = cur(P)->loc;
	char *name = expect_id(P, k == R_MODE ? "a mode name" : "an op name");

	if (nml_rule(P->spec, name) || nml_storage(P->spec, name))
		nml_die(loc, "'%s' is already defined", name);
	r = GROW(P->spec->rules, P->spec->nrules);
	r->k = k;
	r->name = name;
	r->loc = loc;
	if (accept(P, T_EQ)) {
		r->is_or = 1;
		do {
			r->alts = realloc(r->alts, sizeof(char *) * (r->nalts + 1));
			r->alts[r->nalts++] = expect_id(P, "an alternative name");
		} while (accept(P, T_PIPE));
		return;
	}
	expect(P, T_LP, "'(' or '=' after the rule name");
	parse_params(P, r);
	if (k == R_MODE && accept(P, T_EQ))
		r->value = parse_expr(P);
	parse_attrs(P, &r->attrs, &r->nattrs);
}

static void parse_storage(struct parser *P, enum stkind k)
{
	struct storage *st;
	struct loc loc = cur(P)->loc;
	char *name = expect_id(P, "a storage name");

	if (nml_storage(P->spec, name) || nml_rule(P->spec, name))
		nml_die(loc, "'%s' is already defined", name);
	st = GROW(P->spec->stores, P->spec->nstores);
	st->k = k;
	st->name = name;
	st->loc = loc;
	expect(P, T_LB, "'[' after the storage name");
	st->count = const_int(P, parse_expr(P), "storage size");
	expect(P, T_COMMA, "',' in [size, type]");
	st->ty = parse_type(P);
	expect(P, T_RB, "']'");
	parse_attrs(P, &st->attrs, &st->nattrs);
	for (int i = 0; i < st->nattrs; i++) {
		struct attr *a = &st->attrs[i];
		if (!strcmp(a->name, "pc"))
			st->is_pc = 1;
		else if (!strcmp(a->name, "npc"))
			st->is_npc = 1;
		else if (!strcmp(a->name, "alias") && a->e && a->e->k == E_INDEX)
			st->alias = a->e->name;
		else if (!strcmp(a->name, "alias"))
			nml_die(a->loc, "alias expects NAME[0]");
	}
}

static void parse_decl(struct parser *P)
{
	struct loc loc = cur(P)->loc;

	if (accept_kw(P, "let")) {
		struct let *l = GROW(P->spec->lets, P->spec->nlets);
		l->loc = loc;
		l->name = expect_id(P, "a constant name");
		expect(P, T_EQ, "'=' after let NAME");
		l->e = parse_expr(P);
	} else if (accept_kw(P, "type")) {
		struct tdef *t = GROW(P->spec->types, P->spec->ntypes);
		t->loc = loc;
		t->name = expect_id(P, "a type name");
		expect(P, T_EQ, "'=' after type NAME");
		t->ty = parse_type(P);
	} else if (accept_kw(P, "resource")) {
		do
			expect_id(P, "a resource name");
		while (accept(P, T_COMMA));
	} else if (accept_kw(P, "reg")) {
		parse_storage(P, ST_REG);
	} else if (accept_kw(P, "var")) {
		parse_storage(P, ST_VAR);
	} else if (accept_kw(P, "mem")) {
		parse_storage(P, ST_MEM);
	} else if (accept_kw(P, "mode")) {
		parse_rule(P, R_MODE);
	} else if (accept_kw(P, "op")) {
		parse_rule(P, R_OP);
	} else {
		expected(P, "a declaration (let, type, reg, var, mem, resource, mode or op)");
	}
}

void nml_parse_file(const char *path, struct spec *spec)
{
	struct lexer L = { 0 };
	struct parser P = { 0 };

	L.src = L.p = L.bol = read_file(path);
	L.file = path;
	L.line = 1;
	for (;;) {
		struct token *t = GROW(L.toks, L.n);
		lex_one(&L, t);
		if (t->k == T_EOF)
			break;
	}
	P.t = L.toks;
	P.n = L.n;
	P.spec = spec;
	while (cur(&P)->k != T_EOF)
		parse_decl(&P);
}

/* ---- lookups and constants ------------------------------------------ */

struct rule *nml_rule(struct spec *s, const char *name)
{
	for (int i = 0; i < s->nrules; i++)
		if (!strcmp(s->rules[i].name, name))
			return &s->rules[i];
	return NULL;
}

struct storage *nml_storage(struct spec *s, const char *name)
{
	for (int i = 0; i < s->nstores; i++)
		if (!strcmp(s->stores[i].name, name))
			return &s->stores[i];
	return NULL;
}

struct let *nml_let(struct spec *s, const char *name)
{
	for (int i = 0; i < s->nlets; i++)
		if (!strcmp(s->lets[i].name, name))
			return &s->lets[i];
	return NULL;
}

struct tdef *nml_tdef(struct spec *s, const char *name)
{
	for (int i = 0; i < s->ntypes; i++)
		if (!strcmp(s->types[i].name, name))
			return &s->types[i];
	return NULL;
}

struct attr *nml_attr(struct attr *a, int n, const char *name)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(a[i].name, name))
			return &a[i];
	return NULL;
}

int nml_const(struct spec *s, struct expr *e, int64_t *out)
{
	int64_t a, b;

	switch (e->k) {
	case E_NUM:
		*out = (int64_t)e->num;
		return 1;
	case E_ID: {
		struct let *l = nml_let(s, e->name);
		return l && nml_const(s, l->e, out);
	}
	case E_UN:
		if (!nml_const(s, e->a, &a))
			return 0;
		*out = e->op == T_MINUS ? -a : e->op == T_TILDE ? ~a : !a;
		return 1;
	case E_BIN:
		if (!nml_const(s, e->a, &a) || !nml_const(s, e->b, &b))
			return 0;
		switch (e->op) {
		case T_PLUS: *out = a + b; return 1;
		case T_MINUS: *out = a - b; return 1;
		case T_STAR: *out = a * b; return 1;
		case T_SLASH: if (!b) return 0; *out = a / b; return 1;
		case T_PERCENT: if (!b) return 0; *out = a % b; return 1;
		case T_SHL: *out = (int64_t)((uint64_t)a << (b & 63)); return 1;
		case T_SHR: *out = (int64_t)((uint64_t)a >> (b & 63)); return 1;
		case T_AMP: *out = a & b; return 1;
		case T_PIPE: *out = a | b; return 1;
		case T_CARET: *out = a ^ b; return 1;
		case T_POW:
			*out = 1;
			while (b-- > 0)
				*out *= a;
			return 1;
		default: return 0;
		}
	default:
		return 0;
	}
}
