/* Sim-nML generator, first half: flattens the op/mode hierarchy from the
 * start symbol 'instruction' into flat instructions, computes each one's
 * encoding and fields from its image attribute, and checks that no two
 * encodings overlap ambiguously. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include "nml_gen.h"

/* ---- string builder ------------------------------------------------- */


void sb_add(struct sb *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void sb_add(struct sb *b, const char *fmt, ...)
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

char *fmt(const char *f, ...)
{
	va_list ap;
	char *s;

	va_start(ap, f);
	if (vasprintf(&s, f, ap) < 0)
		exit(1);
	va_end(ap);
	return s;
}

static void list_add(struct list *l, struct inst *in)
{
	l->v = realloc(l->v, sizeof(*l->v) * (l->n + 1));
	l->v[l->n++] = in;
}

static struct list expand(struct gen *g, struct rule *r, int depth);

static void product(struct gen *g, struct rule *r, int i, struct inst **chosen, struct list *out)
{
	if (i == r->nparams) {
		if (out->n >= NML_MAX_INSNS)
			nml_die(r->loc, "'%s' expands to more than %d instructions", r->name, NML_MAX_INSNS);
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

int field_of(struct flat *f, struct inst *in, int param)
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

int param_index(struct rule *r, const char *name);

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

int param_index(struct rule *r, const char *name)
{
	for (int i = 0; i < r->nparams; i++)
		if (!strcmp(r->params[i].name, name))
			return i;
	return -1;
}

struct attr *rule_attr(struct rule *r, const char *name)
{
	return nml_attr(r->attrs, r->nattrs, name);
}

int eval_const_in(struct gen *g, struct inst *in, struct expr *e, int64_t *v);

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

int eval_const_in(struct gen *g, struct inst *in, struct expr *e, int64_t *v)
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

/* ---- whole description ----------------------------------------------- */

void find_pc(struct gen *g)
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

const char *let_str(struct gen *g, const char *name, const char *def)
{
	struct let *l = nml_let(g->s, name);
	if (!l)
		return def;
	if (l->e->k != E_STR)
		nml_die(l->loc, "let %s must be a string", name);
	return l->e->name;
}

int64_t let_int(struct gen *g, const char *name, int64_t def)
{
	struct let *l = nml_let(g->s, name);
	int64_t v;
	if (!l)
		return def;
	if (!nml_const(g->s, l->e, &v))
		nml_die(l->loc, "let %s must be a constant", name);
	return v;
}

void build_flats(struct gen *g)
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

const char *rule_where(struct flat *f)
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

int check_overlaps(struct gen *g)
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

