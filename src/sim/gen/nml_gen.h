/* Internal interfaces of reticle-nmlgen's generator, shared by
 * nml_flat.c (flattening, images, encoding checks), nml_expr.c (actions and
 * syntax to C) and nml_emit.c (the generated file). Host tool: nothing is
 * freed. */
#ifndef RETICLE_NML_GEN_H
#define RETICLE_NML_GEN_H

#include <stdint.h>
#include <stdio.h>
#include "nml.h"
#include "../isa.h"

/* flattening larger than this is a mistake (or a cartesian explosion) */
#define NML_MAX_INSNS 4096

struct sb { char *s; size_t n, cap; };
void sb_add(struct sb *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
char *fmt(const char *f, ...) __attribute__((format(printf, 1, 2)));

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

enum cmode { C_ACTION, C_SYNTAX };
struct ctx {
	struct gen *g;
	struct flat *f;
	struct inst *in;
	enum cmode mode;
	int cond_depth;
};


/* nml_flat.c */
int param_index(struct rule *r, const char *name);
struct attr *rule_attr(struct rule *r, const char *name);
int field_of(struct flat *f, struct inst *in, int param);
int eval_const_in(struct gen *g, struct inst *in, struct expr *e, int64_t *v);
const char *rule_where(struct flat *f);
void find_pc(struct gen *g);
const char *let_str(struct gen *g, const char *name, const char *def);
int64_t let_int(struct gen *g, const char *name, int64_t def);
void build_flats(struct gen *g);
int check_overlaps(struct gen *g);

/* nml_expr.c */
const char *ctype(struct type t);
const char *store_ctype(struct type t);
char *emit_expr(struct ctx *c, struct expr *e, struct type *ty);
void emit_stmts(struct ctx *c, struct stmt *s, struct sb *o, int ind);
void emit_syntax(struct ctx *c, struct expr *e, struct sb *o);

#endif
