/* Sim-nML generator: writes the C file of a description: state, one
 * routine per instruction (and its memory-reporting variant), the decoder,
 * the disassembler and the struct rtl_sim_isa of src/sim/isa.h. */
#include <stdlib.h>
#include <string.h>
#include "nml_gen.h"

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
	if (f->flags & RTL_SIM_F_MAYSTOP)   /* a precise stop: the next instructions do not run */
		fprintf(o, "    if (c->core.stop)\n        return;\n");
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
		   "    .syscall_return = \"%s\",\n"
		   "    .state_size = sizeof(struct S), .max_len = MAXLEN, .min_len = MINLEN, .ninsn = %d,\n"
		   "    .names = names, .flags = flags, .regs = regs, .nregs = sizeof(regs) / sizeof(regs[0]),\n"
		   "    .decode = decode, .disasm = disasm, .traced = traced,\n};\n",
		prefix, let_str(&g, "name", prefix), (int)let_int(&g, "elf_machine", 0), (int)let_int(&g, "elf_class", 32),
		g.big_endian, let_str(&g, "syscall_abi", ""), let_str(&g, "stack_pointer", ""), let_str(&g, "tls_register", ""),
		g.delay_slots, let_str(&g, "syscall_return", ""),
		g.nflats);
	fprintf(stderr, "nmlgen: %s: %d instructions\n", prefix, g.nflats);
	return 0;
}

