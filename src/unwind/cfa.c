/* The CFA program of a relocated function: every location re-targeted
 * through the relocation map, and rows of their own where the snippets
 * move %rsp (as the writer reported them). */
#include <reticle/error.h>
#include "isa/x86_64/writer.h"
#include "unwind/internal.h"
#include "util/array.h"

/* ---- address mapping ---- */

/* Relocated address for original A: the relocated start of the instruction
 * at or after A; the function's bounds map to the relocated bounds. */
uint64_t unw_map_addr(const struct unw_map *m, uint64_t a)
{
	if (a <= m->func_addr)
		return m->new_start;
	if (a >= m->func_addr + m->func_size)
		return m->new_start + m->new_len;
	size_t k = rtl_lower_bound_u64(m->from, m->n, a);
	return k < m->n ? m->to[k] : m->new_start + m->new_len;
}

/* Relocated address of the instruction that starts exactly at A, or 0. */
uint64_t unw_map_exact(const struct unw_map *m, uint64_t a)
{
	size_t k = rtl_lower_bound_u64(m->from, m->n, a);
	return k < m->n && m->from[k] == a ? m->to[k] : 0;
}

/* ---- the CFA program ---- */

static void copy_leb(struct rtl_eh_rd *r, struct ob *o)
{
	const uint8_t *s = r->p;
	rtl_eh_uleb(r);
	put(o, s, (size_t)(r->p - s));
}

static void put_advance(struct ob *o, uint64_t d)
{
	if (d == 0)
		return;
	if (d < 0x40)
		put_u8(o, (uint8_t)(DW_CFA_advance_loc | d));
	else if (d <= 0xff) {
		put_u8(o, DW_CFA_advance_loc1);
		put_le(o, d, 1);
	} else if (d <= 0xffff) {
		put_u8(o, DW_CFA_advance_loc2);
		put_le(o, d, 2);
	} else {
		put_u8(o, DW_CFA_advance_loc4);
		put_le(o, d, 4);
	}
}

/* Operand shapes of the CFA opcodes that are copied unchanged:
 * u = uleb128, s = sleb128, b = uleb128 length then that many bytes. */
static const char *cfa_operands(uint8_t op)
{
	switch (op) {
	case DW_CFA_nop: case DW_CFA_remember_state: case DW_CFA_restore_state:
	case DW_CFA_GNU_window_save:
		return "";
	case DW_CFA_restore_extended: case DW_CFA_undefined: case DW_CFA_same_value:
	case DW_CFA_def_cfa_register: case DW_CFA_def_cfa_offset: case DW_CFA_GNU_args_size:
		return "u";
	case DW_CFA_offset_extended: case DW_CFA_register: case DW_CFA_def_cfa:
	case DW_CFA_val_offset: case DW_CFA_GNU_negative_offset_extended:
		return "uu";
	case DW_CFA_offset_extended_sf: case DW_CFA_def_cfa_sf: case DW_CFA_val_offset_sf:
		return "us";
	case DW_CFA_def_cfa_offset_sf:
		return "s";
	case DW_CFA_def_cfa_expression:
		return "b";
	case DW_CFA_expression: case DW_CFA_val_expression:
		return "ub";
	default:
		return NULL;
	}
}

static int copy_operands(struct rtl_eh_rd *r, struct ob *o, const char *shape)
{
	for (; *shape && !r->bad; shape++) {
		if (*shape != 'b') {
			copy_leb(r, o);   /* sleb and uleb end the same way */
			continue;
		}
		const uint8_t *s = r->p;
		uint64_t n = rtl_eh_uleb(r);
		if (n > (uint64_t)(r->end - r->p)) {
			r->bad = true;
			break;
		}
		r->p += n;
		put(o, s, (size_t)(r->p - s));
	}
	return r->bad ? -RTL_ERR_BAD_INPUT : 0;
}

/* ---- the CFA rule, followed so that counter code can be described ---- */

enum { CFA_STACK = 16, REG_RSP = 7 };

struct cfa_rule {
	uint64_t reg;
	int64_t off;
	bool known;     /* CFA = reg + off (not an expression, not lost) */
};

struct cfa_track {
	struct cfa_rule now, stack[CFA_STACK];
	int depth;
	int64_t daf;
};

/* Updates the rule for opcode OP whose operands A reads. */
static void track(struct cfa_track *t, uint8_t op, struct rtl_eh_rd a)
{
	switch (op) {
	case DW_CFA_def_cfa:
		t->now.reg = rtl_eh_uleb(&a);
		t->now.off = (int64_t)rtl_eh_uleb(&a);
		t->now.known = true;
		break;
	case DW_CFA_def_cfa_sf:
		t->now.reg = rtl_eh_uleb(&a);
		t->now.off = rtl_eh_sleb(&a) * t->daf;
		t->now.known = true;
		break;
	case DW_CFA_def_cfa_register: t->now.reg = rtl_eh_uleb(&a); break;
	case DW_CFA_def_cfa_offset: t->now.off = (int64_t)rtl_eh_uleb(&a); break;
	case DW_CFA_def_cfa_offset_sf: t->now.off = rtl_eh_sleb(&a) * t->daf; break;
	case DW_CFA_def_cfa_expression: t->now.known = false; break;
	case DW_CFA_remember_state:
		if (t->depth < CFA_STACK)
			t->stack[t->depth] = t->now;
		t->depth++;
		break;
	case DW_CFA_restore_state:
		if (t->depth > 0 && --t->depth < CFA_STACK)
			t->now = t->stack[t->depth];
		else
			t->now.known = false;
		break;
	}
	if (a.bad)
		t->now.known = false;
}

