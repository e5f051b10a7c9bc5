/* reticle annotate: one function's Ir per source line (DWARF line tables
 * and the source files), and per instruction where DWARF does not place
 * the code (or on request). Counts come from bbcount's blocks: each block
 * is decoded from the module's file bytes and its count given to each of
 * its instructions (cg_places.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <reticle/binary.h>
#include <reticle/error.h>
#include "isa/x86_64/insn.h"
#include "report/cg_places.h"
#include "report/report_priv.h"
#include "util/array.h"

#define CONTEXT 2     /* source lines shown around counted ones */

struct ann_block { uint64_t addr, count; uint32_t ninstrs; };
struct ann_blocks { struct ann_block *v; size_t n, cap; };

static int add_block(const rtl_profile_block *b, void *user)
{
	struct ann_blocks *bl = user;

	if (rtl_grow(&bl->v, &bl->cap, bl->n + 1, sizeof(*bl->v)))
		return -ENOMEM;
	bl->v[bl->n++] = (struct ann_block){ b->addr, b->count, b->ninstrs };
	return 0;
}

/* An executed instruction: its block's count and its source place. */
struct ann_insn { struct cg_place at; uint64_t count; };
struct ann_insns { struct ann_insn *v; size_t n, cap; int known, unplaced; };

/* The executed instruction at ADDR, or NULL. */
static const struct ann_insn *insn_at(const struct ann_insns *in, uint64_t addr)
{
	for (size_t i = 0; i < in->n; i++)
		if (in->v[i].at.addr == addr)
			return &in->v[i];
	return NULL;
}

static void print_count(FILE *out, uint64_t c, int any)
{
	if (any)
		fprintf(out, "%12" PRIu64 "  ", c);
	else
		fprintf(out, "%12s  ", ".");
}

/* The lines of FILE with counts (LINES[n]: Ir of line n, HAS[n]: code
 * there), CONTEXT lines around them; longer runs without code elided. */
static void print_source(FILE *out, const char *file, const uint64_t *lines,
			 const unsigned char *has, uint32_t max)
{
	FILE *src = fopen(file, "r");
	char *text = NULL;
	size_t cap = 0;
	uint32_t printed = 0;

	fprintf(out, "-- %s%s\n", file, src ? "" : " (source not found: line numbers only)");
	for (uint32_t l = 1; l <= max + CONTEXT; l++) {
		int near = 0;
		ssize_t got = src ? getline(&text, &cap, src) : -1;

		if (src && got < 0 && l > max)
			break;
		for (uint32_t k = l > CONTEXT ? l - CONTEXT : 1; k <= l + CONTEXT && k <= max; k++)
			near |= has[k];
		if (!near)
			continue;
		if (printed && printed + 1 != l)
			fputs("         ...\n", out);
		print_count(out, l <= max ? lines[l] : 0, l <= max && has[l]);
		fprintf(out, "%5" PRIu32 "  ", l);
		if (got > 0) {
			fwrite(text, 1, (size_t)got, out);
			if (text[got - 1] != '\n')
				fputc('\n', out);
		} else {
			fputc('\n', out);
		}
		printed = l;
	}
	free(text);
	if (src)
		fclose(src);
}

/* Per file with placed instructions: Ir per line. */
static int source_view(FILE *out, const struct cg_places *pl, const struct ann_insns *in)
{
	for (uint32_t file = 1; file < pl->nfiles; file++) {
		uint32_t max = 0;

		for (size_t i = 0; i < in->n; i++)
			if (in->v[i].at.file == file && in->v[i].at.line > max)
				max = in->v[i].at.line;
		if (!max)
			continue;
		uint64_t *lines = calloc(max + 1, sizeof(*lines));
		unsigned char *has = calloc(max + 1, 1);

		if (!lines || !has) {
			free(lines);
			free(has);
			return -ENOMEM;
		}
		for (size_t i = 0; i < in->n; i++)
			if (in->v[i].at.file == file) {
				lines[in->v[i].at.line] += in->v[i].count;
				has[in->v[i].at.line] = 1;
			}
		print_source(out, pl->files[file], lines, has, max);
		free(lines);
		free(has);
	}
	return 0;
}

/* Up to 15 bytes at ADDR (fewer at the end of a segment or of END): how many. */
static size_t read_code(rtl_binary *bin, uint64_t addr, uint64_t end, uint8_t code[15])
{
	size_t len = end - addr < 15 ? (size_t)(end - addr) : 15;

	while (len && rtl_binary_read(bin, addr, code, len))
		len--;
	return len;
}

