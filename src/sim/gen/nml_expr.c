/* Sim-nML generator: actions and syntax attributes to C, in the context of
 * one flat instruction (which rule instance a name belongs to). */
#include <stdlib.h>
#include <string.h>
#include "nml_gen.h"

/* ---- expressions ----------------------------------------------------- */

static struct type T_U64 = { TY_CARD, 64, 0 }, T_S64 = { TY_INT, 64, 0 }, T_BOOL = { TY_BOOL, 1, 0 },
		   T_STRT = { TY_STRING, 0, 0 }, T_DBL = { TY_FLOAT, 52, 12 }, T_FLT = { TY_FLOAT, 23, 9 };

const char *ctype(struct type t)
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
const char *store_ctype(struct type t)
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
	{ "raise", "rtl_sim_raise", &T_S64, 1, 1 },
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
		/* raise() may stop the guest but is no reason to end a block */
		c->f->flags |= strcmp(in->name, "raise") ? RTL_SIM_F_TRAP : RTL_SIM_F_MAYSTOP;
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

char *emit_expr(struct ctx *c, struct expr *e, struct type *ty)
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

void emit_stmts(struct ctx *c, struct stmt *s, struct sb *o, int ind);

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

void emit_stmts(struct ctx *c, struct stmt *s, struct sb *o, int ind)
{
	for (; s; s = s->next)
		emit_stmt(c, s, o, ind);
}

/* ---- syntax (disassembler) ------------------------------------------- */

void emit_syntax(struct ctx *c, struct expr *e, struct sb *o);

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

void emit_syntax(struct ctx *c, struct expr *e, struct sb *o)
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

