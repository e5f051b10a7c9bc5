/* .eh_frame records: the framing of CIEs and FDEs, the CIE's augmentation,
 * the FDE's fields, and the walk over a section. See ehframe.h. */
#include <string.h>
#include <reticle/error.h>
#include "ehframe.h"

struct record {
	size_t body, end;    /* offsets: after the length field, past the record */
	uint64_t id;         /* 0 for a CIE, else the CIE pointer */
	size_t after_id;
};

static void rd_at(struct rtl_eh_rd *r, const struct rtl_eh_frame *eh, size_t off, size_t end)
{
	rtl_eh_rd_init(r, eh->data, eh->size, eh->addr, off, end);
}

/* Record at OFF: 1 at the terminator or the end, 0, or -1 when malformed. */
static int record_at(const struct rtl_eh_frame *eh, size_t off, struct record *e)
{
	struct rtl_eh_rd r;
	rd_at(&r, eh, off, eh->size);
	if (off + 4 > eh->size)
		return 1;
	uint64_t len = rtl_eh_u(&r, 4);
	bool is64 = len == 0xffffffffu;
	if (len == 0)
		return 1;
	if (is64)
		len = rtl_eh_u(&r, 8);
	e->body = (size_t)(r.p - r.start);
	if (r.bad || len > eh->size - e->body || len < (is64 ? 8u : 4u))
		return -1;
	e->end = e->body + (size_t)len;
	e->id = rtl_eh_u(&r, is64 ? 8 : 4);
	e->after_id = (size_t)(r.p - r.start);
	return 0;
}

/* The letters after 'z' and their data. */
static void parse_augmentation(const struct rtl_eh_frame *eh, struct rtl_eh_rd *r,
			       const char *a, struct rtl_eh_cie *c)
{
	for (; *a && !r->bad; a++) {
		if (*a == 'L') {
			c->lsda_enc = (unsigned)rtl_eh_u(r, 1);
		} else if (*a == 'R') {
			c->fde_enc = (unsigned)rtl_eh_u(r, 1);
		} else if (*a == 'P') {
			c->pers_enc = (unsigned)rtl_eh_u(r, 1);
			c->pers = rtl_eh_ptr(r, c->pers_enc, &eh->bases);
		} else if (*a == 'S') {
			c->signal = true;
		} else if (*a != 'B' && *a != 'G') {
			c->unknown_aug = true;   /* the 'z' length lets us skip the rest */
			return;
		}
	}
}

int rtl_eh_parse_cie(const struct rtl_eh_frame *eh, size_t off, struct rtl_eh_cie *c,
		     const char **why)
{
	struct record e;
	struct rtl_eh_rd r;

	if (record_at(eh, off, &e) || e.id != 0)
		return *why = "CIE pointer does not name a CIE", -RTL_ERR_BAD_INPUT;
	rd_at(&r, eh, e.after_id, e.end);
	memset(c, 0, sizeof(*c));
	c->fde_enc = DW_EH_PE_absptr;
	c->lsda_enc = c->pers_enc = DW_EH_PE_omit;
	c->version = (unsigned)rtl_eh_u(&r, 1);
	c->aug = (const char *)r.p;
	const uint8_t *nul = memchr(r.p, 0, (size_t)(r.end - r.p));
	if (!nul)
		return *why = "unterminated CIE augmentation", -RTL_ERR_BAD_INPUT;
	if (c->version != 1 && c->version != 3 && c->version != 4)
		return *why = "CIE version other than 1, 3 and 4", -RTL_ERR_UNSUPPORTED;
	r.p = nul + 1;
	const char *a = c->aug;
	if (a[0] == 'e' && a[1] == 'h') {   /* GCC 2's eh_ptr */
		rtl_eh_u(&r, 8);
		a += 2;
	}
	if (c->version == 4)
		rtl_eh_u(&r, 2);   /* address size, segment selector size */
	c->fixed = r.p;
	c->caf = rtl_eh_uleb(&r);
	c->daf = rtl_eh_sleb(&r);
	if (c->version == 1)
		rtl_eh_u(&r, 1);
	else
		rtl_eh_uleb(&r);
	c->fixed_end = r.p;
	if (a[0] == 'z') {
		c->has_z = true;
		uint64_t alen = rtl_eh_uleb(&r);
		if (alen > (uint64_t)(r.end - r.p))
			return *why = "CIE augmentation data past its end", -RTL_ERR_BAD_INPUT;
		const uint8_t *aend = r.p + alen;
		parse_augmentation(eh, &r, a + 1, c);
		if (r.p > aend)
			return *why = "CIE augmentation data overruns", -RTL_ERR_BAD_INPUT;
		r.p = aend;
	} else if (a[0]) {
		c->unknown_aug = true;   /* no length: where its data ends is unknown */
	}
	c->insns = r.p;
	c->insns_end = r.end;
	if (r.bad)
		return *why = "truncated CIE", -RTL_ERR_BAD_INPUT;
	return 0;
}

