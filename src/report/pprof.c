/* pprof's profile (profile.proto, uncompressed: go tool pprof and pprof
 * read it as they read a gzipped one) from the calling-context tree: one
 * sample per call path, threads and images merged, its values its calls
 * and its exclusive time in nanoseconds; a location per function (its
 * name, its module as the file). pprof adds up the cumulative time itself. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "report/cct.h"
#include "util/array.h"

struct pb {
	uint8_t *b;
	size_t n, cap;
	int failed;
};

static void pb_byte(struct pb *p, uint8_t v)
{
	if (rtl_grow(&p->b, &p->cap, p->n + 1, 1)) {
		p->failed = 1;
		return;
	}
	p->b[p->n++] = v;
}

static void pb_varint(struct pb *p, uint64_t v)
{
	do {
		pb_byte(p, (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0)));
		v >>= 7;
	} while (v);
}

static void pb_uint(struct pb *p, unsigned field, uint64_t v)
{
	pb_varint(p, field << 3);
	pb_varint(p, v);
}

static void pb_bytes(struct pb *p, unsigned field, const void *b, size_t n)
{
	pb_varint(p, field << 3 | 2);
	pb_varint(p, n);
	if (rtl_grow(&p->b, &p->cap, p->n + n, 1)) {
		p->failed = 1;
		return;
	}
	memcpy(p->b + p->n, b, n);
	p->n += n;
}

/* Appends message M as field FIELD of P and empties M. */
static void pb_message(struct pb *p, unsigned field, struct pb *m)
{
	p->failed |= m->failed;
	pb_bytes(p, field, m->b, m->n);
	m->n = 0;
}

struct pprof {
	struct pb out, msg, sub;
	size_t nstrings;
	uint64_t *fn_loc;         /* per row (by id order): its location id, 0 before it has one */
	uint64_t *stack;
	size_t nstack, capstack;
	const struct cct *t;
};

static uint64_t string_id(struct pprof *x, const char *s)
{
	pb_bytes(&x->out, 6, s, strlen(s));
	return x->nstrings++;
}

/* The location of node I's function: written (with its function) on first use. */
static uint64_t location_of(struct pprof *x, size_t i)
{
	const rtl_profile_function *f = rpt_rows_by_id(&x->t->rows, x->t->n[i].function);
	size_t row = f ? (size_t)(f - x->t->rows.fn) : x->t->rows.n;
	if (x->fn_loc[row])
		return x->fn_loc[row];
	uint64_t id = row + 1;
	char buf[32];
	uint64_t name = string_id(x, cct_name(x->t, i, buf));
	uint64_t file = string_id(x, f && f->module ? f->module : "?");
	pb_uint(&x->msg, 1, id);             /* Function.id */
	pb_uint(&x->msg, 2, name);           /* name */
	pb_uint(&x->msg, 3, name);           /* system_name */
	pb_uint(&x->msg, 4, file);           /* filename */
	pb_message(&x->out, 5, &x->msg);
	pb_uint(&x->sub, 1, id);             /* Line.function_id */
	pb_uint(&x->msg, 1, id);             /* Location.id */
	pb_uint(&x->msg, 3, f ? f->addr : 0);   /* address (link-time) */
	pb_message(&x->msg, 4, &x->sub);
	pb_message(&x->out, 4, &x->msg);
	return x->fn_loc[row] = id;
}

static int sample(const struct cct *t, size_t node, const char *path, void *user)
{
	(void)path;
	struct pprof *x = user;
	const struct cct_node *n = &t->n[node];
	long long ns = llround(n->exclusive * 1e9);
	if (!n->calls && ns <= 0)
		return 0;
	x->nstack = 0;
	for (size_t i = node; i != CCT_NONE; i = t->n[i].parent) {
		if (rtl_grow(&x->stack, &x->capstack, x->nstack + 1, sizeof(*x->stack)))
			return -ENOMEM;
		x->stack[x->nstack++] = location_of(x, i);
	}
	for (size_t i = 0; i < x->nstack; i++)   /* leaf first */
		pb_varint(&x->sub, x->stack[i]);
	pb_message(&x->msg, 1, &x->sub);         /* Sample.location_id, packed */
	pb_varint(&x->sub, n->calls);
	pb_varint(&x->sub, (uint64_t)(ns > 0 ? ns : 0));
	pb_message(&x->msg, 2, &x->sub);         /* value, packed */
	pb_message(&x->out, 2, &x->msg);
	return x->out.failed ? -ENOMEM : 0;
}

static uint64_t value_type(struct pprof *x, unsigned field, const char *type, const char *unit)
{
	uint64_t t = string_id(x, type), u = string_id(x, unit);
	pb_uint(&x->msg, 1, t);
	pb_uint(&x->msg, 2, u);
	pb_message(&x->out, field, &x->msg);
	return t;
}

int rtl_report_pprof(rtl_profile *p, const rtl_report_options *o, FILE *out)
{
	struct cct t;
	int err = cct_load(p, 0, o, &t);
	if (err)
		return err;
	struct pprof x = { .t = &t, .fn_loc = calloc(t.rows.n + 1, sizeof(uint64_t)) };
	if (!x.fn_loc)
		err = -ENOMEM;
	if (!err) {
		string_id(&x, "");                       /* string_table[0] */
		value_type(&x, 1, t.sampled ? "samples" : "calls", "count");     /* sample_type */
		pb_uint(&x.out, 14, value_type(&x, 1, t.sampled ? "cpu" : "time", "nanoseconds"));   /* default_sample_type */
		err = cct_walk_paths(&t, sample, &x);
	}
	if (!err && (x.out.failed || x.msg.failed || x.sub.failed))
		err = -ENOMEM;
	if (!err && x.out.n && fwrite(x.out.b, 1, x.out.n, out) != x.out.n)
		err = -EIO;
	free(x.out.b);
	free(x.msg.b);
	free(x.sub.b);
	free(x.fn_loc);
	free(x.stack);
	cct_free(&t);
	return err ? err : rpt_out_status(out);
}
