/* lcov tracefile (genhtml, lcov --summary): per source file, the lines
 * that DWARF's line tables give code (DA), the functions that start there
 * (FN, FNDA) and, when the edges collector ran, the conditional branches
 * (BRDA). Lines are placed from the profile's blocks (bbcount, cover): a
 * block that ran ran each of its instructions, so every line-table range
 * it overlaps ran. A line's count is that of its most executed block within
 * one function, added over the functions that have code on it (a header's
 * inline function in several places), as gcov counts a line once per entry
 * into it. Files that are not on disk are left out: genhtml renders only
 * sources it can read.
 *
 * Lines are statements, as gcov counts them: a function's prologue, which
 * DWARF gives the line of its '{', is the line of its name (gcov's line
 * for the function), and a row that only undoes the frame (leave, pop,
 * ret, registers reloaded from the frame: the '}' after a return
 * statement) is no line. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <reticle/binary.h>
#include "isa/x86_64/insn.h"
#include "report/cg_places.h"
#include "report/labels.h"
#include "report/report_priv.h"
#include "util/array.h"

/* A line with code (fn < 0) or a count for it from one function's blocks. */
struct lc_line { const char *file; uint32_t line; int64_t fn; uint64_t count; };
struct lc_func { const char *file; uint32_t line; const char *name; uint64_t count; };
struct lc_branch { const char *file; uint32_t line; uint64_t site, taken, not_taken; };

struct lcov {
	struct rpt_rows rows;                 /* functions by module, then address */
	struct rpt_sources src;
	rtl_profile_block *blocks;            /* by function, then address */
	size_t nblocks, capblocks;
	rtl_profile_branch *br;               /* by function, then site */
	size_t nbr, capbr;
	rtl_source_range *ranges;             /* the current module's, by address */
	size_t nranges, capranges;
	struct lc_entry { uint64_t addr, size; const char *name, *file; int line; } *entries, *labels;
	size_t nentries, capentries;          /* its functions' names, by address */
	size_t nlabels, caplabels;            /* its goto labels, by address */
	struct rpt_text text;                 /* the source file last read */
	uint32_t *code;                       /* one function's lines with code */
	size_t ncode, capcode;
	struct lc_jump { uint64_t target; uint32_t line; } *jumps;
	size_t njumps, capjumps;              /* its conditional jumps */
	struct lc_line *lines;
	size_t nlines, caplines;
	struct lc_func *fns;
	size_t nfns, capfns;
	struct lc_branch *brs;
	size_t nbrs, capbrs;
};

static int add_block(const rtl_profile_block *b, void *user)
{
	struct lcov *x = user;

	if (rtl_grow(&x->blocks, &x->capblocks, x->nblocks + 1, sizeof(*b)))
		return -ENOMEM;
	x->blocks[x->nblocks++] = *b;
	return 0;
}

static int add_branch(const rtl_profile_branch *b, void *user)
{
	struct lcov *x = user;

	if (rtl_grow(&x->br, &x->capbr, x->nbr + 1, sizeof(*b)))
		return -ENOMEM;
	x->br[x->nbr++] = *b;
	return 0;
}

static int add_range(const rtl_source_range *r, void *user)
{
	struct lcov *x = user;

	if (rtl_grow(&x->ranges, &x->capranges, x->nranges + 1, sizeof(*r)))
		return -ENOMEM;
	x->ranges[x->nranges++] = *r;
	return 0;
}

static int add_name(const rtl_source_name *n, void *user)
{
	struct lcov *x = user;
	struct lc_entry **v = n->is_label ? &x->labels : &x->entries;
	size_t *len = n->is_label ? &x->nlabels : &x->nentries;

	if (rtl_grow(v, n->is_label ? &x->caplabels : &x->capentries, *len + 1, sizeof(**v)))
		return -ENOMEM;
	(*v)[(*len)++] = (struct lc_entry){ n->addr, n->size, n->name, n->file, n->line };
	return 0;
}

