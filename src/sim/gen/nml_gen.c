/* Sim-nML generator: flattens the op/mode hierarchy from the start symbol
 * 'instruction', computes each instruction's encoding from its image
 * attribute, checks encodings for overlaps, and writes C: one routine per
 * instruction from its action, a decoder, a disassembler from the syntax
 * attributes, and a struct rtl_sim_isa (src/sim/isa.h) describing it all. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include "nml.h"
#include "../isa.h"

/* ---- string builder ------------------------------------------------- */

struct sb { char *s; size_t n, cap; };

static void sb_add(struct sb *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_add(struct sb *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (b->n + n + 1 > b->cap) {
		b->cap = (b->n + n + 1) * 2;
		b->s = realloc(b->s, b->cap);
	}
	va_start(ap, fmt);
	vsnprintf(b->s + b->n, n + 1, fmt, ap);
	va_end(ap);
	b->n += n;
}

static char *fmt(const char *f, ...) __attribute__((format(printf, 1, 2)));
static char *fmt(const char *f, ...)
{
	va_list ap;
	char *s;

	va_start(ap, f);
	if (vasprintf(&s, f, ap) < 0)
		exit(1);
	va_end(ap);
	return s;
}

/* ---- flattening ------------------------------------------------------ */

/* An and-rule with a choice made for every mode/op parameter. Leaf
 * parameters (card, int...) become fields of the flat instruction. */
struct inst { struct rule *r; struct inst **sub; };

struct field { struct inst *in; int param; struct type ty; int nbits; int wbit[128], fbit[128]; };

struct flat {
	struct inst *root;
	char *name;
	struct field *fields; int nfields;
	int len;                        /* bits */
	uint64_t mask, value;
	int flags;
	struct sb handler;
};

struct gen {
	struct spec *s;
	const char *prefix;
	struct flat *flats; int nflats;
	struct storage *pc, *npc;
	int big_endian;
	int delay_slots;                /* a control transfer takes effect after the next instruction */
	int traced;                     /* emitting the variants that report memory accesses */
};

struct list { struct inst **v; int n; };

static void list_add(struct list *l, struct inst *in)
{
	l->v = realloc(l->v, sizeof(*l->v) * (l->n + 1));
	l->v[l->n++] = in;
}

static struct list expand(struct gen *g, struct rule *r, int depth);

static void product(struct gen *g, struct rule *r, int i, struct inst **chosen, struct list *out)
{
	if (i == r->nparams) {
		struct inst *in = nml_alloc(sizeof(*in));
		in->r = r;
		in->sub = nml_alloc(sizeof(*in->sub) * (r->nparams + 1));
		memcpy(in->sub, chosen, sizeof(*chosen) * r->nparams);
		list_add(out, in);
		return;
	}
	struct param *p = &r->params[i];
	if (p->is_type) {
		chosen[i] = NULL;
		product(g, r, i + 1, chosen, out);
		return;
	}
	struct rule *sub = nml_rule(g->s, p->tname);
	if (!sub)
		nml_die(p->loc, "parameter '%s' has unknown type '%s' (not a type, mode or op)", p->name, p->tname);
	struct list alts = expand(g, sub, 0);
	for (int k = 0; k < alts.n; k++) {
		chosen[i] = alts.v[k];
		product(g, r, i + 1, chosen, out);
	}
}

static struct list expand(struct gen *g, struct rule *r, int depth)
{
	struct list out = { 0 };

	if (depth > 64)
		nml_die(r->loc, "or-rule '%s' is recursive", r->name);
	if (r->is_or) {
		for (int i = 0; i < r->nalts; i++) {
			struct rule *a = nml_rule(g->s, r->alts[i]);
			if (!a)
				nml_die(r->loc, "'%s' names unknown alternative '%s'", r->name, r->alts[i]);
			if (a->k != r->k)
				nml_die(r->loc, "'%s' mixes modes and ops ('%s')", r->name, a->name);
			struct list l = expand(g, a, depth + 1);
			for (int k = 0; k < l.n; k++)
				list_add(&out, l.v[k]);
		}
		return out;
	}
	struct inst **chosen = nml_alloc(sizeof(*chosen) * (r->nparams + 1));
	product(g, r, 0, chosen, &out);
	return out;
}

static int field_of(struct flat *f, struct inst *in, int param)
{
	for (int i = 0; i < f->nfields; i++)
		if (f->fields[i].in == in && f->fields[i].param == param)
			return i;
	return -1;
}

static void collect_fields(struct flat *f, struct inst *in)
{
	for (int i = 0; i < in->r->nparams; i++) {
		if (in->sub[i]) {
			collect_fields(f, in->sub[i]);
			continue;
		}
		f->fields = realloc(f->fields, sizeof(*f->fields) * (f->nfields + 1));
		struct field *fl = &f->fields[f->nfields++];
		memset(fl, 0, sizeof(*fl));
		fl->in = in;
		fl->param = i;
		fl->ty = in->r->params[i].ty;
	}
}

static int param_index(struct rule *r, const char *name);

/* The name users and tools see: the op's 'name' attribute (a string or a
 * format of x.name), else the innermost op reached through op parameters. */
static const char *flat_name(struct inst *in)
{
	struct attr *a = nml_attr(in->r->attrs, in->r->nattrs, "name");
	if (a && a->e && a->e->k == E_STR)
		return a->e->name;
	if (a && a->e && a->e->k == E_FORMAT) {
		char buf[256] = "";
		size_t n = 0;
		int argi = 0;
		for (const char *s = a->e->name; *s && n < sizeof(buf) - 64; s++) {
			if (s[0] == '%' && s[1] == 's' && argi < a->e->nargs && a->e->args[argi]->k == E_DOT) {
				int pi = param_index(in->r, a->e->args[argi++]->name);
				if (pi < 0 || !in->sub[pi])
					nml_die(a->loc, "name arguments must be x.name of mode or op parameters");
				n += snprintf(buf + n, sizeof(buf) - n, "%s", flat_name(in->sub[pi]));
				s++;
			} else {
				buf[n++] = *s;
			}
		}
		buf[n] = 0;
		return nml_strdup(buf);
	}
	for (int i = 0; i < in->r->nparams; i++)
		if (in->sub[i] && in->sub[i]->r->k == R_OP)
			return flat_name(in->sub[i]);
	return in->r->name;
}

/* ---- images ---------------------------------------------------------- */

struct bits { int n; int field[128], fbit[128]; };   /* field -1: literal fbit */

static void bit_push(struct loc loc, struct bits *b, int field, int fbit)
{
	if (b->n >= 64)
		nml_die(loc, "image longer than 64 bits");
	b->field[b->n] = field;
	b->fbit[b->n++] = fbit;
}

static void image_of(struct gen *g, struct flat *f, struct inst *in, struct expr *e, struct bits *b);

static int param_index(struct rule *r, const char *name)
{
	for (int i = 0; i < r->nparams; i++)
		if (!strcmp(r->params[i].name, name))
			return i;
	return -1;
}

static struct attr *rule_attr(struct rule *r, const char *name)
{
	return nml_attr(r->attrs, r->nattrs, name);
}

static int eval_const_in(struct gen *g, struct inst *in, struct expr *e, int64_t *v);

static void image_sub(struct gen *g, struct flat *f, struct inst *in, struct expr *e, struct bits *b)
{
	int pi = param_index(in->r, e->name);
	if (pi < 0 || !in->sub[pi])
		nml_die(e->loc, "'%s' is not a mode or op parameter of '%s'", e->name, in->r->name);
	struct inst *sub = in->sub[pi];
	struct attr *a = rule_attr(sub->r, e->attr);
	if (!a || !a->e)
		nml_die(e->loc, "'%s' (%s) has no %s attribute", e->name, sub->r->name, e->attr);
	image_of(g, f, sub, a->e, b);
}

static void image_arg(struct gen *g, struct flat *f, struct inst *in, struct expr *e, int width,
		      struct bits *b)
{
	int64_t v;
	int pi, hi = width - 1, lo = 0;
	struct expr *base = e;

	if (e->k == E_SLICE) {
		int64_t h, l;
		if (!eval_const_in(g, in, e->b, &h) || !eval_const_in(g, in, e->c, &l))
			nml_die(e->loc, "bit slice bounds must be constants");
		hi = h, lo = l, base = e->a;
		if (hi - lo + 1 != width)
			nml_die(e->loc, "slice <%d..%d> is %d bits but the format asks for %d", hi, lo, hi - lo + 1, width);
	}
	if (base->k == E_ID && (pi = param_index(in->r, base->name)) >= 0 && !in->sub[pi]) {
		int fi = field_of(f, in, pi);
		for (int k = hi; k >= lo; k--)
			bit_push(e->loc, b, fi, k);
		return;
	}
	if (base != e)
		nml_die(e->loc, "only parameters can be sliced in an image");
	if (!eval_const_in(g, in, e, &v))
		nml_die(e->loc, "image argument must be a parameter, a slice of one or a constant");
	for (int k = width - 1; k >= 0; k--)
		bit_push(e->loc, b, -1, (v >> k) & 1);
}

static void image_of(struct gen *g, struct flat *f, struct inst *in, struct expr *e, struct bits *b)
{
	const char *s;
	int argi = 0;

	if (e->k == E_DOT)
		return image_sub(g, f, in, e, b);
	if (e->k != E_FORMAT && e->k != E_STR)
		nml_die(e->loc, "image must be a string, format(...) or x.image");
	for (s = e->name; *s; s++) {
		if (*s == ' ' || *s == '_')
			continue;
		if (*s == '0' || *s == '1') {
			bit_push(e->loc, b, -1, *s - '0');
			continue;
		}
		if (*s != '%' || e->k != E_FORMAT)
			nml_die(e->loc, "unexpected '%c' in image (expected 0, 1, %%Nb or %%s)", *s);
		char *end;
		long w = strtol(s + 1, &end, 10);
		if (argi >= e->nargs)
			nml_die(e->loc, "image format has more conversions than arguments");
		struct expr *arg = e->args[argi++];
		if (*end == 's') {
			if (arg->k != E_DOT)
				nml_die(arg->loc, "%%s in an image expects x.image");
			image_sub(g, f, in, arg, b);
		} else if (*end == 'b' && w > 0) {
			image_arg(g, f, in, arg, (int)w, b);
		} else {
			nml_die(e->loc, "image conversions are %%Nb and %%s");
		}
		s = end;
	}
	if (argi != e->nargs)
		nml_die(e->loc, "image format has %d arguments but uses %d", e->nargs, argi);
}

static const char *rule_where(struct flat *f);

static void flat_image(struct gen *g, struct flat *f)
{
	struct bits b = { 0 };
	struct attr *a = rule_attr(f->root->r, "image");

	if (!a || !a->e)
		nml_die(f->root->r->loc, "'%s' has no image attribute", f->root->r->name);
	image_of(g, f, f->root, a->e, &b);
	if (b.n % 8) {
		fprintf(stderr, "%s: error: instruction '%s' has a %d-bit image (not a whole number of bytes)\n",
			rule_where(f), f->name, b.n);
		exit(1);
	}
	f->len = b.n;
	for (int k = 0; k < b.n; k++) {
		int wbit = b.n - 1 - k;
		if (b.field[k] < 0) {
			f->mask |= 1ull << wbit;
			f->value |= (uint64_t)b.fbit[k] << wbit;
		} else {
			struct field *fl = &f->fields[b.field[k]];
			fl->wbit[fl->nbits] = wbit;
			fl->fbit[fl->nbits++] = b.fbit[k];
		}
	}
}

/* ---- constants in context -------------------------------------------- */

static int eval_const_in(struct gen *g, struct inst *in, struct expr *e, int64_t *v)
{
	if (e->k == E_DOT) {
		int pi = param_index(in->r, e->name);
		if (pi < 0 || !in->sub[pi])
			return 0;
		struct attr *a = rule_attr(in->sub[pi]->r, e->attr);
		return a && a->e && eval_const_in(g, in->sub[pi], a->e, v);
	}
	if (e->k == E_BIN || e->k == E_UN) {
		int64_t a, b = 0;
		if (!eval_const_in(g, in, e->a, &a) || (e->b && !eval_const_in(g, in, e->b, &b)))
			return 0;
		struct expr tmp = *e, na = { .k = E_NUM, .num = a }, nb = { .k = E_NUM, .num = b };
		tmp.a = &na;
		tmp.b = &nb;
		return nml_const(g->s, &tmp, v);
	}
	return nml_const(g->s, e, v);
}

/* ---- expressions ----------------------------------------------------- */

enum cmode { C_ACTION, C_SYNTAX };
struct ctx {
	struct gen *g;
	struct flat *f;
	struct inst *in;
	enum cmode mode;
	int cond_depth;
};

static struct type T_U64 = { TY_CARD, 64, 0 }, T_S64 = { TY_INT, 64, 0 }, T_BOOL = { TY_BOOL, 1, 0 },
		   T_STRT = { TY_STRING, 0, 0 }, T_DBL = { TY_FLOAT, 52, 12 }, T_FLT = { TY_FLOAT, 23, 9 };

static const char *ctype(struct type t)
{
	switch (t.k) {
	case TY_BOOL: return "int";
	case TY_FLOAT: return t.w == 23 ? "float" : "double";
	case TY_STRING: return "const char *";
	case TY_INT: return t.w > 64 ? "__int128" : "int64_t";
	default: return t.w > 64 ? "unsigned __int128" : "uint64_t";
	}
}

/* C type used to store a value of type t in machine state. */
static const char *store_ctype(struct type t)
{
	static const char *const u[] = { "uint8_t", "uint16_t", "uint32_t", "uint64_t" };
	static const char *const s[] = { "int8_t", "int16_t", "int32_t", "int64_t" };
	int i = t.w <= 8 ? 0 : t.w <= 16 ? 1 : t.w <= 32 ? 2 : 3;
	if (t.k == TY_FLOAT || t.k == TY_BOOL)
		return ctype(t);
	if (t.w > 64)
		return ctype(t);
	return t.k == TY_INT ? s[i] : u[i];
}

/* Canonical form of v (C text) for type t: masked or sign-extended to t.w. */
static char *canon(struct type t, const char *v)
{
	if (t.k == TY_BOOL)
		return fmt("(!!(%s))", v);
	if (t.k == TY_FLOAT || t.k == TY_STRING)
		return fmt("((%s)(%s))", ctype(t), v);
	if (t.w == 8 || t.w == 16 || t.w == 32 || t.w == 64 || t.w == 128)
		return fmt("((%s)(%s)(%s))", ctype(t), store_ctype(t), v);
	if (t.w > 64)
		nml_die((struct loc){ "?", 0, 0 }, "widths above 64 must be 128");
	if (t.k == TY_INT)
		return fmt("((int64_t)((uint64_t)(%s) << %d) >> %d)", v, 64 - t.w, 64 - t.w);
	return fmt("((uint64_t)(%s) & 0x%llxull)", v, (unsigned long long)((1ull << t.w) - 1));
}

static char *emit_expr(struct ctx *c, struct expr *e, struct type *ty);

static struct ctx sub_ctx(struct ctx *c, struct inst *in)
{
	struct ctx s = *c;
	s.in = in;
	return s;
}

static char *field_ref(struct ctx *c, int fi, struct type *ty)
{
	*ty = c->f->fields[fi].ty;
	return fmt("f%d", fi);
}

static char *storage_read(struct ctx *c, struct storage *st, struct expr *idx, struct loc loc, struct type *ty)
{
	struct type it;
	*ty = st->ty;
	if (st->k == ST_MEM) {
		if (!idx)
			nml_die(loc, "memory '%s' needs an address", st->name);
		char *a = emit_expr(c, idx, &it);
		int w = st->ty.w;
		if (w != 8 && w != 16 && w != 32 && w != 64)
			nml_die(st->loc, "memory element width must be 8, 16, 32 or 64");
		if (c->g->traced && c->mode == C_ACTION)
			return canon(st->ty, fmt("rtl_ld%d%st(&c->core, p->addr, %s)", w, c->g->big_endian ? "be" : "", a));
		return canon(st->ty, fmt("rtl_ld%d%s(&c->core, %s)", w, c->g->big_endian ? "be" : "", a));
	}
	if (st == c->g->pc)
		return c->g->npc ? fmt("((uint64_t)p->addr)") : fmt("c->core.pc");
	if (st == c->g->npc)
		return fmt("c->core.npc");
	const char *pre = st->k == ST_VAR ? "v_" : "c->";
	if (st->count == 1 && !idx)
		return fmt("((%s)%s%s)", ctype(st->ty), pre, st->name);
	if (!idx)
		nml_die(loc, "'%s' is an array: index it", st->name);
	char *i = emit_expr(c, idx, &it);
	if ((st->count & (st->count - 1)) == 0)
		return fmt("((%s)%s%s[(%s) & %llu])", ctype(st->ty), pre, st->name, i, (unsigned long long)st->count - 1);
	return fmt("((%s)%s%s[%s])", ctype(st->ty), pre, st->name, i);
}

static char *ident(struct ctx *c, struct expr *e, struct type *ty)
{
	int pi = param_index(c->in->r, e->name);
	if (pi >= 0) {
		struct inst *sub = c->in->sub[pi];
		if (!sub)
			return field_ref(c, field_of(c->f, c->in, pi), ty);
		if (sub->r->k != R_MODE || !sub->r->value)
			nml_die(e->loc, "'%s' is an op parameter: use %s.ATTRIBUTE", e->name, e->name);
		struct ctx s = sub_ctx(c, sub);
		return emit_expr(&s, sub->r->value, ty);
	}
	struct let *l = nml_let(c->g->s, e->name);
	if (l) {
		int64_t v;
		if (l->e->k == E_STR) {
			*ty = T_STRT;
			return fmt("\"%s\"", l->e->name);
		}
		if (!nml_const(c->g->s, l->e, &v))
			nml_die(l->loc, "let '%s' is not constant", l->name);
		*ty = T_U64;
		return fmt("0x%llxull", (unsigned long long)v);
	}
	struct storage *st = nml_storage(c->g->s, e->name);
	if (st)
		return storage_read(c, st, NULL, e->loc, ty);
	nml_die(e->loc, "unknown name '%s' in %s", e->name, c->in->r->name);
}

static struct type join(struct type a, struct type b, int arith)
{
	struct type t;
	if (a.k == TY_FLOAT || b.k == TY_FLOAT) {
		if (a.k == TY_FLOAT && b.k == TY_FLOAT)
			return (a.w == 52 || b.w == 52) ? T_DBL : T_FLT;
		return a.k == TY_FLOAT ? a : b;
	}
	t.k = (a.k == TY_INT && b.k == TY_INT) ? TY_INT : TY_CARD;
	t.w = a.w > b.w ? a.w : b.w;
	if (arith || t.w < 1)
		t.w = t.w > 64 ? 128 : 64;
	t.e = 0;
	return t;
}

static const char *binop(int op)
{
	switch (op) {
	case T_OROR: return "||"; case T_ANDAND: return "&&"; case T_PIPE: return "|";
	case T_CARET: return "^"; case T_AMP: return "&"; case T_EQEQ: return "==";
	case T_NE: return "!="; case T_LT: return "<"; case T_LE: return "<=";
	case T_GT: return ">"; case T_GE: return ">="; case T_SHL: return "<<";
	case T_SHR: return ">>"; case T_PLUS: return "+"; case T_MINUS: return "-";
	case T_STAR: return "*"; case T_SLASH: return "/"; case T_PERCENT: return "%";
	}
	return "?";
}

static char *emit_bin(struct ctx *c, struct expr *e, struct type *ty)
{
	struct type ta, tb, t;
	char *a = emit_expr(c, e->a, &ta), *b = emit_expr(c, e->b, &tb);

	switch (e->op) {
	case T_OROR: case T_ANDAND:
		*ty = T_BOOL;
		return fmt("((%s) %s (%s))", a, binop(e->op), b);
	case T_EQEQ: case T_NE: case T_LT: case T_LE: case T_GT: case T_GE:
		t = join(ta, tb, 0);
		*ty = T_BOOL;
		return fmt("((%s)(%s) %s (%s)(%s))", ctype(t), a, binop(e->op), ctype(t), b);
	case T_SHL: case T_SHR:
		if (ta.k == TY_FLOAT)
			nml_die(e->loc, "shift of a float");
		t = join(ta, ta, e->op == T_SHL);
		*ty = t;
		if (e->op == T_SHL)   /* shift unsigned: shifting a negative value left is undefined in C */
			return fmt("((%s)((%s)(%s) << (%s)))", ctype(t), t.w > 64 ? "unsigned __int128" : "uint64_t", a, b);
		return fmt("((%s)(%s) %s (%s))", ctype(t), a, binop(e->op), b);
	case T_CONCAT:
		if (ta.k == TY_FLOAT || tb.k == TY_FLOAT || ta.w + tb.w > 64)
			nml_die(e->loc, "concatenation needs integer operands of at most 64 bits together");
		*ty = (struct type){ TY_CARD, ta.w + tb.w, 0 };
		return fmt("(((uint64_t)(%s) << %d) | ((uint64_t)(%s) & 0x%llxull))", a, tb.w, b,
			   (unsigned long long)(tb.w == 64 ? ~0ull : (1ull << tb.w) - 1));
	case T_POW: {
		int64_t v;
		if (!eval_const_in(c->g, c->in, e, &v))
			nml_die(e->loc, "'**' needs constant operands");
		*ty = T_U64;
		return fmt("0x%llxull", (unsigned long long)v);
	}
	default:
		t = join(ta, tb, e->op == T_PLUS || e->op == T_MINUS || e->op == T_STAR);
		if (t.k == TY_FLOAT && (e->op == T_PERCENT || e->op == T_AMP || e->op == T_PIPE || e->op == T_CARET))
			nml_die(e->loc, "operator '%s' on a float", binop(e->op));
		*ty = t;
		return fmt("((%s)(%s) %s (%s)(%s))", ctype(t), a, binop(e->op), ctype(t), b);
	}
}

static char *emit_coerce(struct ctx *c, struct expr *e, struct type *ty)
{
	struct type from;
	char *a = emit_expr(c, e->a, &from);
	struct type to = e->ty;

	*ty = to;
	if (to.k == TY_FLOAT)
		return fmt("((%s)(%s)(%s))", ctype(to), ctype(from), a);
	if (from.k == TY_FLOAT)
		return canon(to, fmt("rtl_f2i(%s, %d, %d)", a, to.k == TY_INT, to.w > 64 ? 64 : to.w));
	return canon(to, fmt("(%s)(%s)", ctype(from), a));
}

/* Intrinsics: name, C function, result type, arguments (-1: any count). */
static const struct intrinsic {
	const char *name, *cname;
	struct type *ret;
	int nargs, core;
} intrinsics[] = {
	{ "as_float", "rtl_as_float", &T_FLT, 1, 0 },
	{ "as_double", "rtl_as_double", &T_DBL, 1, 0 },
	{ "float_bits", "rtl_float_bits", &T_U64, 1, 0 },
	{ "double_bits", "rtl_double_bits", &T_U64, 1, 0 },
	{ "sqrt", "sqrt", NULL, 1, 0 },
	{ "fabs", "fabs", NULL, 1, 0 },
	{ "fmin", "fmin", NULL, 2, 0 },
	{ "fmax", "fmax", NULL, 2, 0 },
	{ "fma", "fma", NULL, 3, 0 },
	{ "fround", "rtl_fround", NULL, 2, 0 },
	{ "isnan", "isnan", &T_BOOL, 1, 0 },
	{ "isinf", "isinf", &T_BOOL, 1, 0 },
	{ "issubnormal", "rtl_issubnormal", &T_BOOL, 1, 0 },
	{ "signbit", "signbit", &T_BOOL, 1, 0 },
	{ "syscall", "rtl_sim_syscall", &T_S64, 7, 1 },
	{ "trap", "rtl_sim_trap", &T_S64, 1, 1 },
};

static char *emit_call(struct ctx *c, struct expr *e, struct type *ty)
{
	const struct intrinsic *in = NULL;
	struct sb b = { 0 };
	struct type t0 = T_U64;

	for (size_t i = 0; i < sizeof(intrinsics) / sizeof(intrinsics[0]); i++)
		if (!strcmp(intrinsics[i].name, e->name))
			in = &intrinsics[i];
	if (!in)
		nml_die(e->loc, "unknown function '%s'", e->name);
	if (in->nargs != e->nargs)
		nml_die(e->loc, "%s takes %d arguments, not %d", e->name, in->nargs, e->nargs);
	if (c->mode != C_ACTION && in->core)
		nml_die(e->loc, "%s is only allowed in actions", e->name);
	sb_add(&b, "%s(", in->cname);
	if (in->core) {
		sb_add(&b, "&c->core, p->addr%s", e->nargs ? ", " : "");
		c->f->flags |= RTL_SIM_F_TRAP;
	}
	for (int i = 0; i < e->nargs; i++) {
		struct type t;
		char *a = emit_expr(c, e->args[i], &t);
		if (i == 0)
			t0 = t;
		if (!in->ret && t.k == TY_FLOAT && t0.k == TY_FLOAT && t.w == 23 && !strstr(in->cname, "rtl_"))
			sb_add(&b, "%s(float)(%s)", i ? ", " : "", a);
		else
			sb_add(&b, "%s%s", i ? ", " : "", a);
	}
	sb_add(&b, ")");
	*ty = in->ret ? *in->ret : t0;
	if (!in->ret && t0.k == TY_FLOAT && t0.w == 23)
		return fmt("((float)%s)", b.s);
	return b.s;
}

static char *emit_expr(struct ctx *c, struct expr *e, struct type *ty)
{
	struct type t;
	char *a;

	switch (e->k) {
	case E_NUM:
		*ty = T_U64;
		if (e->num <= 0xffffffffu)
			*ty = (struct type){ TY_INT, 64, 0 };
		return fmt("%s0x%llxull", ty->k == TY_INT ? "(int64_t)" : "", (unsigned long long)e->num);
	case E_STR:
		*ty = T_STRT;
		return fmt("\"%s\"", e->name);
	case E_ID:
		return ident(c, e, ty);
	case E_INDEX: {
		struct storage *st = nml_storage(c->g->s, e->name);
		if (!st)
			nml_die(e->loc, "'%s' is not a register, variable or memory", e->name);
		return storage_read(c, st, e->a, e->loc, ty);
	}
	case E_DOT: {
		int pi = param_index(c->in->r, e->name);
		if (pi < 0 || !c->in->sub[pi])
			nml_die(e->loc, "'%s' is not a mode or op parameter", e->name);
		struct inst *sub = c->in->sub[pi];
		struct attr *at = rule_attr(sub->r, e->attr);
		if (!at || !at->e)
			nml_die(e->loc, "%s (%s) has no expression attribute '%s'", e->name, sub->r->name, e->attr);
		struct ctx s = sub_ctx(c, sub);
		return emit_expr(&s, at->e, ty);
	}
	case E_BIN:
		return emit_bin(c, e, ty);
	case E_UN:
		a = emit_expr(c, e->a, &t);
		if (e->op == T_BANG) {
			*ty = T_BOOL;
			return fmt("(!(%s))", a);
		}
		if (e->op == T_TILDE && t.k == TY_FLOAT)
			nml_die(e->loc, "'~' on a float");
		*ty = t.k == TY_FLOAT ? t : join(t, t, 1);
		return fmt("(%s(%s)(%s))", e->op == T_MINUS ? "-" : "~", ctype(*ty), a);
	case E_SLICE: {
		int64_t hi, lo;
		if (!eval_const_in(c->g, c->in, e->b, &hi) || !eval_const_in(c->g, c->in, e->c, &lo) || hi < lo || hi > 127)
			nml_die(e->loc, "bit slice bounds must be constants with hi >= lo");
		a = emit_expr(c, e->a, &t);
		*ty = (struct type){ TY_CARD, (int)(hi - lo + 1), 0 };
		if (hi - lo + 1 >= 64)
			return fmt("((uint64_t)((%s)(%s) >> %d))", t.w > 64 ? "unsigned __int128" : "uint64_t", a, (int)lo);
		return fmt("((uint64_t)((%s)(%s) >> %d) & 0x%llxull)", t.w > 64 ? "unsigned __int128" : "uint64_t", a,
			   (int)lo, (unsigned long long)((1ull << (hi - lo + 1)) - 1));
	}
	case E_COND: {
		struct type tb, tc;
		char *cc = emit_expr(c, e->a, &t), *b = emit_expr(c, e->b, &tb), *d = emit_expr(c, e->c, &tc);
		*ty = (tb.k == TY_STRING) ? tb : join(tb, tc, 0);
		return fmt("((%s) ? (%s)(%s) : (%s)(%s))", cc, ctype(*ty), b, ctype(*ty), d);
	}
	case E_COERCE:
		return emit_coerce(c, e, ty);
	case E_CALL:
		return emit_call(c, e, ty);
	case E_FORMAT:
		nml_die(e->loc, "format(...) is only allowed in syntax and image attributes");
	}
	return NULL;
}

/* ---- statements ------------------------------------------------------ */

static void emit_stmts(struct ctx *c, struct stmt *s, struct sb *o, int ind);

static void mark_write(struct ctx *c, struct storage *st)
{
	if (st == c->g->npc || (st == c->g->pc && !c->g->npc)) {
		c->f->flags |= RTL_SIM_F_BRANCH;
		if (c->cond_depth)
			c->f->flags |= RTL_SIM_F_COND;
	}
	if (st == c->g->pc && c->g->npc)
		nml_die(st->loc, "the pc register is read-only when an npc register is declared");
}

/* Emits "LVALUE = VALUE;" for lhs, resolving mode parameters to their value. */
static void emit_assign(struct ctx *c, struct expr *lhs, const char *v, struct type vt, struct sb *o, int ind)
{
	struct type it;
	struct storage *st;

	if (lhs->k == E_SLICE) {
		int64_t hi, lo;
		struct type cur;
		if (!eval_const_in(c->g, c->in, lhs->b, &hi) || !eval_const_in(c->g, c->in, lhs->c, &lo))
			nml_die(lhs->loc, "bit slice bounds must be constants");
		char *old = emit_expr(c, lhs->a, &cur);
		unsigned long long m = (hi - lo + 1) >= 64 ? ~0ull : (1ull << (hi - lo + 1)) - 1;
		char *nv = fmt("(((uint64_t)(%s) & ~(0x%llxull << %d)) | (((uint64_t)(%s) & 0x%llxull) << %d))",
			       old, m, (int)lo, v, m, (int)lo);
		return emit_assign(c, lhs->a, nv, T_U64, o, ind);
	}
	if (lhs->k == E_ID) {
		int pi = param_index(c->in->r, lhs->name);
		if (pi >= 0) {
			struct inst *sub = c->in->sub[pi];
			if (!sub || sub->r->k != R_MODE || !sub->r->value)
				nml_die(lhs->loc, "cannot assign to parameter '%s'", lhs->name);
			struct ctx s = sub_ctx(c, sub);
			return emit_assign(&s, sub->r->value, v, vt, o, ind);
		}
	}
	if (lhs->k != E_ID && lhs->k != E_INDEX)
		nml_die(lhs->loc, "not assignable");
	st = nml_storage(c->g->s, lhs->name);
	if (!st)
		nml_die(lhs->loc, "'%s' is not a register, variable or memory", lhs->name);
	mark_write(c, st);
	if (st->k == ST_MEM) {
		if (lhs->k != E_INDEX)
			nml_die(lhs->loc, "memory '%s' needs an address", st->name);
		char *a = emit_expr(c, lhs->a, &it);
		if (c->g->traced)
			sb_add(o, "%*srtl_st%d%st(&c->core, p->addr, %s, (uint64_t)(%s));\n", ind, "", st->ty.w,
			       c->g->big_endian ? "be" : "", a, v);
		else
			sb_add(o, "%*srtl_st%d%s(&c->core, %s, (uint64_t)(%s));\n", ind, "", st->ty.w,
			       c->g->big_endian ? "be" : "", a, v);
		return;
	}
	char *val = canon(st->ty, fmt("(%s)(%s)", ctype(vt), v));
	if (st == c->g->pc) {
		sb_add(o, "%*sc->core.pc = %s;\n", ind, "", val);
		return;
	}
	if (st == c->g->npc) {
		sb_add(o, "%*sc->core.npc = %s;\n", ind, "", val);
		return;
	}
	const char *pre = st->k == ST_VAR ? "v_" : "c->";
	if (lhs->k == E_ID) {
		if (st->count != 1)
			nml_die(lhs->loc, "'%s' is an array: index it", st->name);
		sb_add(o, "%*s%s%s = %s;\n", ind, "", pre, st->name, val);
		return;
	}
	char *i = emit_expr(c, lhs->a, &it);
	if ((st->count & (st->count - 1)) == 0)
		sb_add(o, "%*s%s%s[(%s) & %llu] = %s;\n", ind, "", pre, st->name, i,
		       (unsigned long long)st->count - 1, val);
	else
		sb_add(o, "%*s%s%s[%s] = %s;\n", ind, "", pre, st->name, i, val);
}

static void emit_attr_stmt(struct ctx *c, struct stmt *s, struct sb *o, int ind)
{
	struct expr *e = s->lhs;
	struct inst *in = c->in;
	const char *aname = e->k == E_DOT ? e->attr : e->name;

	if (e->k == E_DOT) {
		int pi = param_index(c->in->r, e->name);
		if (pi < 0 || !c->in->sub[pi])
			nml_die(e->loc, "'%s' is not a mode or op parameter", e->name);
		in = c->in->sub[pi];
	}
	struct attr *a = rule_attr(in->r, aname);
	if (!a)
		nml_die(e->loc, "'%s' has no attribute '%s'", in->r->name, aname);
	if (!a->is_action)
		nml_die(e->loc, "attribute '%s' of '%s' is not an action ({ ... })", aname, in->r->name);
	struct ctx sc = sub_ctx(c, in);
	emit_stmts(&sc, a->body, o, ind);
}

static void emit_stmt(struct ctx *c, struct stmt *s, struct sb *o, int ind)
{
	struct type t;
	char *v;

	switch (s->k) {
	case S_ASSIGN:
		v = emit_expr(c, s->rhs, &t);
		emit_assign(c, s->lhs, v, t, o, ind);
		break;
	case S_CALL:
		v = emit_expr(c, s->rhs, &t);
		sb_add(o, "%*s(void)%s;\n", ind, "", v);
		break;
	case S_ATTR:
		emit_attr_stmt(c, s, o, ind);
		break;
	case S_IF:
		v = emit_expr(c, s->cond, &t);
		sb_add(o, "%*sif (%s) {\n", ind, "", v);
		c->cond_depth++;
		emit_stmts(c, s->then, o, ind + 4);
		if (s->els) {
			sb_add(o, "%*s} else {\n", ind, "");
			emit_stmts(c, s->els, o, ind + 4);
		}
		c->cond_depth--;
		sb_add(o, "%*s}\n", ind, "");
		break;
	case S_SWITCH:
		v = emit_expr(c, s->cond, &t);
		sb_add(o, "%*sswitch ((uint64_t)(%s)) {\n", ind, "", v);
		c->cond_depth++;
		for (int i = 0; i < s->ncases; i++) {
			if (s->cases[i].val) {
				int64_t k;
				if (!eval_const_in(c->g, c->in, s->cases[i].val, &k))
					nml_die(s->cases[i].val->loc, "case value must be constant");
				sb_add(o, "%*scase 0x%llxull: {\n", ind, "", (unsigned long long)k);
			} else {
				sb_add(o, "%*sdefault: {\n", ind, "");
			}
			emit_stmts(c, s->cases[i].body, o, ind + 4);
			sb_add(o, "%*s    break;\n%*s}\n", ind, "", ind, "");
		}
		c->cond_depth--;
		sb_add(o, "%*s}\n", ind, "");
		break;
	}
}

static void emit_stmts(struct ctx *c, struct stmt *s, struct sb *o, int ind)
{
	for (; s; s = s->next)
		emit_stmt(c, s, o, ind);
}

/* ---- syntax (disassembler) ------------------------------------------- */

static void emit_syntax(struct ctx *c, struct expr *e, struct sb *o);

static void syntax_sub(struct ctx *c, struct expr *e, struct sb *o)
{
	int pi = param_index(c->in->r, e->name);
	if (pi < 0 || !c->in->sub[pi])
		nml_die(e->loc, "'%s' is not a mode or op parameter", e->name);
	struct attr *a = rule_attr(c->in->sub[pi]->r, e->attr);
	if (!a || !a->e)
		nml_die(e->loc, "'%s' has no %s attribute", c->in->sub[pi]->r->name, e->attr);
	struct ctx s = sub_ctx(c, c->in->sub[pi]);
	emit_syntax(&s, a->e, o);
}

static void emit_cstring(struct sb *o, const char *s, size_t n)
{
	sb_add(o, "\"");
	for (size_t i = 0; i < n; i++) {
		if (s[i] == '"' || s[i] == '\\')
			sb_add(o, "\\%c", s[i]);
		else if (s[i] == '\n')
			sb_add(o, "\\n");
		else if (s[i] == '%')
			sb_add(o, "%%%%");
		else
			sb_add(o, "%c", s[i]);
	}
	sb_add(o, "\"");
}

static void emit_syntax_format(struct ctx *c, struct expr *e, struct sb *o)
{
	const char *s = e->name, *lit = s;
	int argi = 0;

	for (; *s; s++) {
		if (*s != '%')
			continue;
		if (s[1] == '%') {
			sb_add(o, "    P(\"%%%%\");\n");
			lit = ++s + 1;
			continue;
		}
		if (s > lit) {
			sb_add(o, "    P(");
			emit_cstring(o, lit, s - lit);
			sb_add(o, ");\n");
		}
		const char *spec = s++;
		while (*s && strchr("#0- +123456789l", *s))
			s++;
		if (!*s)
			nml_die(e->loc, "format string ends inside a conversion");
		if (argi >= e->nargs)
			nml_die(e->loc, "format has more conversions than arguments");
		struct expr *arg = e->args[argi++];
		if (*s == 's' && arg->k == E_DOT && !strcmp(arg->attr, "syntax")) {
			syntax_sub(c, arg, o);
		} else {
			struct type t;
			char *v = emit_expr(c, arg, &t);
			char flags[32];
			int n = 0;
			for (const char *q = spec + 1; q < s && n < 24; q++)
				if (*q != 'l')
					flags[n++] = *q;
			flags[n] = 0;
			if (*s == 's')
				sb_add(o, "    P(\"%%%ss\", (const char *)(%s));\n", flags, v);
			else if (strchr("dioxXuc", *s))
				sb_add(o, "    P(\"%%%sll%c\", (long long)(%s));\n", flags, *s == 'c' ? 'd' : *s, v);
			else if (strchr("fgeaG", *s))
				sb_add(o, "    P(\"%%%s%c\", (double)(%s));\n", flags, *s, v);
			else
				nml_die(e->loc, "unsupported conversion '%%%c' in format", *s);
		}
		lit = s + 1;
	}
	if (*lit) {
		sb_add(o, "    P(");
		emit_cstring(o, lit, strlen(lit));
		sb_add(o, ");\n");
	}
	if (argi != e->nargs)
		nml_die(e->loc, "format has %d arguments but uses %d", e->nargs, argi);
}

static void emit_syntax(struct ctx *c, struct expr *e, struct sb *o)
{
	struct type t;

	switch (e->k) {
	case E_STR:
		sb_add(o, "    P(");
		emit_cstring(o, e->name, strlen(e->name));
		sb_add(o, ");\n");
		return;
	case E_FORMAT:
		return emit_syntax_format(c, e, o);
	case E_DOT:
		return syntax_sub(c, e, o);
	case E_COND:
		sb_add(o, "    if (%s) {\n", emit_expr(c, e->a, &t));
		emit_syntax(c, e->b, o);
		sb_add(o, "    } else {\n");
		emit_syntax(c, e->c, o);
		sb_add(o, "    }\n");
		return;
	default:
		nml_die(e->loc, "syntax must be a string, format(...), x.syntax or an if expression");
	}
}

/* ---- whole description ----------------------------------------------- */

static void find_pc(struct gen *g)
{
	for (int i = 0; i < g->s->nstores; i++) {
		struct storage *st = &g->s->stores[i];
		if (st->is_pc)
			g->pc = st;
		if (st->is_npc)
			g->npc = st;
	}
	if (!g->pc)
		g->pc = nml_storage(g->s, "PC");   /* the seed's example names it so */
	if (!g->pc)
		nml_die((struct loc){ "description", 1, 1 }, "no register is marked 'pc = 1'");
	if (g->pc->count != 1 || (g->npc && g->npc->count != 1))
		nml_die(g->pc->loc, "pc and npc registers must be scalars");
}

static const char *let_str(struct gen *g, const char *name, const char *def)
{
	struct let *l = nml_let(g->s, name);
	if (!l)
		return def;
	if (l->e->k != E_STR)
		nml_die(l->loc, "let %s must be a string", name);
	return l->e->name;
}

static int64_t let_int(struct gen *g, const char *name, int64_t def)
{
	struct let *l = nml_let(g->s, name);
	int64_t v;
	if (!l)
		return def;
	if (!nml_const(g->s, l->e, &v))
		nml_die(l->loc, "let %s must be a constant", name);
	return v;
}

static void build_flats(struct gen *g)
{
	struct rule *start = nml_rule(g->s, "instruction");
	if (!start)
		nml_die((struct loc){ "description", 1, 1 }, "no 'op instruction' (the start symbol)");
	struct list all = expand(g, start, 0);
	g->flats = nml_alloc(sizeof(*g->flats) * (all.n + 1));
	for (int i = 0; i < all.n; i++) {
		struct flat *f = &g->flats[g->nflats++];
		f->root = all.v[i];
		collect_fields(f, f->root);
		f->name = nml_strdup(flat_name(f->root));
		for (int k = 0, dup = 1; k < i; k++)
			if (!strcmp(g->flats[k].name, f->name) || !strcmp(g->flats[k].name, fmt("%s_%d", f->name, dup)))
				dup++, f->name = fmt("%s_%d", flat_name(f->root), dup);
		flat_image(g, f);
		for (int k = 0; k < f->nfields; k++) {
			struct field *fl = &f->fields[k];
			if (fl->ty.k != TY_CARD && fl->ty.k != TY_INT)
				nml_die(fl->in->r->params[fl->param].loc, "instruction fields must be card or int");
			if (fl->ty.w > 32)
				nml_die(fl->in->r->params[fl->param].loc, "instruction fields are limited to 32 bits");
		}
		if (f->nfields > 6)
			nml_die(f->root->r->loc, "instruction '%s' has %d fields (at most 6)", f->name, f->nfields);
	}
}

static const char *rule_where(struct flat *f)
{
	struct inst *in = f->root;
	while (1) {
		int next = -1;
		for (int i = 0; i < in->r->nparams; i++)
			if (in->sub[i] && in->sub[i]->r->k == R_OP)
				next = i;
		if (next < 0)
			break;
		in = in->sub[next];
	}
	return fmt("%s:%d", in->r->loc.file, in->r->loc.line);
}

static int check_overlaps(struct gen *g)
{
	int bad = 0;
	for (int i = 0; i < g->nflats; i++)
		for (int j = i + 1; j < g->nflats; j++) {
			struct flat *a = &g->flats[i], *b = &g->flats[j];
			uint64_t common = a->mask & b->mask;
			if ((a->value ^ b->value) & common)
				continue;
			if (a->mask == b->mask) {
				fprintf(stderr, "%s: error: ambiguous encodings: '%s' and '%s' (%s) have the same image\n",
					rule_where(a), a->name, b->name, rule_where(b));
				bad = 1;
			} else if (common != a->mask && common != b->mask) {
				fprintf(stderr, "%s: error: overlapping encodings: '%s' and '%s' (%s) both match 0x%llx\n",
					rule_where(a), a->name, b->name, rule_where(b),
					(unsigned long long)(a->value | b->value));
				bad = 1;
			}
			/* otherwise one is strictly more specific: it is tried first */
		}
	return bad;
}

static void emit_fields(struct flat *f, FILE *o)
{
	for (int k = 0; k < f->nfields; k++) {
		if (f->fields[k].ty.k == TY_INT)
			fprintf(o, "    const int64_t f%d __attribute__((unused)) = p->f[%d];\n", k, k);
		else
			fprintf(o, "    const uint64_t f%d __attribute__((unused)) = (uint32_t)p->f[%d];\n", k, k);
	}
}

static void emit_handler(struct gen *g, struct flat *f, int id, FILE *o)
{
	struct ctx c = { g, f, f->root, C_ACTION, 0 };
	struct attr *a = rule_attr(f->root->r, "action");
	struct sb body = { 0 };

	if (!a || !a->is_action)
		nml_die(f->root->r->loc, "'%s' has no action attribute", f->root->r->name);
	emit_stmts(&c, a->body, &body, 4);
	fprintf(o, "/* %s */\nstatic void H%s%d(struct rtl_sim_cpu *cpu, const struct rtl_sim_pinsn *p)\n{\n", f->name,
		g->traced ? "T" : "", id);
	fprintf(o, "    struct S *c = (struct S *)cpu;\n    (void)c;\n");
	emit_fields(f, o);
	for (int i = 0; i < g->s->nstores; i++) {
		struct storage *st = &g->s->stores[i];
		if (st->k == ST_VAR)
			fprintf(o, "    %s v_%s%s __attribute__((unused)) = %s;\n", store_ctype(st->ty), st->name,
				st->count > 1 ? fmt("[%llu]", (unsigned long long)st->count) : "", st->count > 1 ? "{ 0 }" : "0");
	}
	if ((f->flags & RTL_SIM_F_BRANCH) && g->npc && g->delay_slots)
		fprintf(o, "    c->core.npc = p->addr + %d;\n", 2 * f->len / 8);   /* after the delay slot */
	else if ((f->flags & RTL_SIM_F_BRANCH) && g->npc)
		fprintf(o, "    c->core.npc = p->addr + %d;\n", f->len / 8);
	else if (f->flags & RTL_SIM_F_BRANCH)
		fprintf(o, "    c->core.pc = p->addr;\n");
	fputs(body.s ? body.s : "", o);
	if ((f->flags & RTL_SIM_F_BRANCH) && g->npc && !g->delay_slots)
		fprintf(o, "    c->core.pc = c->core.npc;\n");
	fprintf(o, "    RTL_SIM_NEXT(cpu, p);\n}\n\n");
}

static void emit_extract(struct flat *f, FILE *o)
{
	for (int k = 0; k < f->nfields; k++) {
		struct field *fl = &f->fields[k];
		fprintf(o, "        { uint64_t v = 0;");
		for (int i = 0; i < fl->nbits;) {
			int j = i;
			while (j + 1 < fl->nbits && fl->wbit[j + 1] == fl->wbit[j] - 1 && fl->fbit[j + 1] == fl->fbit[j] - 1)
				j++;
			int n = j - i + 1;
			fprintf(o, " v |= ((w >> %d) & 0x%llxull) << %d;", fl->wbit[j],
				(unsigned long long)((1ull << n) - 1), fl->fbit[j]);
			i = j + 1;
		}
		if (fl->ty.k == TY_INT && fl->ty.w < 64)
			fprintf(o, " v = (uint64_t)((int64_t)(v << %d) >> %d);", 64 - fl->ty.w, 64 - fl->ty.w);
		fprintf(o, " p->f[%d] = (int32_t)(uint32_t)v; }\n", k);
	}
}

static int by_specificity(const void *a, const void *b)
{
	const struct flat *x = *(struct flat *const *)a, *y = *(struct flat *const *)b;
	return __builtin_popcountll(y->mask) - __builtin_popcountll(x->mask);
}

static void emit_decoder(struct gen *g, FILE *o)
{
	struct flat **order = nml_alloc(sizeof(*order) * g->nflats);
	int maxlen = 0, minlen = 64;

	for (int i = 0; i < g->nflats; i++) {
		order[i] = &g->flats[i];
		maxlen = g->flats[i].len > maxlen ? g->flats[i].len : maxlen;
		minlen = g->flats[i].len < minlen ? g->flats[i].len : minlen;
	}
	if (g->big_endian && minlen != maxlen)
		nml_die((struct loc){ "description", 1, 1 }, "variable-length big-endian encodings are not supported");
	qsort(order, g->nflats, sizeof(*order), by_specificity);
	fprintf(o, "static const struct { uint64_t mask, value; uint16_t id; uint8_t len; } pats[] = {\n");
	for (int i = 0; i < g->nflats; i++)
		fprintf(o, "    { 0x%llxull, 0x%llxull, %d, %d }, /* %s */\n", (unsigned long long)order[i]->mask,
			(unsigned long long)order[i]->value, (int)(order[i] - g->flats), order[i]->len / 8, order[i]->name);
	fprintf(o, "};\n\nstatic const rtl_sim_handler handlers[] = {\n");
	for (int i = 0; i < g->nflats; i++)
		fprintf(o, "    H%d,\n", i);
	fprintf(o, "};\n\nstatic void extract(unsigned id, uint64_t w, struct rtl_sim_pinsn *p)\n{\n    switch (id) {\n");
	for (int i = 0; i < g->nflats; i++) {
		fprintf(o, "    case %d:\n", i);
		emit_extract(&g->flats[i], o);
		fprintf(o, "        break;\n");
	}
	fprintf(o, "    }\n}\n\n");
	/* First-level index: the K bits fixed in the most encodings select the
	 * short list of candidates (still in specificity order). */
	int cnt[64] = { 0 }, sel[8], k = 0;
	for (int i = 0; i < g->nflats; i++)
		for (int b = 0; b < 64; b++)
			cnt[b] += (g->flats[i].mask >> b) & 1;
	for (; k < 8; k++) {
		int best = -1;
		for (int b = 0; b < 64; b++) {
			int used = 0;
			for (int j = 0; j < k; j++)
				used |= sel[j] == b;
			if (!used && cnt[b] && (best < 0 || cnt[b] > cnt[best]))
				best = b;
		}
		if (best < 0)
			break;
		sel[k] = best;
	}
	fprintf(o, "static const uint8_t sel[] = {");
	for (int j = 0; j < k; j++)
		fprintf(o, " %d,", sel[j]);
	fprintf(o, " 0 };\nstatic const uint16_t cand_start[] = {");
	int total = 0;
	struct sb lists = { 0 };
	for (int v = 0; v < (1 << k); v++) {
		fprintf(o, "%s%d", v ? ", " : " ", total);
		for (int i = 0; i < g->nflats; i++) {
			int ok = 1;
			for (int j = 0; j < k && ok; j++)
				if ((order[i]->mask >> sel[j]) & 1)
					ok = (int)((order[i]->value >> sel[j]) & 1) == ((v >> j) & 1);
			if (ok) {
				sb_add(&lists, "%s%d", total ? ", " : " ", i);
				total++;
			}
		}
	}
	fprintf(o, ", %d };\nstatic const uint16_t cand[] = {%s, 0 };\n\n", total, lists.s ? lists.s : " 0");
	fprintf(o, "static int decode(const uint8_t *b, size_t avail, struct rtl_sim_pinsn *p)\n{\n"
		   "    uint64_t w = 0;\n    size_t n = avail < %d ? avail : %d;\n", maxlen / 8, maxlen / 8);
	if (g->big_endian)
		fprintf(o, "    for (size_t i = 0; i < n; i++) w = (w << 8) | b[i];\n");
	else
		fprintf(o, "    for (size_t i = 0; i < n; i++) w |= (uint64_t)b[i] << (8 * i);\n");
	fprintf(o, "    unsigned v = 0;\n    for (unsigned j = 0; j < %d; j++)\n        v |= (unsigned)((w >> sel[j]) & 1) << j;\n", k);
	fprintf(o, "    for (unsigned c = cand_start[v]; c < cand_start[v + 1]; c++) {\n        unsigned i = cand[c];\n"
		   "        if (pats[i].len > n || (w & pats[i].mask) != pats[i].value)\n            continue;\n"
		   "        memset(p->f, 0, sizeof p->f);\n"
		   "        p->id = pats[i].id;\n        p->len = pats[i].len;\n        p->fn = handlers[p->id];\n"
		   "        p->flags = flags[p->id];\n        extract(p->id, w, p);\n        return 0;\n    }\n    return -1;\n}\n\n");
	g->flats[0].len = g->flats[0].len; /* keep */
	fprintf(o, "#define MAXLEN %d\n#define MINLEN %d\n\n", maxlen / 8, minlen / 8);
}

static void emit_disasm(struct gen *g, FILE *o)
{
	fprintf(o, "#define P(...) (pos += snprintf(buf + (pos < n ? pos : n), pos < n ? n - pos : 0, __VA_ARGS__))\n");
	fprintf(o, "static int disasm(const struct rtl_sim_pinsn *p, char *buf, size_t n)\n{\n    size_t pos = 0;\n"
		   "    if (n) buf[0] = 0;\n    switch (p->id) {\n");
	for (int i = 0; i < g->nflats; i++) {
		struct flat *f = &g->flats[i];
		struct ctx c = { g, f, f->root, C_SYNTAX, 0 };
		struct attr *a = rule_attr(f->root->r, "syntax");
		struct sb s = { 0 };
		if (!a || !a->e)
			nml_die(f->root->r->loc, "'%s' has no syntax attribute", f->root->r->name);
		emit_syntax(&c, a->e, &s);
		fprintf(o, "    case %d: {\n", i);
		emit_fields(f, o);
		for (int k = 0; k < f->nfields; k++)
			fprintf(o, "    (void)f%d;\n", k);
		fprintf(o, "%s    break; }\n", s.s ? s.s : "");
	}
	fprintf(o, "    }\n    return (int)pos;\n}\n#undef P\n\n");
}

static void emit_state(struct gen *g, FILE *o)
{
	fprintf(o, "struct S {\n    struct rtl_sim_cpu core;\n");
	for (int i = 0; i < g->s->nstores; i++) {
		struct storage *st = &g->s->stores[i];
		if (st->k != ST_REG || st == g->pc || st == g->npc)
			continue;
		if (st->count == 1)
			fprintf(o, "    %s %s;\n", store_ctype(st->ty), st->name);
		else
			fprintf(o, "    %s %s[%llu];\n", store_ctype(st->ty), st->name, (unsigned long long)st->count);
	}
	fprintf(o, "};\n\n");
}

static void emit_tables(struct gen *g, FILE *o)
{
	fprintf(o, "static const char *const names[] = {\n");
	for (int i = 0; i < g->nflats; i++)
		fprintf(o, "    \"%s\",\n", g->flats[i].name);
	fprintf(o, "};\n\nstatic const struct rtl_sim_regdesc regs[] = {\n");
	fprintf(o, "    { \"%s\", offsetof(struct rtl_sim_cpu, pc), 8, 1, 0 },\n", g->pc->name);
	for (int i = 0; i < g->s->nstores; i++) {
		struct storage *st = &g->s->stores[i];
		if (st->k != ST_REG || st == g->pc || st == g->npc)
			continue;
		fprintf(o, "    { \"%s\", offsetof(struct S, %s), sizeof(%s), %llu, %d },\n", st->name, st->name,
			store_ctype(st->ty), (unsigned long long)st->count, st->ty.k == TY_FLOAT);
	}
	fprintf(o, "};\n\n");
}

int nml_generate(struct spec *s, const char *prefix, FILE *o)
{
	struct gen g = { .s = s, .prefix = prefix };

	find_pc(&g);
	g.big_endian = !strcmp(let_str(&g, "endianness", "little"), "big");
	g.delay_slots = (int)let_int(&g, "delay_slots", 0);
	if (g.delay_slots && !g.npc)
		nml_die((struct loc){ "description", 1, 1 }, "delay_slots needs an npc register");
	build_flats(&g);
	if (check_overlaps(&g))
		return 1;
	fprintf(o, "/* Generated by reticle-nmlgen from a Sim-nML description: do not edit. */\n"
		   "#include \"sim/isa.h\"\n#include <stdio.h>\n\n");
	emit_state(&g, o);
	for (int i = 0; i < g.nflats; i++)
		emit_handler(&g, &g.flats[i], i, o);
	/* the same routines reporting each memory access (rtl_sim_add_mem_call) */
	g.traced = 1;
	for (int i = 0; i < g.nflats; i++)
		emit_handler(&g, &g.flats[i], i, o);
	g.traced = 0;
	fprintf(o, "static const rtl_sim_handler traced[] = {\n");
	for (int i = 0; i < g.nflats; i++)
		fprintf(o, "    HT%d,\n", i);
	fprintf(o, "};\n\n");
	fprintf(o, "static const uint8_t flags[] = {");
	for (int i = 0; i < g.nflats; i++)
		fprintf(o, "%s%d", i ? ", " : " ", g.flats[i].flags);
	fprintf(o, " };\n\n");
	emit_decoder(&g, o);
	emit_disasm(&g, o);
	emit_tables(&g, o);
	fprintf(o, "const struct rtl_sim_isa rtl_sim_isa_%s = {\n"
		   "    .name = \"%s\", .elf_machine = %d, .elf_class = %d, .big_endian = %d,\n"
		   "    .syscall_abi = \"%s\", .stack_pointer = \"%s\", .tls_register = \"%s\", .delay_slots = %d,\n"
		   "    .state_size = sizeof(struct S), .max_len = MAXLEN, .min_len = MINLEN, .ninsn = %d,\n"
		   "    .names = names, .flags = flags, .regs = regs, .nregs = sizeof(regs) / sizeof(regs[0]),\n"
		   "    .decode = decode, .disasm = disasm, .traced = traced,\n};\n",
		prefix, let_str(&g, "name", prefix), (int)let_int(&g, "elf_machine", 0), (int)let_int(&g, "elf_class", 32),
		g.big_endian, let_str(&g, "syscall_abi", ""), let_str(&g, "stack_pointer", ""), let_str(&g, "tls_register", ""),
		g.delay_slots,
		g.nflats);
	fprintf(stderr, "nmlgen: %s: %d instructions\n", prefix, g.nflats);
	return 0;
}
