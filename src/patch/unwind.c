/* Unwind information for relocated functions: an .eh_frame reader (find the
 * FDE of a function) and the writer of a CIE + FDE + LSDA blob for the
 * relocated copy. Every read is bounds-checked: the bytes come from the
 * target's files. Pointer decoding follows libgcc's read_encoded_value (a
 * raw zero stays a null pointer whatever the encoding). */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <dwarf.h>
#include <gelf.h>
#include <libelf.h>
#include <reticle/error.h>
#include "patch/unwind.h"

enum { PCREL_SDATA4 = DW_EH_PE_pcrel | DW_EH_PE_sdata4, MAX_ACTION_CHAIN = 4096 };

/* ---- reading ---- */

struct rd {
	const uint8_t *start, *p, *end;
	uint64_t base;   /* run-time address of start */
	bool bad;
};

static void rd_init(struct rd *r, const struct unw_region *reg, size_t off, size_t end)
{
	r->start = reg->data;
	r->p = reg->data + (off < reg->size ? off : reg->size);
	r->end = reg->data + (end < reg->size ? end : reg->size);
	r->base = reg->addr;
	r->bad = off > reg->size;
}

static uint64_t rd_u(struct rd *r, size_t n)
{
	uint64_t v = 0;
	if ((size_t)(r->end - r->p) < n) {
		r->bad = true;
		r->p = r->end;
		return 0;
	}
	for (size_t i = 0; i < n; i++)
		v |= (uint64_t)r->p[i] << (8 * i);
	r->p += n;
	return v;
}

static uint64_t rd_uleb(struct rd *r)
{
	uint64_t v = 0;
	for (unsigned shift = 0; r->p < r->end; shift += 7) {
		uint8_t b = *r->p++;
		if (shift < 64)
			v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			return v;
	}
	r->bad = true;
	return v;
}

static int64_t rd_sleb(struct rd *r)
{
	uint64_t v = 0;
	for (unsigned shift = 0; r->p < r->end;) {
		uint8_t b = *r->p++;
		if (shift < 64)
			v |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
		if (!(b & 0x80)) {
			if (shift < 64 && (b & 0x40))
				v |= ~(uint64_t)0 << shift;
			return (int64_t)v;
		}
	}
	r->bad = true;
	return (int64_t)v;
}

static size_t enc_size(unsigned enc)
{
	switch (enc & 0x0f) {
	case DW_EH_PE_absptr: case DW_EH_PE_udata8: case DW_EH_PE_sdata8: return 8;
	case DW_EH_PE_udata2: case DW_EH_PE_sdata2: return 2;
	case DW_EH_PE_udata4: case DW_EH_PE_sdata4: return 4;
	default: return 0;   /* leb128: variable */
	}
}

/* The value part of a pointer in encoding ENC, no base applied. */
static uint64_t rd_value(struct rd *r, unsigned enc)
{
	switch (enc & 0x0f) {
	case DW_EH_PE_absptr: case DW_EH_PE_udata8: case DW_EH_PE_sdata8: return rd_u(r, 8);
	case DW_EH_PE_uleb128: return rd_uleb(r);
	case DW_EH_PE_sleb128: return (uint64_t)rd_sleb(r);
	case DW_EH_PE_udata2: return rd_u(r, 2);
	case DW_EH_PE_sdata2: return (uint64_t)(int64_t)(int16_t)rd_u(r, 2);
	case DW_EH_PE_udata4: return rd_u(r, 4);
	case DW_EH_PE_sdata4: return (uint64_t)(int64_t)(int32_t)rd_u(r, 4);
	default: r->bad = true; return 0;
	}
}

/* A pointer with its base applied; the indirect bit is left to the caller
 * (the result is then the address of the pointer). */
static uint64_t rd_ptr(struct rd *r, unsigned enc, const struct unw_image *img)
{
	uint64_t here = r->base + (uint64_t)(r->p - r->start);
	uint64_t v = rd_value(r, enc);

	if (v == 0 || r->bad)
		return v;
	switch (enc & 0x70) {
	case DW_EH_PE_absptr: return v + img->bias;
	case DW_EH_PE_pcrel: return v + here;
	case DW_EH_PE_textrel: return v + img->text_base;
	case DW_EH_PE_datarel: return v + img->data_base;
	default: r->bad = true; return 0;   /* funcrel, aligned: not in .eh_frame */
	}
}

/* ---- .eh_frame records ---- */

struct entry {
	size_t body, end;    /* offsets: after the length field, past the record */
	uint64_t id;         /* 0 for a CIE, else the CIE pointer */
	size_t after_id;
};

/* Record at OFF: 1 at the terminator or the end, 0, or -1 when malformed. */
static int entry_at(const struct unw_region *eh, size_t off, struct entry *e)
{
	struct rd r;
	rd_init(&r, eh, off, eh->size);
	if (off + 4 > eh->size)
		return 1;
	uint64_t len = rd_u(&r, 4);
	bool is64 = len == 0xffffffffu;
	if (len == 0)
		return 1;
	if (is64)
		len = rd_u(&r, 8);
	e->body = (size_t)(r.p - r.start);
	if (r.bad || len > eh->size - e->body || len < (is64 ? 8u : 4u))
		return -1;
	e->end = e->body + (size_t)len;
	e->id = rd_u(&r, is64 ? 8 : 4);
	e->after_id = (size_t)(r.p - r.start);
	return 0;
}