/* The CIE's initial instructions set the rule the FDE starts from. */
static void track_initial(struct cfa_track *t, const struct rtl_eh_cie *c)
{
	struct rtl_eh_rd r = { c->insns, c->insns, c->insns_end, 0, false };
	struct ob sink = { 0 };
	memset(t, 0, sizeof(*t));
	t->daf = c->daf;
	while (r.p < r.end && !r.bad) {
		uint8_t op = (uint8_t)rtl_eh_u(&r, 1);
		const char *shape = (op & 0xc0) == DW_CFA_offset ? "u"
				    : (op & 0xc0) ? "" : cfa_operands(op);
		if (!shape) {
			t->now.known = false;   /* an advance or unknown opcode in a CIE */
			break;
		}
		track(t, op, r);
		copy_operands(&r, &sink, shape);
	}
	free(sink.b);
}

/* Rows for the snippets' %rsp moves in (*CUR, HI] (the writer's report;
 * a move takes effect after the instruction that makes it, so never at a
 * copy's first byte, and the last of a snippet may fall on the next
 * instruction's start, HI): while the CFA is %rsp-based, it is that much
 * further inside them (for unwinds that start there: signals, samplers). */
static void describe_sp_moves(const struct unw_map *m, const struct cfa_track *t, uint64_t hi,
			      struct ob *o, uint64_t *cur)
{
	if (!m->nrows || !t->now.known || t->now.reg != REG_RSP || t->now.off < 0)
		return;
	size_t lo = 0, top = m->nrows;
	while (lo < top) {   /* the first row after *CUR */
		size_t mid = (lo + top) / 2;
		if (m->new_start + m->rows[mid].off <= *cur)
			lo = mid + 1;
		else
			top = mid;
	}
	for (size_t k = lo; k < m->nrows && m->new_start + m->rows[k].off <= hi; k++) {
		uint64_t at = m->new_start + m->rows[k].off;
		put_advance(o, at - *cur);
		*cur = at;
		put_u8(o, DW_CFA_def_cfa_offset);
		put_uleb(o, (uint64_t)t->now.off + m->rows[k].below);
	}
}

/* Copies the FDE's CFA program, re-targeting every location through the map. */
int unw_rewrite_cfa(const struct unw_image *img, const struct rtl_eh_cie *c,
		    const struct rtl_eh_fde *f, const struct unw_map *m, struct ob *o,
		    const char **why)
{
	struct rtl_eh_rd r;
	uint64_t loc = f->pc_begin, cur = m->new_start;
	struct cfa_track t;

	track_initial(&t, c);
	unw_rd_init(&r, &img->eh_frame, (size_t)(f->insns - img->eh_frame.data),
		    (size_t)(f->insns_end - img->eh_frame.data));
	while (r.p < r.end && !r.bad) {
		uint8_t op = (uint8_t)rtl_eh_u(&r, 1);
		uint64_t delta;
		switch (op & 0xc0) {
		case DW_CFA_advance_loc:
			delta = op & 0x3f;
			goto advance;
		case DW_CFA_offset:
			put_u8(o, op);
			copy_leb(&r, o);
			continue;
		case DW_CFA_restore:
			put_u8(o, op);
			continue;
		}
		switch (op) {
		case DW_CFA_set_loc: {
			uint64_t at = unw_ptr(&r, c->fde_enc, img);
			if (at < loc)
				return *why = "DW_CFA_set_loc backwards", -RTL_ERR_BAD_INPUT;
			loc = at;           /* an address, not a factored delta */
			goto remap;
		}
		case DW_CFA_advance_loc1: delta = rtl_eh_u(&r, 1); goto advance;
		case DW_CFA_advance_loc2: delta = rtl_eh_u(&r, 2); goto advance;
		case DW_CFA_advance_loc4: delta = rtl_eh_u(&r, 4); goto advance;
		case DW_CFA_MIPS_advance_loc8: delta = rtl_eh_u(&r, 8); goto advance;
		default: {
			const char *shape = cfa_operands(op);
			if (!shape)
				return *why = "unknown CFA opcode", -RTL_ERR_UNSUPPORTED;
			put_u8(o, op);
			track(&t, op, r);
			if (copy_operands(&r, o, shape))
				return *why = "truncated CFA instruction", -RTL_ERR_BAD_INPUT;
			continue;
		}
		}
advance:
		loc += delta * c->caf;
remap:;
		uint64_t to = unw_map_addr(m, loc);
		if (to < cur)
			return *why = "relocation map is not monotonic", -RTL_ERR_BAD_INPUT;
		describe_sp_moves(m, &t, to, o, &cur);
		put_advance(o, to - cur);
		cur = to;
	}
	if (r.bad)
		return *why = "truncated CFA program", -RTL_ERR_BAD_INPUT;
	describe_sp_moves(m, &t, m->new_start + m->new_len, o, &cur);
	return 0;
}

