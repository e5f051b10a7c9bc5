/* Sim-nML dialect: syntax tree shared by the parser (nml_parse.c) and the
 * generator (nml_flat.c, nml_emit.c). Host tool only: this code runs at build
 * time, so it reports errors on stderr and exits (see nml_die). The tree is
 * never freed: the tool exits when done. Grammar: docs/sim-nml.md. */
#ifndef RETICLE_NML_H
#define RETICLE_NML_H

#include <stdint.h>
#include <stdio.h>

struct loc { const char *file; int line, col; };

enum tkind {
	T_EOF, T_ID, T_NUM, T_STR,
	T_LP, T_RP, T_LB, T_RB, T_LC, T_RC, T_COMMA, T_SEMI, T_COLON, T_DOT, T_DOTDOT,
	T_EQ, T_PIPE, T_HASH,
	/* operators */
	T_OROR, T_ANDAND, T_AMP, T_CARET, T_EQEQ, T_NE, T_LT, T_LE, T_GT, T_GE,
	T_SHL, T_SHR, T_CONCAT, T_PLUS, T_MINUS, T_STAR, T_SLASH, T_PERCENT, T_POW,
	T_TILDE, T_BANG,
};

struct token { enum tkind k; char *s; uint64_t num; struct loc loc; };

/* Value types: card(n) unsigned, int(n) signed, bool, float(mantissa, exponent)
 * (only float(23,9) and float(52,12)), string (format results, constants). */
enum tykind { TY_CARD, TY_INT, TY_BOOL, TY_FLOAT, TY_STRING };
struct type { enum tykind k; int w; int e; };

enum ekind {
	E_NUM, E_STR, E_ID, E_INDEX, E_DOT, E_BIN, E_UN, E_SLICE, E_COND,
	E_COERCE, E_FORMAT, E_CALL,
};

struct expr {
	enum ekind k;
	int op;                 /* enum tkind of the operator */
	char *name, *attr;      /* E_ID, E_INDEX, E_DOT, E_CALL, E_STR */
	uint64_t num;
	struct expr *a, *b, *c; /* operands; E_INDEX: a = index; E_SLICE: x<b..c> on a */
	struct expr **args;     /* E_FORMAT (args after the string), E_CALL */
	int nargs;
	struct type ty;         /* E_COERCE target */
	struct loc loc;
};

enum skind { S_ASSIGN, S_ATTR, S_IF, S_SWITCH, S_CALL };

struct scase { struct expr *val; /* NULL: default */ struct stmt *body; };

struct stmt {
	enum skind k;
	struct expr *lhs, *rhs;     /* S_ASSIGN; S_ATTR: lhs is E_DOT or E_ID; S_CALL: rhs */
	struct expr *cond;          /* S_IF, S_SWITCH */
	struct stmt *then, *els;
	struct scase *cases;
	int ncases;
	struct stmt *next;
	struct loc loc;
};

struct attr {
	char *name;
	struct expr *e;             /* expression attributes */
	struct stmt *body;          /* action-like attributes ({ ... }) */
	int is_action;
	struct loc loc;
};

struct param { char *name; char *tname; struct type ty; int is_type; struct loc loc; };

enum rkind { R_MODE, R_OP };
struct rule {
	enum rkind k;
	char *name;
	int is_or;
	char **alts; int nalts;
	struct param *params; int nparams;
	struct expr *value;         /* mode value expression */
	struct attr *attrs; int nattrs;
	struct loc loc;
};

enum stkind { ST_REG, ST_VAR, ST_MEM };
struct storage {
	enum stkind k;
	char *name;
	uint64_t count;             /* reg/var: elements; mem: address bits */
	struct type ty;
	struct attr *attrs; int nattrs;
	int is_pc, is_npc;
	char *alias;                /* mem alias = OTHER[0] */
	struct loc loc;
};

struct let { char *name; struct expr *e; struct loc loc; };
struct tdef { char *name; struct type ty; struct loc loc; };

struct spec {
	struct let *lets; int nlets;
	struct tdef *types; int ntypes;
	struct storage *stores; int nstores;
	struct rule *rules; int nrules;
};

void nml_die(struct loc loc, const char *fmt, ...) __attribute__((noreturn, format(printf, 2, 3)));
void *nml_alloc(size_t n);
char *nml_strdup(const char *s);
void nml_parse_file(const char *path, struct spec *spec);

/* Lookups (NULL when absent). */
struct rule *nml_rule(struct spec *s, const char *name);
struct storage *nml_storage(struct spec *s, const char *name);
struct let *nml_let(struct spec *s, const char *name);
struct tdef *nml_tdef(struct spec *s, const char *name);
struct attr *nml_attr(struct attr *a, int n, const char *name);
/* Constant evaluation of let expressions and array sizes. */
int nml_const(struct spec *s, struct expr *e, int64_t *out);

/* Generator entry (nml_gen.c): writes C for the whole description. */
int nml_generate(struct spec *s, const char *prefix, FILE *out);

#endif