struct cie {
	unsigned version;
	const char *aug;
	const uint8_t *fixed, *fixed_end;   /* alignment factors and RA register */
	uint64_t caf;
	int64_t daf;
	unsigned fde_enc, lsda_enc, pers_enc;
	uint64_t pers;                      /* personality (address of it if indirect) */
	const uint8_t *insns, *insns_end;
};

static int parse_cie(const struct unw_image *img, size_t off, struct cie *c, const char **why)
{
	const struct unw_region *eh = &img->eh_frame;
	struct entry e;
	struct rd r;

	if (entry_at(eh, off, &e) || e.id != 0)
		return *why = "CIE pointer does not name a CIE", -RTL_ERR_BAD_INPUT;
	rd_init(&r, eh, e.after_id, e.end);
	memset(c, 0, sizeof(*c));
	c->fde_enc = DW_EH_PE_absptr;
	c->lsda_enc = c->pers_enc = DW_EH_PE_omit;
	c->version = (unsigned)rd_u(&r, 1);
	c->aug = (const char *)r.p;
	const uint8_t *nul = memchr(r.p, 0, (size_t)(r.end - r.p));
	if (!nul)
		return *why = "unterminated CIE augmentation", -RTL_ERR_BAD_INPUT;
	if (c->version != 1 && c->version != 3)
		return *why = "CIE version other than 1 and 3", -RTL_ERR_UNSUPPORTED;
	if (c->aug[0] && c->aug[0] != 'z')
		return *why = "CIE augmentation without 'z'", -RTL_ERR_UNSUPPORTED;
	r.p = nul + 1;
	c->fixed = r.p;
	c->caf = rd_uleb(&r);
	c->daf = rd_sleb(&r);
	if (c->version == 1)
		rd_u(&r, 1);
	else
		rd_uleb(&r);
	c->fixed_end = r.p;
	if (c->aug[0] == 'z') {
		uint64_t alen = rd_uleb(&r);
		if (alen > (uint64_t)(r.end - r.p))
			return *why = "CIE augmentation data past its end", -RTL_ERR_BAD_INPUT;
		const uint8_t *aend = r.p + alen;
		for (const char *a = c->aug + 1; *a; a++) {
			if (*a == 'L')
				c->lsda_enc = (unsigned)rd_u(&r, 1);
			else if (*a == 'R')
				c->fde_enc = (unsigned)rd_u(&r, 1);
			else if (*a == 'P') {
				c->pers_enc = (unsigned)rd_u(&r, 1);
				c->pers = rd_ptr(&r, c->pers_enc, img);
			} else if (*a != 'S' && *a != 'B' && *a != 'G')
				return *why = "unknown CIE augmentation letter", -RTL_ERR_UNSUPPORTED;
		}
		if (r.p > aend)
			return *why = "CIE augmentation data overruns", -RTL_ERR_BAD_INPUT;
		r.p = aend;
	}
	c->insns = r.p;
	c->insns_end = r.end;
	if (r.bad)
		return *why = "truncated CIE", -RTL_ERR_BAD_INPUT;
	if ((c->lsda_enc != DW_EH_PE_omit && (c->lsda_enc & DW_EH_PE_indirect)) ||
	    (c->fde_enc & DW_EH_PE_indirect))
		return *why = "indirect FDE or LSDA pointer", -RTL_ERR_UNSUPPORTED;
	return 0;
}

struct fde {
	struct unw_fde pub;
	const uint8_t *insns, *insns_end;
	size_t insns_off;    /* offset of insns in eh_frame.data */
};

/* Parses the FDE record E (at OFF) with its CIE C. */
static int parse_fde(const struct unw_image *img, size_t off, const struct entry *e,
		     const struct cie *c, struct fde *f)
{
	struct rd r;
	rd_init(&r, &img->eh_frame, e->after_id, e->end);
	memset(f, 0, sizeof(*f));
	f->pub.fde_off = off;
	f->pub.cie_off = e->body - (size_t)e->id;
	f->pub.pc_begin = rd_ptr(&r, c->fde_enc, img);
	f->pub.pc_end = f->pub.pc_begin + rd_value(&r, c->fde_enc);
	if (c->aug[0] == 'z') {
		uint64_t alen = rd_uleb(&r);
		if (alen > (uint64_t)(r.end - r.p))
			return -RTL_ERR_BAD_INPUT;
		const uint8_t *aend = r.p + alen;
		if (c->lsda_enc != DW_EH_PE_omit)
			f->pub.lsda = rd_ptr(&r, c->lsda_enc, img);
		if (r.p > aend)
			return -RTL_ERR_BAD_INPUT;
		r.p = aend;
	}
	f->insns = r.p;
	f->insns_end = r.end;
	f->insns_off = (size_t)(r.p - r.start);
	return r.bad ? -RTL_ERR_BAD_INPUT : 0;
}