static int cmp_entry(const void *a, const void *b)
{
	const struct lc_entry *x = a, *y = b;
	return (x->addr > y->addr) - (x->addr < y->addr);
}

/* Whether [R->addr, R->end) only undoes a frame and returns, perhaps
 * counting the way out in a global word first (gcov's own counters, in a
 * --coverage build: "mov x(%rip),%rax; add $1,%rax; mov %rax,x(%rip)"). */
static bool epilogue(rtl_binary *bin, const rtl_source_range *r)
{
	uint64_t at = r->addr;
	struct x86_insn in = { 0 };

	while (at < r->end) {
		uint8_t code[15];
		size_t len = cgp_decode(bin, at, code, &in);
		if (!len)
			return false;
		bool counter = (in.rip_rel && (in.opcode == 0x8b || in.opcode == 0x89)) ||
			       (!in.has_mem && in.opcode == 0x83);
		/* mov disp(%rbp), %reg: a callee-saved register restored, or
		 * the hidden pointer of a struct returned in memory into %rax */
		bool frame_load = len >= 3 && (code[0] & 0xfb) == 0x48 && code[1] == 0x8b &&
				  ((code[2] & 0xc7) == 0x45 || (code[2] & 0xc7) == 0x85);
		if (!counter && !frame_load && !x86_is_epilogue(code, len))
			return false;
		at += len;
	}
	return in.kind == X86_RET;
}

/* The ranges as gcov's lines (see the top): prologues moved to the
 * function's line, epilogues dropped (line 0). An epilogue's block is
 * shared by every way out of the function, so a label or "return;" just
 * above it, which gcov counts by its own edges, is not placed there. */
static void as_statements(struct lcov *x, rtl_binary *bin)
{
	qsort(x->entries, x->nentries, sizeof(*x->entries), cmp_entry);
	qsort(x->labels, x->nlabels, sizeof(*x->labels), cmp_entry);
	for (size_t i = 0, k = 0; i < x->nranges; i++) {
		rtl_source_range *r = &x->ranges[i];
		struct lc_entry key = { .addr = r->addr }, *e;

		/* code no function of the source holds: the compiler's own
		 * (a --coverage build's constructor, placed on the last line) */
		while (k + 1 < x->nentries && x->entries[k + 1].addr <= r->addr)
			k++;
		if (x->nentries && (x->entries[k].addr > r->addr ||
				    (x->entries[k].size && r->addr >= x->entries[k].addr + x->entries[k].size))) {
			r->line = 0;
			continue;
		}
		e = x->nentries ? bsearch(&key, x->entries, x->nentries, sizeof(key), cmp_entry) : NULL;
		if (e && !r->shared_start) {
			r->file = e->file;
			r->line = e->line;
		} else if (!e && epilogue(bin, r)) {
			r->line = 0;
		}
	}
}

static int add_line(struct lcov *x, const rtl_source_range *r, int64_t fn, uint64_t count)
{
	if (r->line <= 0)
		return 0;
	if (rtl_grow(&x->lines, &x->caplines, x->nlines + 1, sizeof(*x->lines)))
		return -ENOMEM;
	x->lines[x->nlines++] = (struct lc_line){ r->file, (uint32_t)r->line, fn, count };
	return 0;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return (x > y) - (x < y);
}

static int cmp_range(const void *a, const void *b)
{
	const rtl_source_range *x = a, *y = b;
	return (x->addr > y->addr) - (x->addr < y->addr);
}

