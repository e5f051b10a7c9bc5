/* The probe language (docs/probe.md): clauses of points, a predicate and
 * aggregations, parsed into a program whose plan compiles each clause to
 * snippets with ids and predicates (reticle/probe.h), inline. */
#ifndef RETICLE_PROBE_LANG_H
#define RETICLE_PROBE_LANG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <reticle/probe.h>

/* A place: the entry or the returns of the functions whose names match
 * FUNC (a shell pattern), in modules whose file name matches MODULE (NULL:
 * any). */
struct probe_point {
	bool exit;
	char *module, *func;
	bool matched;             /* a function that ran matched it (set by plans, atomically) */
};

/* One test of a predicate: Q, with its operand named. */
struct probe_test {
	struct rtl_predicate q;
	char *symbol;             /* RTL_OPND_GLOBAL: the variable, in the probed function's module */
	size_t onstack;           /* RTL_OPND_ONSTACK: index in the program's onstack patterns */
	bool typed;               /* a cast gave its size (else a variable's own size is read) */
};

enum probe_agg_kind { PROBE_COUNT, PROBE_TIME, PROBE_HIST };

enum probe_key { PROBE_KEY_NONE, PROBE_KEY_FUNC, PROBE_KEY_VALUE };

/* An aggregation: @NAME, @NAME[func] (a value per function) or
 * @NAME[OPERAND] (a value per value of an argument, the return value or
 * a variable). */
struct probe_agg {
	char *name;
	enum probe_agg_kind kind;
	enum probe_key key;
};

/* What a printf() argument is. */
enum probe_fmt_arg { PROBE_FMT_VALUE, PROBE_FMT_STR, PROBE_FMT_FUNC, PROBE_FMT_TID, PROBE_FMT_PID };
enum { PROBE_MAX_FMT_ARGS = 8 };

struct probe_action {
	size_t agg;               /* index in the program's aggregations; SIZE_MAX: a printf() */
	uint32_t id;              /* its snippet's id (counter), or its timer's number */
	struct probe_test key;    /* PROBE_KEY_VALUE, or hist(OPERAND): the operand */
	bool latency;             /* hist(latency): its timer's number is ID */
	/* printf(FMT, ARGS...): a line printed by reticle at each hit (the
	 * slow path, RTL_PRIM_CALL); VALUE and STR arguments' operands in FARGS */
	char *fmt;
	struct probe_test fargs[PROBE_MAX_FMT_ARGS];
	uint8_t fkind[PROBE_MAX_FMT_ARGS];   /* enum probe_fmt_arg */
	size_t nfargs;
};

struct probe_clause {
	struct probe_point *pts;
	size_t npts;
	struct probe_test *tests;
	size_t ntests;
	struct probe_action *acts;
	size_t nacts;
	int line;
	char *text;               /* as written */
	bool removed;             /* taken out while the program runs: plans skip it */
	bool removing;            /* being taken out (its functions made again) */
};

struct probe_prog {
	struct probe_clause *cl;
	size_t ncl;
	struct probe_agg *aggs;
	size_t naggs;
	/* onstack(PATTERN)'s functions, each group sharing a timer: number
	 * onstack_timer[i] */
	char **onstack;
	uint32_t *onstack_timer;
	size_t nonstack;
	uint32_t next_id;         /* the next counter's id (above RTL_MAX_TIMER_ID) */
	uint32_t next_timer;      /* the next timer's number */
};

/* Parses TEXT into *OUT. Returns 0, or -EINVAL with a message "line L,
 * column C: ..." in ERR (LEN bytes). */
int probe_parse(const char *text, struct probe_prog *out, char *err, size_t len);
/* Where a program stands, and back to it (clauses added after dropped). */
struct probe_mark {
	size_t ncl, naggs, nonstack;
	uint32_t next_id, next_timer;
};
struct probe_mark probe_prog_mark(const struct probe_prog *p);
void probe_prog_truncate(struct probe_prog *p, const struct probe_mark *m);
/* Parses TEXT as more clauses of P (ids going on from P's); on an error P
 * is as it was. */
int probe_parse_more(const char *text, struct probe_prog *p, char *err, size_t len);
void probe_prog_free(struct probe_prog *p);

/* Whether POINT's patterns match function NAME of MODULE (a path). */
bool probe_point_matches(const struct probe_point *pt, const char *module, const char *name);
/* Whether shell pattern PATTERN matches function NAME, as the symbol
 * table has it or as people write it: demangled (C++, Rust) without its
 * parameter list, Rust hash or crate disambiguators (fib::fib,
 * std::vector*::push_back, middle for _Z6middlei). */
bool probe_name_matches(const char *pattern, const char *name);
/* The ':' that ends MODULE in MODULE:FUNCTION (not one of C++'s and
 * Rust's '::'), or NULL. */
char *probe_module_colon(char *s);
/* Onstack pattern I of P ([MODULE:]F) as a point, its strings in BUF. */
struct probe_point probe_onstack_point(const struct probe_prog *p, size_t i, char *buf, size_t len);

#endif