/* The FDE record at OFF with its CIE. */
static int load_fde(const struct unw_image *img, size_t off, struct fde *f, struct cie *c,
		    const char **why)
{
	struct entry e;
	int err;
	if (entry_at(&img->eh_frame, off, &e) || e.id == 0 || e.id > e.body)
		return *why = "malformed .eh_frame record", -RTL_ERR_BAD_INPUT;
	if ((err = parse_cie(img, e.body - (size_t)e.id, c, why)))
		return err;
	if ((err = parse_fde(img, off, &e, c, f)))
		return *why = "truncated FDE", err;
	return 0;
}

/* Calls VISIT on every FDE of the section whose CIE we read, until it
 * returns nonzero (that value is returned). FDEs under a CIE we cannot read
 * are skipped: their ranges are unknown. */
static int scan(const struct unw_image *img, int (*visit)(void *, const struct fde *, const struct cie *),
		void *ctx, const char **why)
{
	const struct unw_region *eh = &img->eh_frame;
	size_t off = 0, cie_off = (size_t)-1;
	bool cie_ok = false;
	struct entry e;
	struct fde f;
	struct cie c;
	int st, ret;

	while ((st = entry_at(eh, off, &e)) == 0) {
		if (e.id != 0) {
			if (e.id > e.body)
				return *why = "FDE's CIE pointer out of the section", -RTL_ERR_BAD_INPUT;
			size_t co = e.body - (size_t)e.id;
			if (co != cie_off) {
				const char *cie_why;
				cie_ok = parse_cie(img, co, &c, &cie_why) == 0;
				cie_off = co;
			}
			if (cie_ok && parse_fde(img, off, &e, &c, &f) == 0 &&
			    (ret = visit(ctx, &f, &c)))
				return ret;
		}
		off = e.end;
	}
	if (st < 0)
		return *why = "malformed .eh_frame record", -RTL_ERR_BAD_INPUT;
	return 0;
}

struct lookup {
	uint64_t pc;
	size_t off;
};

static int visit_lookup(void *ctx, const struct fde *f, const struct cie *c)
{
	struct lookup *l = ctx;
	if (f->pub.pc_begin && l->pc >= f->pub.pc_begin && l->pc < f->pub.pc_end) {
		l->off = f->pub.fde_off;
		return 1;
	}
	return 0;
}

