/* Internals of the unwind-info builder (unwind*.c): bounds-checked readers
 * of DWARF-encoded bytes, a growable output buffer, and the pieces each file
 * provides. Not for use outside src/patch/unwind*.c. */
#ifndef RETICLE_PATCH_UNWIND_INTERNAL_H
#define RETICLE_PATCH_UNWIND_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <dwarf.h>
#include "patch/unwind.h"

enum { PCREL_SDATA4 = DW_EH_PE_pcrel | DW_EH_PE_sdata4, MAX_ACTION_CHAIN = 4096 };

/* ---- reading ---- */

struct rd {
	const uint8_t *start, *p, *end;
	uint64_t base;   /* run-time address of start */
	bool bad;
};

static inline void rd_init(struct rd *r, const struct unw_region *reg, size_t off, size_t end)
{
	r->start = reg->data;
	r->p = reg->data + (off < reg->size ? off : reg->size);
	r->end = reg->data + (end < reg->size ? end : reg->size);
	r->base = reg->addr;
	r->bad = off > reg->size;
}

static inline uint64_t rd_u(struct rd *r, size_t n)
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

static inline uint64_t rd_uleb(struct rd *r)
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

static inline int64_t rd_sleb(struct rd *r)
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

static inline size_t enc_size(unsigned enc)
{
	switch (enc & 0x0f) {
	case DW_EH_PE_absptr: case DW_EH_PE_udata8: case DW_EH_PE_sdata8: return 8;
	case DW_EH_PE_udata2: case DW_EH_PE_sdata2: return 2;
	case DW_EH_PE_udata4: case DW_EH_PE_sdata4: return 4;
	default: return 0;   /* leb128: variable */
	}
}

/* The value part of a pointer in encoding ENC, no base applied. */
static inline uint64_t rd_value(struct rd *r, unsigned enc)
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
static inline uint64_t rd_ptr(struct rd *r, unsigned enc, const struct unw_image *img)
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

/* ---- writing ---- */

struct ob {
	uint8_t *b;
	size_t len, cap;
	bool oom;
};

static inline void put(struct ob *o, const void *p, size_t n)
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

static inline void put_u8(struct ob *o, uint8_t v) { put(o, &v, 1); }

static inline void put_le(struct ob *o, uint64_t v, size_t n)
{
	uint8_t b[8];
	for (size_t i = 0; i < n; i++)
		b[i] = (uint8_t)(v >> (8 * i));
	put(o, b, n);
}

static inline void patch_u32(struct ob *o, size_t at, uint32_t v)
{
	if (!o->oom)
		for (int i = 0; i < 4; i++)
			o->b[at + i] = (uint8_t)(v >> (8 * i));
}

static inline size_t uleb_len(uint64_t v)
{
	size_t n = 1;
	while (v >>= 7)
		n++;
	return n;
}

static inline void put_uleb(struct ob *o, uint64_t v)
{
	do {
		uint8_t b = v & 0x7f;
		v >>= 7;
		put_u8(o, (uint8_t)(b | (v ? 0x80 : 0)));
	} while (v);
}

static inline bool fits32(int64_t v) { return v == (int32_t)v; }

/* A pointer in ENC (PCREL_SDATA4 or absptr, with the indirect bit), for a
 * field at run-time address HERE. */
static inline bool put_ptr(struct ob *o, unsigned enc, uint64_t v, uint64_t here)
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
static inline void close_record(struct ob *o, size_t start)
{
	while ((o->len - start) % 8)
		put_u8(o, DW_CFA_nop);
	patch_u32(o, start, (uint32_t)(o->len - start - 4));
}

/* ---- records and the pieces of the builder ---- */

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

struct fde {
	struct unw_fde pub;
	const uint8_t *insns, *insns_end;
	size_t insns_off;    /* offset of insns in eh_frame.data */
};

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

/* unwind_ehframe.c: the FDE over PC with its CIE. */
int unw_find_record(const struct unw_image *img, uint64_t pc, struct fde *f, struct cie *c,
		    const char **why);

/* unwind_cfa.c: relocated address of original A (the instruction at or
 * after it; the function's bounds map to the copy's), or of exactly A (0 if
 * A is not an instruction start); the CFA program re-targeted. */
uint64_t unw_map_addr(const struct unw_map *m, uint64_t a);
uint64_t unw_map_exact(const struct unw_map *m, uint64_t a);
int unw_rewrite_cfa(const struct unw_image *img, const struct cie *c, const struct fde *f,
		    const struct unw_map *m, struct ob *o, const char **why);

/* unwind_lsda.c: the LSDA at ADDR of the region starting at REGION_START,
 * and its rewritten form (free l->cs after parsing). */
int unw_parse_lsda(const struct unw_image *img, uint64_t addr, uint64_t region_start,
		   struct lsda *l, const char **why);
int unw_emit_lsda(const struct unw_image *img, struct lsda *l, uint64_t region_start,
		  const struct unw_map *m, struct ob *o, const char **why);

#endif
