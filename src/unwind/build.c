/* The blob for __register_frame: CIE and FDE per relocated function, a
 * terminator, then the LSDAs. See unwind.h and docs/unwind.md. */
#include <errno.h>
#include <reticle/error.h>
#include "unwind/internal.h"

/* CIE copied with its augmentation data re-encoded for DEST. */
static int emit_cie(const struct rtl_eh_cie *c, uint64_t dest, bool near, struct ob *o,
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
			alen += *a == 'L' || *a == 'R' ? 1 : *a == 'P' ? 1 + rtl_eh_enc_size(penc) : 0;
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
	struct rtl_eh_fde f;
	struct rtl_eh_cie c;
	unsigned fde_enc;
	int err;

	*has_fix = false;
	if ((err = unw_find_record(img, m->func_addr, &f, &c, why)))
		return err;
	if (c.caf != 1)
		return *why = "code alignment factor other than 1", -RTL_ERR_UNSUPPORTED;
	if (f.lsda && c.lsda_enc != DW_EH_PE_omit &&
	    (err = unw_parse_lsda(img, f.lsda, f.pc_begin, &l, why)))
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
	/* the copy, or its part the FDE covers when the FDE ends inside the
	 * function (code past it has other CFI or none: better no row there
	 * than this FDE's last one) */
	put_le(o, unw_map_addr(m, f.pc_end) - m->new_start, rtl_eh_enc_size(fde_enc));
	if (c.aug[0] == 'z') {
		bool has_l = c.lsda_enc != DW_EH_PE_omit;
		put_uleb(o, has_l ? 4 : 0);
		lsda_field = o->len;
		if (has_l)
			put_le(o, 0, 4);            /* null until the LSDA is placed */
	}
	if ((err = unw_rewrite_cfa(img, &c, &f, m, o, why)))
		goto out;
	close_record(o, fstart);
	if (l.r.start) {
		fix->field = lsda_field;
		fix->off = side->len;
		if (!(err = unw_emit_lsda(img, &l, f.pc_begin, m, side, why)))
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


static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

int unw_landing_pads(const struct unw_image *img, uint64_t func_addr, uint64_t **pads, size_t *n)
{
	struct lsda l = { 0 };
	struct rtl_eh_fde f;
	struct rtl_eh_cie c;
	const char *why;
	*pads = NULL;
	*n = 0;
	int err = unw_find_record(img, func_addr, &f, &c, &why);
	if (err || !f.lsda || c.lsda_enc == DW_EH_PE_omit)
		return err;
	if ((err = unw_parse_lsda(img, f.lsda, f.pc_begin, &l, &why)))
		goto out;
	if (l.ncs && !(*pads = malloc(l.ncs * sizeof(**pads)))) {
		err = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < l.ncs; i++)
		if (l.cs[i].lp)
			(*pads)[(*n)++] = l.lpstart + l.cs[i].lp;
	qsort(*pads, *n, sizeof(**pads), cmp_u64);
	size_t k = 0;   /* call sites share pads */
	for (size_t i = 0; i < *n; i++)
		if (!k || (*pads)[k - 1] != (*pads)[i])
			(*pads)[k++] = (*pads)[i];
	*n = k;
out:
	free(l.cs);
	return err;
}
