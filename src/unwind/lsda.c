/* The LSDA (.gcc_except_table) of a relocated function: call sites and
 * landing pads remapped, type table re-encoded as absolute pointers, action
 * and exception-specification tables copied. */
#include <errno.h>
#include <reticle/error.h>
#include "unwind/internal.h"

/* ---- the LSDA (.gcc_except_table) ---- */


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
	struct rtl_eh_rd s = l->r;
	if (!l->ttbase || off > (uint64_t)(s.end - l->ttbase))
		return -RTL_ERR_BAD_INPUT;
	s.p = l->ttbase + off;
	for (uint64_t idx; (idx = rtl_eh_uleb(&s)) != 0 && !s.bad;)
		l->ntypes = idx > l->ntypes ? idx : l->ntypes;
	if ((size_t)(s.p - l->ttbase) > l->speclen)
		l->speclen = (size_t)(s.p - l->ttbase);
	return s.bad ? -RTL_ERR_BAD_INPUT : 0;
}

/* Follows the action chain at action-table offset OFF: how far the table
 * extends, which type indices and specifications it uses. */
static int scan_actions(struct lsda *l, uint64_t off)
{
	struct rtl_eh_rd a = l->r;
	for (int n = 0; n < MAX_ACTION_CHAIN; n++) {
		if (off > (uint64_t)(a.end - l->act))
			return -RTL_ERR_BAD_INPUT;
		a.p = l->act + off;
		int64_t filter = rtl_eh_sleb(&a);
		const uint8_t *disp_at = a.p;
		int64_t disp = rtl_eh_sleb(&a);
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

int unw_parse_lsda(const struct unw_image *img, uint64_t addr, uint64_t region_start,
		      struct lsda *l, const char **why)
{
	const struct unw_region *reg = region_of(img, addr);
	struct rtl_eh_rd *r = &l->r;

	memset(l, 0, sizeof(*l));
	if (!reg)
		return *why = "LSDA outside .gcc_except_table", -RTL_ERR_BAD_INPUT;
	unw_rd_init(r, reg, (size_t)(addr - reg->addr), reg->size);
	unsigned lpenc = (unsigned)rtl_eh_u(r, 1);
	l->lpstart = lpenc == DW_EH_PE_omit ? region_start : unw_ptr(r, lpenc, img);
	l->ttenc = (unsigned)rtl_eh_u(r, 1);
	if (l->ttenc != DW_EH_PE_omit) {
		uint64_t off = rtl_eh_uleb(r);
		if (off > (uint64_t)(r->end - r->p) || !rtl_eh_enc_size(l->ttenc))
			return *why = "bad LSDA type table", -RTL_ERR_BAD_INPUT;
		l->ttbase = r->p + off;
	}
	unsigned csenc = (unsigned)rtl_eh_u(r, 1);
	uint64_t cslen = rtl_eh_uleb(r);
	if (r->bad || cslen > (uint64_t)(r->end - r->p))
		return *why = "truncated LSDA header", -RTL_ERR_BAD_INPUT;
	if ((csenc & 0x70) != DW_EH_PE_absptr)
		return *why = "LSDA call sites not in an absolute encoding", -RTL_ERR_UNSUPPORTED;
	l->act = r->p + cslen;
	struct rtl_eh_rd c = *r;
	c.end = l->act;
	while (c.p < c.end && !c.bad) {
		struct call_site s;
		s.start = rtl_eh_value(&c, csenc);
		s.len = rtl_eh_value(&c, csenc);
		s.lp = rtl_eh_value(&c, csenc);
		s.action = rtl_eh_uleb(&c);
		if (rtl_grow(&l->cs, &l->capcs, l->ncs + 1, sizeof(*l->cs)))
			return -ENOMEM;
		l->cs[l->ncs++] = s;
		if (s.action && scan_actions(l, s.action - 1))
			return *why = "bad LSDA action chain", -RTL_ERR_BAD_INPUT;
	}
	if (c.bad)
		return *why = "truncated LSDA call-site table", -RTL_ERR_BAD_INPUT;
	size_t tsz = rtl_eh_enc_size(l->ttenc);
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
		uint64_t b = unw_map_addr(m, region_start + s->start);
		uint64_t e = unw_map_addr(m, region_start + s->start + s->len);
		uint64_t lp = 0;
		if (s->lp) {
			uint64_t t = unw_map_exact(m, l->lpstart + s->lp);
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
int unw_emit_lsda(const struct unw_image *img, struct lsda *l, uint64_t region_start,
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
	size_t tsz = rtl_eh_enc_size(l->ttenc);
	for (uint64_t i = l->ntypes; i >= 1; i--) {
		struct rtl_eh_rd t = l->r;
		t.p = l->ttbase - i * tsz;
		put_le(o, unw_ptr(&t, l->ttenc & ~DW_EH_PE_indirect, img), 8);
		if (t.bad)
			return *why = "bad LSDA type entry", -RTL_ERR_BAD_INPUT;
	}
	put(o, l->ttbase, l->speclen);
	return 0;
}

