/* The CFA program of a relocated function: every location re-targeted
 * through the relocation map, and rows of their own for the counters that
 * move %rsp. */
#include <reticle/error.h>
#include "patch/unwind_internal.h"
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

/* The two forms of x86_inc_counter_keep_flags (isa/x86_64/writer.c). 0xff
 * mask bytes are compared; 0x00 ones are displacements and the switch.
 * Switchable form: [2-byte switch] lea rsp,[rsp-128]; push rax;
 * mov rax,[rip+X]; lea rax,[rax+1]; mov [rip+X],rax; pop rax;
 * lea rsp,[rsp+128]; jmp +24; then the atomic form below. */
#define ATOMIC_FORM 0x48, 0x8d, 0x64, 0x24, 0x80, 0x9c, 0xf0, 0x48, 0x83, 0x05, 0, 0, 0, 0, 0x01, \
		    0x9d, 0x48, 0x8d, 0xa4, 0x24, 0x80, 0x00, 0x00, 0x00
#define ATOMIC_MASK 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1
static const uint8_t switchable[] = {
	0, 0, 0x48, 0x8d, 0x64, 0x24, 0x80, 0x50, 0x48, 0x8b, 0x05, 0, 0, 0, 0, 0x48, 0x8d, 0x40, 0x01,
	0x48, 0x89, 0x05, 0, 0, 0, 0, 0x58, 0x48, 0x8d, 0xa4, 0x24, 0x80, 0x00, 0x00, 0x00, 0xeb, 0x18,
	ATOMIC_FORM,
};
static const uint8_t switchable_mask[] = {
	0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, 1, 1,
	1, 1, 1, 1, 1, 1, ATOMIC_MASK,
};
static const uint8_t atomic_only[] = { ATOMIC_FORM };
static const uint8_t atomic_only_mask[] = { ATOMIC_MASK };

struct counter_form {
	const uint8_t *bytes, *mask;
	size_t len;
	/* offsets where %rsp changes, and by how much below its value outside */
	struct { uint8_t at, below; } rows[8];
	size_t nrows;
};

static const struct counter_form forms[] = {
	{ switchable, switchable_mask, sizeof(switchable),
	  { { 7, 128 }, { 8, 136 }, { 27, 128 }, { 35, 0 }, { 42, 128 }, { 43, 136 }, { 53, 128 }, { 61, 0 } }, 8 },
	{ atomic_only, atomic_only_mask, sizeof(atomic_only),
	  { { 5, 128 }, { 6, 136 }, { 16, 128 }, { 24, 0 } }, 4 },
};

static const struct counter_form *flag_counter_at(const struct unw_map *m, uint64_t s)
{
	for (size_t f = 0; f < sizeof(forms) / sizeof(forms[0]); f++) {
		const struct counter_form *cf = &forms[f];
		if (s < m->new_start || s - m->new_start + cf->len > m->new_len)
			continue;
		const uint8_t *p = m->code + (s - m->new_start);
		size_t i = 0;
		while (i < cf->len && (!cf->mask[i] || p[i] == cf->bytes[i]))
			i++;
		if (i == cf->len)
			return cf;
	}
	return NULL;
}

/* Length of the branch at S when it is one a copy puts around edge
 * counters (jcc rel8/rel32, jmp rel8/rel32, loop/jrcxz), else 0. */
static size_t branch_len(const struct unw_map *m, uint64_t s, uint64_t end)
{
	const uint8_t *p = m->code + (s - m->new_start);
	size_t left = end - s;
	if (left >= 2 && ((p[0] >= 0x70 && p[0] <= 0x7f) || p[0] == 0xeb || (p[0] >= 0xe0 && p[0] <= 0xe3)))
		return 2;
	if (left >= 6 && p[0] == 0x0f && p[1] >= 0x80 && p[1] <= 0x8f)
		return 6;
	if (left >= 5 && p[0] == 0xe9)
		return 5;
	return 0;
}

/* Rows for the counters that keep flags in [*CUR, HI): they move %rsp, so
 * an %rsp-based CFA needs a larger offset inside them (for unwinds that
 * start there: signals, samplers). */
static void describe_counters(const struct unw_map *m, const struct cfa_track *t, uint64_t hi,
			      struct ob *o, uint64_t *cur)
{
	if (!m->code || !t->now.known || t->now.reg != REG_RSP || t->now.off < 0)
		return;
	size_t lo = 0, top = m->n;
	while (lo < top) {
		size_t mid = (lo + top) / 2;
		if (m->to[mid] < *cur)
			lo = mid + 1;
		else
			top = mid;
	}
	for (size_t k = lo; k < m->n && m->to[k] < hi; k++) {
		uint64_t s = m->to[k];
		uint64_t end = k + 1 < m->n ? m->to[k + 1] : m->new_start + m->new_len;
		/* a block's counter starts an instruction's copy; a branch's
		 * edge counters follow its jumps (relocate.c, counted_branch) */
		for (int step = 0; step < 6 && s < end && s >= *cur; step++) {
			const struct counter_form *cf = flag_counter_at(m, s);
			if (cf && s + cf->len <= hi) {
				for (size_t i = 0; i < cf->nrows; i++) {
					put_advance(o, s + cf->rows[i].at - *cur);
					*cur = s + cf->rows[i].at;
					put_u8(o, DW_CFA_def_cfa_offset);
					put_uleb(o, (uint64_t)t->now.off + cf->rows[i].below);
				}
				s += cf->len;
				continue;
			}
			size_t skip = branch_len(m, s, end);
			if (!skip)
				break;
			s += skip;
		}
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
		describe_counters(m, &t, to, o, &cur);
		put_advance(o, to - cur);
		cur = to;
	}
	if (r.bad)
		return *why = "truncated CFA program", -RTL_ERR_BAD_INPUT;
	describe_counters(m, &t, m->new_start + m->new_len, o, &cur);
	return 0;
}