/* Finds the FDE over PC, with its CIE: through the index when there is one. */
static int find(const struct unw_image *img, uint64_t pc, struct fde *f, struct cie *c,
		const char **why)
{
	struct lookup l = { pc, 0 };
	if (img->index) {
		size_t lo = 0, hi = img->nindex;
		while (lo < hi) {   /* first entry that begins after PC */
			size_t mid = (lo + hi) / 2;
			if (img->index[mid].begin <= pc)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (lo == 0 || pc >= img->index[lo - 1].end)
			return *why = "no FDE covers the function", -ENOENT;
		return load_fde(img, img->index[lo - 1].fde_off, f, c, why);
	}
	int ret = scan(img, visit_lookup, &l, why);
	if (ret < 0)
		return ret;
	if (ret == 0)
		return *why = "no FDE covers the function", -ENOENT;
	return load_fde(img, l.off, f, c, why);
}

struct collect {
	struct unw_index_entry *v;
	size_t n, cap;
};

static int visit_collect(void *ctx, const struct fde *f, const struct cie *c)
{
	struct collect *k = ctx;
	if (!f->pub.pc_begin || f->pub.pc_end <= f->pub.pc_begin)
		return 0;
	if (k->n == k->cap) {
		size_t cap = k->cap ? k->cap * 2 : 256;
		struct unw_index_entry *nv = realloc(k->v, cap * sizeof(*nv));
		if (!nv)
			return -ENOMEM;
		k->v = nv;
		k->cap = cap;
	}
	k->v[k->n++] = (struct unw_index_entry){ f->pub.pc_begin, f->pub.pc_end, f->pub.fde_off };
	return 0;
}

static int by_begin(const void *a, const void *b)
{
	const struct unw_index_entry *x = a, *y = b;
	return x->begin < y->begin ? -1 : x->begin > y->begin;
}

int unw_image_index(struct unw_image *img)
{
	struct collect k = { 0 };
	const char *why;
	int err = scan(img, visit_collect, &k, &why);
	if (err) {
		free(k.v);
		return err;
	}
	qsort(k.v, k.n, sizeof(*k.v), by_begin);
	free((void *)img->index);
	img->index = k.v;
	img->nindex = k.n;
	return 0;
}

int unw_find_fde(const struct unw_image *img, uint64_t pc, struct unw_fde *out)
{
	struct fde f;
	struct cie c;
	const char *why;
	int err = find(img, pc, &f, &c, &why);
	if (!err)
		*out = f.pub;
	return err;
}

/* ---- writing ---- */

struct ob {
	uint8_t *b;
	size_t len, cap;
	bool oom;
};

static void put(struct ob *o, const void *p, size_t n)
{
	if (n == 0)
		return;
	if (o->len + n > o->cap) {
		size_t cap = o->cap ? o->cap * 2 : 256;
		while (cap < o->len + n)
			cap *= 2;
		uint8_t *nb = realloc(o->b, cap);
		if (!nb) {
			o->oom = true;
			return;
		}
		o->b = nb;
		o->cap = cap;
	}
	memcpy(o->b + o->len, p, n);
	o->len += n;
}

static void put_u8(struct ob *o, uint8_t v) { put(o, &v, 1); }

static void put_le(struct ob *o, uint64_t v, size_t n)
{
	uint8_t b[8];
	for (size_t i = 0; i < n; i++)
		b[i] = (uint8_t)(v >> (8 * i));
	put(o, b, n);
}

static void patch_u32(struct ob *o, size_t at, uint32_t v)
{
	if (!o->oom)
		for (int i = 0; i < 4; i++)
			o->b[at + i] = (uint8_t)(v >> (8 * i));
}

static size_t uleb_len(uint64_t v)
{
	size_t n = 1;
	while (v >>= 7)
		n++;
	return n;
}

static void put_uleb(struct ob *o, uint64_t v)
{
	do {
		uint8_t b = v & 0x7f;
		v >>= 7;
		put_u8(o, (uint8_t)(b | (v ? 0x80 : 0)));
	} while (v);
}

static bool fits32(int64_t v) { return v == (int32_t)v; }

/* A pointer in ENC (PCREL_SDATA4 or absptr, with the indirect bit), for a
 * field at run-time address HERE. */
static bool put_ptr(struct ob *o, unsigned enc, uint64_t v, uint64_t here)
{
	if ((enc & 0x70) == DW_EH_PE_pcrel) {
		int64_t d = v ? (int64_t)(v - here) : 0;
		put_le(o, (uint64_t)d, 4);
		return fits32(d);
	}
	put_le(o, v, 8);
	return true;
}

/* Pads a record started at START (its length word) with DW_CFA_nop to a
 * multiple of 8 and stores its length. */
static void close_record(struct ob *o, size_t start)
{
	while ((o->len - start) % 8)
		put_u8(o, DW_CFA_nop);
	patch_u32(o, start, (uint32_t)(o->len - start - 4));
}

/* ---- address mapping ---- */

static size_t lower_bound(const struct unw_map *m, uint64_t a)
{
	size_t lo = 0, hi = m->n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (m->from[mid] < a)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Relocated address for original A: the relocated start of the instruction
 * at or after A; the function's bounds map to the relocated bounds. */
static uint64_t map_addr(const struct unw_map *m, uint64_t a)
{
	if (a <= m->func_addr)
		return m->new_start;
	if (a >= m->func_addr + m->func_size)
		return m->new_start + m->new_len;
	size_t k = lower_bound(m, a);
	return k < m->n ? m->to[k] : m->new_start + m->new_len;
}

/* Relocated address of the instruction that starts exactly at A, or 0. */
static uint64_t map_exact(const struct unw_map *m, uint64_t a)
{
	size_t k = lower_bound(m, a);
	return k < m->n && m->from[k] == a ? m->to[k] : 0;
}

/* ---- the CFA program ---- */

static void copy_leb(struct rd *r, struct ob *o)
{
	const uint8_t *s = r->p;
	rd_uleb(r);
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

static int copy_operands(struct rd *r, struct ob *o, const char *shape)
{
	for (; *shape && !r->bad; shape++) {
		if (*shape != 'b') {
			copy_leb(r, o);   /* sleb and uleb end the same way */
			continue;
		}
		const uint8_t *s = r->p;
		uint64_t n = rd_uleb(r);
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
static void track(struct cfa_track *t, uint8_t op, struct rd a)
{
	switch (op) {
	case DW_CFA_def_cfa:
		t->now.reg = rd_uleb(&a);
		t->now.off = (int64_t)rd_uleb(&a);
		t->now.known = true;
		break;
	case DW_CFA_def_cfa_sf:
		t->now.reg = rd_uleb(&a);
		t->now.off = rd_sleb(&a) * t->daf;
		t->now.known = true;
		break;
	case DW_CFA_def_cfa_register: t->now.reg = rd_uleb(&a); break;
	case DW_CFA_def_cfa_offset: t->now.off = (int64_t)rd_uleb(&a); break;
	case DW_CFA_def_cfa_offset_sf: t->now.off = rd_sleb(&a) * t->daf; break;
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
static void track_initial(struct cfa_track *t, const struct cie *c)
{
	struct rd r = { c->insns, c->insns, c->insns_end, 0, false };
	struct ob sink = { 0 };
	memset(t, 0, sizeof(*t));
	t->daf = c->daf;
	while (r.p < r.end && !r.bad) {
		uint8_t op = (uint8_t)rd_u(&r, 1);
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

/* x86_inc_counter_keep_flags: lea rsp,[rsp-128]; push rax; mov rax,[rip+X];
 * lea rax,[rax+1]; mov [rip+X],rax; pop rax; lea rsp,[rsp+128]. 0xff bytes
 * in the mask are compared, 0x00 ones are the displacements. */
static const uint8_t flag_counter[] = {
	0x48, 0x8d, 0x64, 0x24, 0x80, 0x50, 0x48, 0x8b, 0x05, 0, 0, 0, 0, 0x48, 0x8d, 0x40, 0x01,
	0x48, 0x89, 0x05, 0, 0, 0, 0, 0x58, 0x48, 0x8d, 0xa4, 0x24, 0x80, 0x00, 0x00, 0x00,
};
static const uint8_t flag_counter_mask[] = {
	1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1,
};
/* Offsets in it where %rsp changes, and by how much below its value outside. */
static const struct { uint8_t at, below; } flag_counter_rows[] = {
	{ 5, 128 }, { 6, 136 }, { 25, 128 }, { sizeof(flag_counter), 0 },
};

static bool is_flag_counter(const struct unw_map *m, uint64_t s)
{
	if (s < m->new_start || s - m->new_start + sizeof(flag_counter) > m->new_len)
		return false;
	const uint8_t *p = m->code + (s - m->new_start);
	for (size_t i = 0; i < sizeof(flag_counter); i++)
		if (flag_counter_mask[i] && p[i] != flag_counter[i])
			return false;
	return true;
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
	for (size_t k = lo; k < m->n && m->to[k] + sizeof(flag_counter) <= hi; k++) {
		uint64_t s = m->to[k];
		if (s < *cur || !is_flag_counter(m, s))
			continue;
		for (size_t i = 0; i < sizeof(flag_counter_rows) / sizeof(flag_counter_rows[0]); i++) {
			put_advance(o, s + flag_counter_rows[i].at - *cur);
			*cur = s + flag_counter_rows[i].at;
			put_u8(o, DW_CFA_def_cfa_offset);
			put_uleb(o, (uint64_t)t->now.off + flag_counter_rows[i].below);
		}
	}
}

/* Copies the FDE's CFA program, re-targeting every location through the map. */
static int rewrite_cfa(const struct unw_image *img, const struct cie *c, const struct fde *f,
		       const struct unw_map *m, struct ob *o, const char **why)
{
	struct rd r;
	uint64_t loc = f->pub.pc_begin, cur = m->new_start;
	struct cfa_track t;

	track_initial(&t, c);
	rd_init(&r, &img->eh_frame, f->insns_off, (size_t)(f->insns_end - img->eh_frame.data));
	while (r.p < r.end && !r.bad) {
		uint8_t op = (uint8_t)rd_u(&r, 1);
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
			uint64_t at = rd_ptr(&r, c->fde_enc, img);
			if (at < loc)
				return *why = "DW_CFA_set_loc backwards", -RTL_ERR_BAD_INPUT;
			loc = at;           /* an address, not a factored delta */
			goto remap;
		}
		case DW_CFA_advance_loc1: delta = rd_u(&r, 1); goto advance;
		case DW_CFA_advance_loc2: delta = rd_u(&r, 2); goto advance;
		case DW_CFA_advance_loc4: delta = rd_u(&r, 4); goto advance;
		case DW_CFA_MIPS_advance_loc8: delta = rd_u(&r, 8); goto advance;
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
		uint64_t to = map_addr(m, loc);
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

/* ---- the LSDA (.gcc_except_table) ---- */

struct call_site {
	uint64_t start, len, lp, action;
};

struct lsda {
	uint64_t lpstart;
	unsigned ttenc;
	const uint8_t *ttbase;          /* NULL without a type table */
	struct call_site *cs;
	size_t ncs;
	const uint8_t *act;             /* action table */
	size_t actlen;                  /* bytes of it that call sites reach */
	uint64_t ntypes;                /* highest type index used */
	size_t speclen;                 /* bytes of exception specs after ttbase */
	struct rd r;                    /* over the region that holds the LSDA */
};

static const struct unw_region *region_of(const struct unw_image *img, uint64_t a)
{
	if (a >= img->except_table.addr && a - img->except_table.addr < img->except_table.size)
		return &img->except_table;
	if (a >= img->eh_frame.addr && a - img->eh_frame.addr < img->eh_frame.size)
		return &img->eh_frame;
	return NULL;
}

/* An exception specification list at ttbase + OFF: type indices up to 0. */
static int scan_spec(struct lsda *l, uint64_t off)
{
	struct rd s = l->r;
	if (!l->ttbase || off > (uint64_t)(s.end - l->ttbase))
		return -RTL_ERR_BAD_INPUT;
	s.p = l->ttbase + off;
	for (uint64_t idx; (idx = rd_uleb(&s)) != 0 && !s.bad;)
		l->ntypes = idx > l->ntypes ? idx : l->ntypes;
	if ((size_t)(s.p - l->ttbase) > l->speclen)
		l->speclen = (size_t)(s.p - l->ttbase);
	return s.bad ? -RTL_ERR_BAD_INPUT : 0;
}

/* Follows the action chain at action-table offset OFF: how far the table
 * extends, which type indices and specifications it uses. */
static int scan_actions(struct lsda *l, uint64_t off)
{
	struct rd a = l->r;
	for (int n = 0; n < MAX_ACTION_CHAIN; n++) {
		if (off > (uint64_t)(a.end - l->act))
			return -RTL_ERR_BAD_INPUT;
		a.p = l->act + off;
		int64_t filter = rd_sleb(&a);
		const uint8_t *disp_at = a.p;
		int64_t disp = rd_sleb(&a);
		if (a.bad)
			return -RTL_ERR_BAD_INPUT;
		if ((size_t)(a.p - l->act) > l->actlen)
			l->actlen = (size_t)(a.p - l->act);
		if (filter > 0 && (uint64_t)filter > l->ntypes)
			l->ntypes = (uint64_t)filter;
		if (filter < 0 && scan_spec(l, (uint64_t)(-filter - 1)))
			return -RTL_ERR_BAD_INPUT;
		if (disp == 0)
			return 0;
		int64_t next = (disp_at - l->act) + disp;
		if (next < 0)
			return -RTL_ERR_BAD_INPUT;
		off = (uint64_t)next;
	}
	return -RTL_ERR_BAD_INPUT;
}

static int parse_lsda(const struct unw_image *img, uint64_t addr, uint64_t region_start,
		      struct lsda *l, const char **why)
{
	const struct unw_region *reg = region_of(img, addr);
	struct rd *r = &l->r;

	memset(l, 0, sizeof(*l));
	if (!reg)
		return *why = "LSDA outside .gcc_except_table", -RTL_ERR_BAD_INPUT;
	rd_init(r, reg, (size_t)(addr - reg->addr), reg->size);
	unsigned lpenc = (unsigned)rd_u(r, 1);
	l->lpstart = lpenc == DW_EH_PE_omit ? region_start : rd_ptr(r, lpenc, img);
	l->ttenc = (unsigned)rd_u(r, 1);
	if (l->ttenc != DW_EH_PE_omit) {
		uint64_t off = rd_uleb(r);
		if (off > (uint64_t)(r->end - r->p) || !enc_size(l->ttenc))
			return *why = "bad LSDA type table", -RTL_ERR_BAD_INPUT;
		l->ttbase = r->p + off;
	}
	unsigned csenc = (unsigned)rd_u(r, 1);
	uint64_t cslen = rd_uleb(r);
	if (r->bad || cslen > (uint64_t)(r->end - r->p))
		return *why = "truncated LSDA header", -RTL_ERR_BAD_INPUT;
	if ((csenc & 0x70) != DW_EH_PE_absptr)
		return *why = "LSDA call sites not in an absolute encoding", -RTL_ERR_UNSUPPORTED;
	l->act = r->p + cslen;
	struct rd c = *r;
	c.end = l->act;
	while (c.p < c.end && !c.bad) {
		struct call_site s;
		s.start = rd_value(&c, csenc);
		s.len = rd_value(&c, csenc);
		s.lp = rd_value(&c, csenc);
		s.action = rd_uleb(&c);
		struct call_site *ncs = realloc(l->cs, (l->ncs + 1) * sizeof(*ncs));
		if (!ncs)
			return -ENOMEM;
		l->cs = ncs;
		l->cs[l->ncs++] = s;
		if (s.action && scan_actions(l, s.action - 1))
			return *why = "bad LSDA action chain", -RTL_ERR_BAD_INPUT;
	}
	if (c.bad)
		return *why = "truncated LSDA call-site table", -RTL_ERR_BAD_INPUT;
	size_t tsz = enc_size(l->ttenc);
	if (l->ntypes && (!l->ttbase || l->ntypes > (uint64_t)(l->ttbase - l->r.start) / tsz))
		return *why = "LSDA type index out of the table", -RTL_ERR_BAD_INPUT;
	return 0;
}

/* Call sites remapped, as uleb128 (the encoding the new LSDA declares). */
static int put_call_sites(const struct lsda *l, uint64_t region_start, const struct unw_map *m,
			  struct ob *o, const char **why)
{
	for (size_t i = 0; i < l->ncs; i++) {
		const struct call_site *s = &l->cs[i];
		uint64_t b = map_addr(m, region_start + s->start);
		uint64_t e = map_addr(m, region_start + s->start + s->len);
		uint64_t lp = 0;
		if (s->lp) {
			uint64_t t = map_exact(m, l->lpstart + s->lp);
			if (!t || t == m->new_start)
				return *why = "landing pad outside the relocated function", -RTL_ERR_UNSUPPORTED;
			lp = t - m->new_start;
		}
		put_uleb(o, b - m->new_start);
		put_uleb(o, e - b);
		put_uleb(o, lp);
		put_uleb(o, s->action);
	}
	return 0;
}

/* Writes the rewritten LSDA: LPStart omitted (the new region start), type
 * entries re-encoded as absolute pointers (keeping the indirect bit), call
 * sites remapped, action and specification tables copied. */
static int emit_lsda(const struct unw_image *img, struct lsda *l, uint64_t region_start,
		     const struct unw_map *m, struct ob *o, const char **why)
{
	struct ob cs = { 0 };
	int err = put_call_sites(l, region_start, m, &cs, why);
	if (err || cs.oom) {
		free(cs.b);
		return err ? err : -ENOMEM;
	}
	put_u8(o, DW_EH_PE_omit);
	unsigned ttenc = l->ttenc == DW_EH_PE_omit ? DW_EH_PE_omit
						   : (l->ttenc & DW_EH_PE_indirect) | DW_EH_PE_absptr;
	put_u8(o, (uint8_t)ttenc);
	if (l->ttbase)
		put_uleb(o, 1 + uleb_len(cs.len) + cs.len + l->actlen + 8 * l->ntypes);
	put_u8(o, DW_EH_PE_uleb128);
	put_uleb(o, cs.len);
	put(o, cs.b, cs.len);
	free(cs.b);
	put(o, l->act, l->actlen);
	if (!l->ttbase)
		return 0;
	size_t tsz = enc_size(l->ttenc);
	for (uint64_t i = l->ntypes; i >= 1; i--) {
		struct rd t = l->r;
		t.p = l->ttbase - i * tsz;
		put_le(o, rd_ptr(&t, l->ttenc & ~DW_EH_PE_indirect, img), 8);
		if (t.bad)
			return *why = "bad LSDA type entry", -RTL_ERR_BAD_INPUT;
	}
	put(o, l->ttbase, l->speclen);
	return 0;
}

/* ---- the blob ---- */

/* CIE copied with its augmentation data re-encoded for DEST. */
static int emit_cie(const struct cie *c, uint64_t dest, bool near, struct ob *o,
		    unsigned *fde_enc, const char **why)
{
	size_t start = o->len;
	put_le(o, 0, 4);
	put_le(o, 0, 4);                        /* CIE id */
	put_u8(o, (uint8_t)c->version);
	put(o, c->aug, strlen(c->aug) + 1);
	put(o, c->fixed, (size_t)(c->fixed_end - c->fixed));
	/* without 'R' FDEs use absolute pointers */
	*fde_enc = near && strchr(c->aug, 'R') ? PCREL_SDATA4 : DW_EH_PE_absptr;
	if (c->aug[0] == 'z') {
		unsigned penc = 0;
		size_t alen = 0;
		if (c->pers_enc != DW_EH_PE_omit) {
			uint64_t here = dest + start;
			bool pnear = fits32((int64_t)(c->pers - here)) &&
				     fits32((int64_t)(c->pers - here - 4096));
			penc = (c->pers_enc & DW_EH_PE_indirect) | (pnear ? PCREL_SDATA4 : DW_EH_PE_absptr);
		}
		for (const char *a = c->aug + 1; *a; a++)
			alen += *a == 'L' || *a == 'R' ? 1 : *a == 'P' ? 1 + enc_size(penc) : 0;
		put_uleb(o, alen);
		for (const char *a = c->aug + 1; *a; a++) {
			if (*a == 'L') {
				put_u8(o, PCREL_SDATA4);   /* the LSDA lives in the blob */
			} else if (*a == 'R') {
				put_u8(o, (uint8_t)*fde_enc);
			} else if (*a == 'P') {
				put_u8(o, (uint8_t)penc);
				if (!put_ptr(o, penc, c->pers, dest + o->len))
					return *why = "personality out of reach", -RTL_ERR_NO_SPACE;
			}
		}
	}
	put(o, c->insns, (size_t)(c->insns_end - c->insns));
	close_record(o, start);
	return 0;
}

/* Where an FDE's LSDA pointer must point once the LSDAs are placed. */
struct lsda_fix {
	size_t field;   /* offset of the pcrel field in the blob */
	size_t off;     /* offset of the LSDA among the LSDAs */
};

/* Appends the CIE and FDE of one relocated function to O (the blob, to live
 * at DEST) and its LSDA to SIDE (LSDAs do not depend on their address). */
static int add_function(const struct unw_image *img, const struct unw_map *m, uint64_t dest,
			struct ob *o, struct ob *side, struct lsda_fix *fix, bool *has_fix,
			const char **why)
{
	struct lsda l = { 0 };
	struct fde f;
	struct cie c;
	unsigned fde_enc;
	int err;

	*has_fix = false;
	if ((err = find(img, m->func_addr, &f, &c, why)))
		return err;
	if (c.caf != 1)
		return *why = "code alignment factor other than 1", -RTL_ERR_UNSUPPORTED;
	if (f.pub.lsda && c.lsda_enc != DW_EH_PE_omit &&
	    (err = parse_lsda(img, f.pub.lsda, f.pub.pc_begin, &l, why)))
		goto out;
	size_t cstart = o->len;
	uint64_t here = dest + cstart;
	bool near = fits32((int64_t)(m->new_start - here)) &&
		    fits32((int64_t)(m->new_start - here - 4096));
	if ((err = emit_cie(&c, dest, near, o, &fde_enc, why)))
		goto out;
	size_t fstart = o->len, lsda_field = 0;
	put_le(o, 0, 4);
	put_le(o, o->len - cstart, 4);          /* CIE pointer: back to its CIE */
	if (!put_ptr(o, fde_enc, m->new_start, dest + o->len)) {
		err = -RTL_ERR_NO_SPACE;
		*why = "relocated code out of reach of the blob";
		goto out;
	}
	put_le(o, m->new_len, enc_size(fde_enc));
	if (c.aug[0] == 'z') {
		bool has_l = c.lsda_enc != DW_EH_PE_omit;
		put_uleb(o, has_l ? 4 : 0);
		lsda_field = o->len;
		if (has_l)
			put_le(o, 0, 4);            /* null until the LSDA is placed */
	}
	if ((err = rewrite_cfa(img, &c, &f, m, o, why)))
		goto out;
	close_record(o, fstart);
	if (l.r.start) {
		fix->field = lsda_field;
		fix->off = side->len;
		if (!(err = emit_lsda(img, &l, f.pub.pc_begin, m, side, why)))
			*has_fix = true;
	}
out:
	free(l.cs);
	return err;
}

/* Functions in order, then the terminator, then the LSDAs. ALL: fail on the
 * first function that fails; else leave it out and say so in STATUS. */
static int build(const struct unw_image *img, const struct unw_map *maps, size_t n, uint64_t dest,
		 bool all, uint8_t **blob, size_t *len, int *status, const char **reason)
{
	struct ob o = { 0 }, side = { 0 };
	struct lsda_fix *fixes = malloc((n ? n : 1) * sizeof(*fixes));
	size_t nfix = 0;
	const char *why = NULL;
	int err = fixes ? 0 : -ENOMEM;

	*blob = NULL;
	*len = 0;
	for (size_t i = 0; i < n && !err; i++) {
		size_t o0 = o.len, s0 = side.len;
		bool has_fix;
		int e = add_function(img, &maps[i], dest, &o, &side, &fixes[nfix], &has_fix, &why);
		if (o.oom || side.oom)
			e = -ENOMEM;
		if (status)
			status[i] = e;
		if (e) {
			o.len = o0;
			side.len = s0;
			if (all || e == -ENOMEM)
				err = e;
		} else {
			nfix += has_fix;
		}
	}
	if (!err) {
		put_le(&o, 0, 4);                   /* terminator for __register_frame */
		size_t base = o.len;
		put(&o, side.b, side.len);
		for (size_t k = 0; k < nfix; k++)
			patch_u32(&o, fixes[k].field, (uint32_t)(base + fixes[k].off - fixes[k].field));
		err = o.oom ? -ENOMEM : 0;
	}
	free(fixes);
	free(side.b);
	if (err) {
		free(o.b);
		if (reason)
			*reason = why ? why : err == -ENOMEM ? "out of memory" : "unwind info not built";
		return err;
	}
	*blob = o.b;
	*len = o.len;
	if (reason)
		*reason = NULL;
	return 0;
}

int unw_build(const struct unw_image *img, const struct unw_map *m, uint64_t dest,
	      uint8_t **blob, size_t *len, const char **reason)
{
	return build(img, m, 1, dest, true, blob, len, NULL, reason);
}

int unw_build_many(const struct unw_image *img, const struct unw_map *maps, size_t n,
		   uint64_t dest, uint8_t **blob, size_t *len, int *status)
{
	return build(img, maps, n, dest, false, blob, len, status, NULL);
}

/* ---- loading the sections from a file ---- */

static int load_section(Elf *e, Elf_Scn *scn, const GElf_Shdr *sh, uint64_t bias,
			struct unw_region *reg)
{
	Elf_Data *d = elf_getdata(scn, NULL);
	if (!d || sh->sh_type == SHT_NOBITS || d->d_size == 0)
		return 0;
	uint8_t *copy = malloc(d->d_size);
	if (!copy)
		return -ENOMEM;
	memcpy(copy, d->d_buf, d->d_size);
	reg->data = copy;
	reg->size = d->d_size;
	reg->addr = sh->sh_addr + bias;
	return 0;
}

int unw_image_load(const char *path, uint64_t bias, struct unw_image *img)
{
	memset(img, 0, sizeof(*img));
	img->bias = bias;
	img->owned = true;
	if (elf_version(EV_CURRENT) == EV_NONE)
		return -RTL_ERR_BAD_ELF;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	Elf *e = elf_begin(fd, ELF_C_READ, NULL);
	size_t shstr;
	int err = 0;
	if (!e || elf_kind(e) != ELF_K_ELF)
		err = -RTL_ERR_NOT_ELF;
	else if (elf_getshdrstrndx(e, &shstr))
		err = -RTL_ERR_BAD_ELF;
	for (Elf_Scn *scn = NULL; !err && (scn = elf_nextscn(e, scn));) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh))
			continue;
		const char *name = elf_strptr(e, shstr, sh.sh_name);
		if (name && !strcmp(name, ".eh_frame"))
			err = load_section(e, scn, &sh, bias, &img->eh_frame);
		else if (name && !strcmp(name, ".gcc_except_table"))
			err = load_section(e, scn, &sh, bias, &img->except_table);
	}
	if (e)
		elf_end(e);
	close(fd);
	if (!err && !img->eh_frame.size)
		err = -RTL_ERR_BAD_ELF;
	if (!err)
		err = unw_image_index(img);
	if (err)
		unw_image_free(img);
	return err;
}

void unw_image_free(struct unw_image *img)
{
	if (img->owned) {
		free((void *)img->eh_frame.data);
		free((void *)img->except_table.data);
	}
	free((void *)img->index);
	memset(img, 0, sizeof(*img));
}