/* The instructions of F from the file's bytes with their counts; ONLY_UNPLACED:
 * just the executed ones DWARF does not place. */
static void disasm_view(FILE *out, const rtl_profile_function *f, rtl_binary *bin,
			const struct ann_insns *in, int only_unplaced)
{
	uint64_t at = f->addr, end = f->addr + f->size;
	int header = 0;

	while (at < end) {
		uint8_t code[15];
		size_t len = read_code(bin, at, end, code);
		const struct ann_insn *e = insn_at(in, at);
		char text[128];
		int n;

		if (!len || !(n = x86_format(code, len, at, text, sizeof(text))))
			break;
		if (!only_unplaced || (e && !e->at.line && e->count)) {
			if (!header++)
				fprintf(out, "-- instructions%s\n",
					only_unplaced ? " without a source line" : "");
			print_count(out, e ? e->count : 0, e != NULL);
			fprintf(out, "%8" PRIx64 ":  %s\n", at, text);
		}
		at += (uint64_t)n;
	}
}

/* Decodes F's executed blocks into IN (each instruction with its block's
 * count) and places them when the module has DWARF. */
static int collect(const struct ann_blocks *bl, const rtl_profile_function *f, rtl_binary *bin,
		   struct cg_places *pl, struct ann_insns *in)
{
	int lines = rtl_binary_has_source_lines(bin), err;

	for (size_t b = 0; b < bl->n; b++) {
		uint64_t at = bl->v[b].addr;

		for (uint32_t k = 0; k < bl->v[b].ninstrs; k++) {
			uint8_t code[15];
			size_t len = read_code(bin, at, at + 15, code);
			struct x86_insn x;
			struct ann_insn *e;

			if (!len || x86_decode(code, len, at, &x))
				break;
			if (rtl_grow(&in->v, &in->cap, in->n + 1, sizeof(*in->v)))
				return -ENOMEM;
			e = &in->v[in->n++];
			e->at = (struct cg_place){ at, 0, 0 };
			e->count = bl->v[b].count;
			if (lines && (err = cgp_addr(pl, f->module, at, &e->at)))
				return err;
			in->unplaced |= !e->at.line && e->count;
			at += x.len;
		}
	}
	in->known = pl->known;
	return 0;
}

static int annotate_one(rtl_profile *p, const rtl_profile_function *f, const char *shown,
			int disasm, FILE *out)
{
	struct ann_blocks bl = { 0 };
	struct ann_insns in = { 0 };
	struct cg_places pl = { 0 };
	rtl_binary *bin;
	int err;

	fprintf(out, "%s  (%s 0x%" PRIx64 ", %" PRIu64 " bytes)", shown, rpt_basename(f->module),
		f->addr, f->size);
	if (f->have & RTL_HAVE_CALLS)
		fprintf(out, "  calls %" PRIu64, f->calls);
	if (f->have & RTL_HAVE_INSTRS)
		fprintf(out, "  Ir %" PRIu64, f->instrs);
	fputc('\n', out);
	if ((err = rtl_profile_foreach_block(p, f->id, add_block, &bl)))
		goto out;
	if (!(bin = rpt_sources_binary(&pl.src, f->module))) {
		fprintf(out, "-- %s cannot be read\n", f->module);
		goto out;
	}
	if (!bl.n)
		fputs("-- no block counts (bbcount did not measure it)\n", out);
	if ((err = collect(&bl, f, bin, &pl, &in)))
		goto out;
	if (!disasm && in.known && (err = source_view(out, &pl, &in)))
		goto out;
	if (disasm || !in.known || in.unplaced)
		disasm_view(out, f, bin, &in, !disasm && in.known);
out:
	free(in.v);
	free(bl.v);
	cgp_free(&pl);
	return err;
}

int rtl_report_annotate(rtl_profile *p, const char *function, int disasm, FILE *out)
{
	struct rpt_rows rows = { 0 };
	int err, found = 0;

	if ((err = rpt_rows_load(p, 1, 1, &rows)))
		goto out;
	for (size_t i = 0; i < rows.n && !err; i++) {
		const rtl_profile_function *f = &rows.fn[i];
		char *d = f->name ? rtl_demangle(f->name) : NULL;

		if (f->name && (!strcmp(f->name, function) || (d && !strcmp(d, function)))) {
			if (found++)
				fputc('\n', out);
			err = annotate_one(p, f, d ? d : f->name, disasm, out);
		}
		free(d);
	}
	if (!err)
		err = found ? rpt_out_status(out) : -ENOENT;
out:
	rpt_rows_free(&rows);
	return err;
}