/* The index of the first range that may overlap ADDR (sorted, disjoint). */
static size_t first_range(const struct lcov *x, uint64_t addr)
{
	size_t lo = 0, hi = x->nranges;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (x->ranges[mid].end <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The range holding ADDR, or NULL. */
static const rtl_source_range *range_at(const struct lcov *x, uint64_t addr)
{
	size_t i = first_range(x, addr);
	return i < x->nranges && x->ranges[i].addr <= addr ? &x->ranges[i] : NULL;
}

/* The first of the N items of SIZE bytes at V whose int64_t at offset 0
 * (function id) is ID, or N. */
static size_t first_of(const void *v, size_t n, size_t size, int64_t id)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (*(const int64_t *)((const char *)v + mid * size) < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The count of F's block that holds ADDR (0 when none ran there). */
static uint64_t count_at(const struct lcov *x, const rtl_profile_function *f, uint64_t addr)
{
	uint64_t count = 0;

	for (size_t b = first_of(x->blocks, x->nblocks, sizeof(*x->blocks), f->id);
	     b < x->nblocks && x->blocks[b].function == f->id && x->blocks[b].addr <= addr; b++)
		count = x->blocks[b].count;
	return count;
}

/* LINE of FILE, a line of F's that ran COUNT times, its code at ADDR. */
static int add_line_counted(struct lcov *x, const rtl_profile_function *f, const char *file,
			    uint32_t line, uint64_t addr, uint64_t count)
{
	rtl_source_range r = { addr, addr, file, (int)line, 0 };
	int err = add_line(x, &r, -1, 0);
	return err ? err : add_line(x, &r, f->id, count);
}

/* LINE of FILE, a line of F's whose code starts at ADDR. */
static int add_line_at(struct lcov *x, const rtl_profile_function *f, const char *file,
		       uint32_t line, uint64_t addr)
{
	return add_line_counted(x, f, file, line, addr, count_at(x, f, addr));
}

/* F's lines with code in ENTRY's file (sorted, once each), and its
 * conditional jumps with their lines. */
static int code_and_jumps(struct lcov *x, rtl_binary *bin, const rtl_profile_function *f,
			  const rtl_source_range *entry)
{
	x->ncode = x->njumps = 0;
	for (size_t i = first_range(x, f->addr); i < x->nranges && x->ranges[i].addr < f->addr + f->size; i++) {
		const rtl_source_range *r = &x->ranges[i];
		if (!r->line || strcmp(r->file, entry->file))
			continue;
		if (rtl_grow(&x->code, &x->capcode, x->ncode + 1, sizeof(*x->code)))
			return -ENOMEM;
		x->code[x->ncode++] = (uint32_t)r->line;
	}
	for (uint64_t at = f->addr; at < f->addr + f->size;) {
		uint8_t bytes[15];
		struct x86_insn in;
		size_t len = cgp_decode(bin, at, bytes, &in);
		const rtl_source_range *r;

		if (!len)
			break;
		if (in.kind == X86_JCC && (r = range_at(x, at)) && r->line > 0) {
			/* both ways: GCC may have turned the condition around */
			if (rtl_grow(&x->jumps, &x->capjumps, x->njumps + 2, sizeof(*x->jumps)))
				return -ENOMEM;
			x->jumps[x->njumps++] = (struct lc_jump){ in.target, (uint32_t)r->line };
			x->jumps[x->njumps++] = (struct lc_jump){ at + len, (uint32_t)r->line };
		}
		at += len;
	}
	qsort(x->code, x->ncode, sizeof(*x->code), cmp_u32);
	return 0;
}

/* The first address of LINE's code in F. */
static uint64_t line_start(const struct lcov *x, const rtl_profile_function *f, const char *file,
			   uint32_t line)
{
	uint64_t best = UINT64_MAX;

	for (size_t i = first_range(x, f->addr); i < x->nranges && x->ranges[i].addr < f->addr + f->size; i++)
		if ((uint32_t)x->ranges[i].line == line && !strcmp(x->ranges[i].file, file) &&
		    x->ranges[i].addr < best)
			best = x->ranges[i].addr;
	return best;
}

/* The count of LINE's most executed code in F: where the ways into it
 * join (a va_end after an if/else runs whenever the function ends, though
 * the line's first instruction may be the jump that ends the if). */
static uint64_t line_count(const struct lcov *x, const rtl_profile_function *f, const char *file,
			   uint32_t line)
{
	uint64_t best = 0;

	for (size_t i = first_range(x, f->addr); i < x->nranges && x->ranges[i].addr < f->addr + f->size; i++)
		if ((uint32_t)x->ranges[i].line == line && !strcmp(x->ranges[i].file, file)) {
			uint64_t c = count_at(x, f, x->ranges[i].addr);
			best = c > best ? c : best;
		}
	return best;
}

/* Whether a conditional jump other than a switch's dispatch goes to ADDR,
 * taken or not: then GCC had a label of its own there (the end of an if),
 * which it kept instead of the case label, and gcov does not count the
 * case's line. */
static bool jumped_to(const struct lcov *x, uint64_t addr)
{
	for (size_t j = 0; j < x->njumps; j++) {
		size_t len;
		const char *s;
		if (x->jumps[j].target == addr &&
		    (!(s = rpt_text_line(&x->text, x->jumps[j].line, &len)) || !rpt_switch_line(s, len)))
			return true;
	}
	return false;
}

/* Whether LINE has code in the function code_and_jumps() looked at. */
static bool has_code(const struct lcov *x, uint32_t line)
{
	for (size_t k = 0; k < x->ncode; k++)
		if (x->code[k] == line)
			return true;
	return false;
}

/* Whether the switch whose case label is at line CASE_LINE (the one
 * whose braces hold it, found in the text upward) has code of its own:
 * not when GCC folded it (a switch on a constant, sizeof say), and then
 * gcov counts none of its case labels. */
static bool switch_kept(const struct lcov *x, uint32_t case_line, uint32_t entry_line)
{
	int depth = 0;
	for (uint32_t n = case_line; n > entry_line; n--) {
		size_t len;
		const char *s = rpt_text_line(&x->text, n, &len);
		if (!s)
			return true;
		for (size_t i = len; i-- > 0;)
			depth += s[i] == '}' ? 1 : s[i] == '{' ? -1 : 0;
		if (depth >= 0 || n == case_line)
			continue;
		/* the brace that opens the switch's body: on its line or below it */
		if (rpt_switch_line(s, len))
			return has_code(x, n);
		const char *up = n - 1 > entry_line ? rpt_text_line(&x->text, n - 1, &len) : NULL;
		return up && rpt_switch_line(up, len) ? has_code(x, n - 1) : true;
	}
	return true;
}

/* The lines of F that gcov counts and DWARF gives no code: its goto labels
 * (DWARF's), and from the text between its lines with code, case labels
 * (the first of a run, unless a goto label heads the same code) and va_end
 * calls. ENTRY is the range of its first line. */
static int place_labels(struct lcov *x, rtl_binary *bin, const rtl_profile_function *f,
			const rtl_source_range *entry)
{
	size_t l;
	int err;

	for (l = 0; l < x->nlabels && x->labels[l].addr < f->addr; l++)
		;
	for (size_t k = l; k < x->nlabels && x->labels[k].addr < f->addr + f->size; k++)
		if ((err = add_line_at(x, f, x->labels[k].file, (uint32_t)x->labels[k].line,
				       x->labels[k].addr)))
			return err;
	if (rpt_text_load(&x->text, entry->file) || (err = code_and_jumps(x, bin, f, entry)))
		return err == -ENOMEM ? err : 0;   /* no source: no labels */
	for (size_t k = 0; k < x->ncode; k++) {
		uint32_t line = x->code[k], above = k ? x->code[k - 1] : 0, first_case = 0;
		bool named = false, run_over = false;   /* the case labels right above LINE end */

		if (line <= (uint32_t)entry->line || line == above)
			continue;
		above = above > (uint32_t)entry->line ? above : (uint32_t)entry->line;
		for (uint32_t n = line - 1; n > above; n--) {
			size_t len;
			const char *s = rpt_text_line(&x->text, n, &len);

			for (size_t j = l; j < x->nlabels && x->labels[j].addr < f->addr + f->size; j++)
				named |= (uint32_t)x->labels[j].line == n;
			if (!s)
				break;
			if (rpt_case_line(s, len)) {
				first_case = run_over ? first_case : n;
			} else if (rpt_va_end_line(s, len)) {
				if ((err = add_line_counted(x, f, entry->file, n, line_start(x, f, entry->file, line),
							    line_count(x, f, entry->file, line))))
					return err;
			} else if (rpt_jump_line(s, len)) {
				/* a "break;" with no code of its own: the labels above
				 * it lead elsewhere, not to LINE */
				run_over = true;
			}
		}
		if (first_case && !named && switch_kept(x, first_case, (uint32_t)entry->line)) {
			uint64_t at = line_start(x, f, entry->file, line);
			if (!jumped_to(x, at) && (err = add_line_at(x, f, entry->file, first_case, at)))
				return err;
		}
	}
	return 0;
}

/* The function DWARF describes at E, with the profile's row among ROWS
 * [FROM, TO) (by address) when it has one: its FN record and label lines. */
static int place_entry(struct lcov *x, rtl_binary *bin, const struct lc_entry *e, size_t from,
		       size_t to)
{
	const rtl_source_range *r = range_at(x, e->addr);
	rtl_profile_function f = { .id = -2, .addr = e->addr, .size = e->size, .name = e->name };
	size_t lo = from, hi = to;
	uint64_t calls = 0;
	int err;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (x->rows.fn[mid].addr < e->addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < to && x->rows.fn[lo].addr == e->addr) {
		const rtl_profile_function *row = &x->rows.fn[lo];
		f.id = row->id;
		f.size = f.size ? f.size : row->size;
		f.name = f.name ? f.name : row->name;
		calls = row->have & RTL_HAVE_CALLS ? row->calls : count_at(x, &f, f.addr);
	}
	if (!r || r->line <= 0)
		return 0;
	if ((err = place_labels(x, bin, &f, r)))
		return err;
	if (!f.name || !*f.name)
		return 0;
	if (rtl_grow(&x->fns, &x->capfns, x->nfns + 1, sizeof(*x->fns)))
		return -ENOMEM;
	x->fns[x->nfns++] = (struct lc_func){ r->file, (uint32_t)r->line, f.name, calls };
	return 0;
}

/* Lines and branches of F (whose module's ranges are loaded). */
static int place_function(struct lcov *x, rtl_binary *bin, const rtl_profile_function *f)
{
	size_t b = first_of(x->blocks, x->nblocks, sizeof(*x->blocks), f->id);
	int err;

	for (; b < x->nblocks && x->blocks[b].function == f->id; b++) {
		const rtl_profile_block *k = &x->blocks[b];
		uint64_t end = k->addr;

		if (!k->count)
			continue;
		for (uint32_t i = 0; i < k->ninstrs; i++) {
			size_t len = cgp_insn_len(bin, end);
			if (!len)
				break;
			end += len;
		}
		for (size_t i = first_range(x, k->addr); i < x->nranges && x->ranges[i].addr < end; i++)
			if ((err = add_line(x, &x->ranges[i], f->id, k->count)))
				return err;
	}
	for (size_t i = first_of(x->br, x->nbr, sizeof(*x->br), f->id);
	     i < x->nbr && x->br[i].function == f->id; i++) {
		const rtl_source_range *s = range_at(x, x->br[i].site);
		if (!s || s->line <= 0)
			continue;
		if (rtl_grow(&x->brs, &x->capbrs, x->nbrs + 1, sizeof(*x->brs)))
			return -ENOMEM;
		x->brs[x->nbrs++] = (struct lc_branch){ s->file, (uint32_t)s->line, x->br[i].site,
							x->br[i].taken, x->br[i].not_taken };
	}
	return 0;
}

/* Every line with code of module of rows [from, to), then its functions. */
static int place_module(struct lcov *x, size_t from, size_t to)
{
	rtl_binary *bin = rpt_sources_binary(&x->src, x->rows.fn[from].module);
	int err;

	x->nranges = x->nentries = x->nlabels = 0;
	if (!bin || rtl_binary_foreach_source_range(bin, add_range, x) ||
	    rtl_binary_foreach_source_name(bin, add_name, x))
		return 0;        /* no DWARF: nothing to place */
	qsort(x->ranges, x->nranges, sizeof(*x->ranges), cmp_range);
	as_statements(x, bin);
	for (size_t i = 0; i < x->nranges; i++)
		if ((err = add_line(x, &x->ranges[i], -1, 0)))
			return err;
	for (size_t i = from; i < to; i++)
		if ((err = place_function(x, bin, &x->rows.fn[i])))
			return err;
	for (size_t i = 0; i < x->nentries; i++)
		if ((err = place_entry(x, bin, &x->entries[i], from, to)))
			return err;
	return 0;
}

static int cmp_u64(uint64_t a, uint64_t b)
{
	return (a > b) - (a < b);
}

static int cmp_line(const void *a, const void *b)
{
	const struct lc_line *x = a, *y = b;
	int c = strcmp(x->file, y->file);
	if (c)
		return c;
	if (x->line != y->line)
		return x->line < y->line ? -1 : 1;
	return (x->fn > y->fn) - (x->fn < y->fn);
}

static int cmp_func(const void *a, const void *b)
{
	const struct lc_func *x = a, *y = b;
	int c = strcmp(x->file, y->file);
	if (c)
		return c;
	if (x->line != y->line)
		return x->line < y->line ? -1 : 1;
	return strcmp(x->name, y->name);
}

static int cmp_branch(const void *a, const void *b)
{
	const struct lc_branch *x = a, *y = b;
	int c = strcmp(x->file, y->file);
	return c ? c : x->line != y->line ? cmp_u64(x->line, y->line) : cmp_u64(x->site, y->site);
}

/* The functions of FILE from *I on; *I moves past them. */
static void write_functions(FILE *out, const struct lcov *x, const char *file, size_t *i)
{
	size_t from = *i, to, found = 0, hit = 0;

	while (*i < x->nfns && !strcmp(x->fns[*i].file, file))
		(*i)++;
	to = *i;
	for (size_t k = from; k < to; k++)
		if (k == from || cmp_func(&x->fns[k - 1], &x->fns[k]))
			fprintf(out, "FN:%" PRIu32 ",%s\n", x->fns[k].line, x->fns[k].name);
	for (size_t k = from; k < to;) {
		uint64_t n = 0;
		size_t j = k;
		for (; j < to && !cmp_func(&x->fns[k], &x->fns[j]); j++)
			n += x->fns[j].count;
		fprintf(out, "FNDA:%" PRIu64 ",%s\n", n, x->fns[k].name);
		found++;
		hit += n != 0;
		k = j;
	}
	fprintf(out, "FNF:%zu\nFNH:%zu\n", found, hit);
}

static void write_branches(FILE *out, const struct lcov *x, const char *file, size_t *i)
{
	size_t found = 0, hit = 0, block = 0;
	uint32_t line = 0;

	for (; *i < x->nbrs && !strcmp(x->brs[*i].file, file); (*i)++) {
		const struct lc_branch *b = &x->brs[*i];

		block = b->line == line ? block + 1 : 0;
		line = b->line;
		fprintf(out, "BRDA:%" PRIu32 ",%zu,0,%" PRIu64 "\n", line, block, b->taken);
		fprintf(out, "BRDA:%" PRIu32 ",%zu,1,%" PRIu64 "\n", line, block, b->not_taken);
		found += 2;
		hit += (b->taken != 0) + (b->not_taken != 0);
	}
	if (found)
		fprintf(out, "BRF:%zu\nBRH:%zu\n", found, hit);
}

/* DA lines of FILE from *I on: a line's count is the largest of each
 * function's counts for it, added over functions. */
static void write_lines(FILE *out, const struct lcov *x, const char *file, size_t *i)
{
	size_t found = 0, hit = 0;

	while (*i < x->nlines && !strcmp(x->lines[*i].file, file)) {
		uint32_t line = x->lines[*i].line;
		uint64_t total = 0;

		while (*i < x->nlines && x->lines[*i].line == line && !strcmp(x->lines[*i].file, file)) {
			int64_t fn = x->lines[*i].fn;
			uint64_t most = 0;
			for (; *i < x->nlines && x->lines[*i].fn == fn && x->lines[*i].line == line &&
			       !strcmp(x->lines[*i].file, file); (*i)++)
				if (x->lines[*i].count > most)
					most = x->lines[*i].count;
			total += most;
		}
		fprintf(out, "DA:%" PRIu32 ",%" PRIu64 "\n", line, total);
		found++;
		hit += total != 0;
	}
	fprintf(out, "LF:%zu\nLH:%zu\n", found, hit);
}

/* Skips the items of files before FILE in the sorted array at *I. */
#define SKIP_BEFORE(arr, n, i, file) \
	while (*(i) < (n) && strcmp((arr)[*(i)].file, file) < 0) (*(i))++

static void write_tracefile(FILE *out, const struct lcov *x)
{
	size_t l = 0, f = 0, b = 0;

	while (l < x->nlines) {
		const char *file = x->lines[l].file;

		SKIP_BEFORE(x->fns, x->nfns, &f, file);
		SKIP_BEFORE(x->brs, x->nbrs, &b, file);
		if (access(file, R_OK)) {
			while (l < x->nlines && !strcmp(x->lines[l].file, file))
				l++;
			continue;
		}
		fprintf(out, "TN:\nSF:%s\n", file);
		write_functions(out, x, file, &f);
		write_branches(out, x, file, &b);
		write_lines(out, x, file, &l);
		fputs("end_of_record\n", out);
	}
}

static void free_lcov(struct lcov *x)
{
	rpt_rows_free(&x->rows);
	rpt_sources_free(&x->src);
	free(x->blocks);
	free(x->br);
	free(x->ranges);
	free(x->entries);
	free(x->labels);
	free(x->code);
	free(x->jumps);
	rpt_text_free(&x->text);
	free(x->lines);
	free(x->fns);
	free(x->brs);
}

int rtl_report_lcov(rtl_profile *p, const rtl_report_options *o, FILE *out)
{
	struct lcov x = { 0 };
	int err;

	(void)o;
	if ((err = rpt_rows_load(p, 1, 1, &x.rows)) ||
	    (err = rtl_profile_foreach_block(p, -1, add_block, &x)) ||
	    (err = rtl_profile_foreach_branch(p, add_branch, &x)))
		goto out;
	if (!x.nblocks) {
		err = -ENODATA;       /* no collector counted blocks: nothing ran, to lcov */
		goto out;
	}
	for (size_t i = 0, j; i < x.rows.n; i = j) {
		for (j = i + 1; j < x.rows.n && x.rows.fn[j].module_id == x.rows.fn[i].module_id; j++)
			;
		if ((err = place_module(&x, i, j)))
			goto out;
	}
	qsort(x.lines, x.nlines, sizeof(*x.lines), cmp_line);
	qsort(x.fns, x.nfns, sizeof(*x.fns), cmp_func);
	qsort(x.brs, x.nbrs, sizeof(*x.brs), cmp_branch);
	write_tracefile(out, &x);
	err = rpt_out_status(out);
out:
	free_lcov(&x);
	return err;
}