/* The FDE's augmentation data (its LSDA) and where its CFA program lies. */
static int parse_fde_rest(const struct rtl_eh_frame *eh, struct rtl_eh_rd *r,
			  const struct rtl_eh_cie *c, struct rtl_eh_fde *f)
{
	if (c->has_z) {
		uint64_t alen = rtl_eh_uleb(r);
		if (alen > (uint64_t)(r->end - r->p))
			return -RTL_ERR_BAD_INPUT;
		const uint8_t *aend = r->p + alen;
		if (c->lsda_enc != DW_EH_PE_omit)
			f->lsda = rtl_eh_ptr(r, c->lsda_enc, &eh->bases);
		if (r->p > aend)
			return -RTL_ERR_BAD_INPUT;
		r->p = aend;
	}
	f->insns = r->p;
	f->insns_end = r->end;
	return r->bad ? -RTL_ERR_BAD_INPUT : 0;
}

/* The FDE record E (at OFF) with its CIE C. */
static int parse_fde(const struct rtl_eh_frame *eh, size_t off, const struct record *e,
		     const struct rtl_eh_cie *c, struct rtl_eh_fde *f, const char **why)
{
	struct rtl_eh_rd r;
	rd_at(&r, eh, e->after_id, e->end);
	memset(f, 0, sizeof(*f));
	f->fde_off = off;
	f->cie_off = e->body - (size_t)e->id;
	if (c->fde_enc & DW_EH_PE_indirect)   /* would need the loaded image */
		return *why = "indirect FDE pointer", -RTL_ERR_UNSUPPORTED;
	f->pc_begin = rtl_eh_ptr(&r, c->fde_enc, &eh->bases);
	/* as in libgcc, a signed range is sign-extended: a negative one
	 * (corrupt) leaves pc_end below pc_begin, an FDE over nothing */
	f->pc_end = f->pc_begin + rtl_eh_value(&r, c->fde_enc);
	if (r.bad)
		return *why = "truncated FDE", -RTL_ERR_BAD_INPUT;
	if (parse_fde_rest(eh, &r, c, f)) {
		if (!eh->lenient)
			return *why = "truncated FDE", -RTL_ERR_BAD_INPUT;
		f->lsda = 0;
		f->insns = f->insns_end = NULL;
	}
	return 0;
}

int rtl_eh_load_fde(const struct rtl_eh_frame *eh, size_t off, struct rtl_eh_fde *f,
		    struct rtl_eh_cie *c, const char **why)
{
	struct record e;
	if (record_at(eh, off, &e) || e.id == 0 || e.id > e.body)
		return *why = "malformed .eh_frame record", -RTL_ERR_BAD_INPUT;
	int err = rtl_eh_parse_cie(eh, e.body - (size_t)e.id, c, why);
	return err ? err : parse_fde(eh, off, &e, c, f, why);
}

int rtl_eh_foreach_fde(const struct rtl_eh_frame *eh, rtl_eh_visit_fn visit, void *ctx,
		       const char **why)
{
	size_t off = 0, cie_off = (size_t)-1;
	bool cie_ok = false;
	struct record e;
	struct rtl_eh_fde f;
	struct rtl_eh_cie c;
	const char *skip_why;   /* of a record skipped: not the walk's */
	int st, ret;

	while ((st = record_at(eh, off, &e)) == 0) {
		if (e.id != 0) {
			if (e.id > e.body && eh->lenient) {
				off = e.end;
				continue;
			}
			if (e.id > e.body)
				return *why = "FDE's CIE pointer out of the section", -RTL_ERR_BAD_INPUT;
			size_t co = e.body - (size_t)e.id;
			if (co != cie_off) {   /* FDEs mostly follow their CIE: parse it once */
				cie_ok = rtl_eh_parse_cie(eh, co, &c, &skip_why) == 0;
				cie_off = co;
			}
			if (cie_ok && parse_fde(eh, off, &e, &c, &f, &skip_why) == 0 &&
			    (ret = visit(ctx, &f, &c)))
				return ret;
		}
		off = e.end;
	}
	if (st < 0)
		return *why = "malformed .eh_frame record", -RTL_ERR_BAD_INPUT;
	return 0;
}
