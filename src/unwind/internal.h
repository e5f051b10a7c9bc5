/* Internals of the unwind-info builder (unwind*.c): the .eh_frame reader
 * of src/elf bound to an unw_image, a growable output buffer, and the pieces
 * each file provides. Not for use outside src/unwind/. */
#ifndef RETICLE_UNWIND_INTERNAL_H
#define RETICLE_UNWIND_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <dwarf.h>
#include "elf/ehframe.h"
#include "unwind/unwind.h"
#include "util/array.h"

enum { PCREL_SDATA4 = DW_EH_PE_pcrel | DW_EH_PE_sdata4, MAX_ACTION_CHAIN = 4096 };

/* ---- reading: the .eh_frame reader of src/elf ---- */

static inline struct rtl_eh_bases unw_bases(const struct unw_image *img)
{
	return (struct rtl_eh_bases){ img->text_base, img->data_base, img->bias };
}

static inline struct rtl_eh_frame unw_frame(const struct unw_image *img)
{
	const struct unw_region *eh = &img->eh_frame;
	return (struct rtl_eh_frame){ eh->data, eh->size, eh->addr, unw_bases(img), false };
}

/* A reader over REG's bytes [OFF, END). */
static inline void unw_rd_init(struct rtl_eh_rd *r, const struct unw_region *reg, size_t off,
			       size_t end)
{
	rtl_eh_rd_init(r, reg->data, reg->size, reg->addr, off, end);
}

/* A pointer in ENC with the module's bases (see rtl_eh_ptr). */
static inline uint64_t unw_ptr(struct rtl_eh_rd *r, unsigned enc, const struct unw_image *img)
{
	struct rtl_eh_bases b = unw_bases(img);
	return rtl_eh_ptr(r, enc, &b);
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
	if (rtl_grow(&o->b, &o->cap, o->len + n, 1)) {
		o->oom = true;
		return;
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

struct call_site {
	uint64_t start, len, lp, action;
};

struct lsda {
	uint64_t lpstart;
	unsigned ttenc;
	const uint8_t *ttbase;          /* NULL without a type table */
	struct call_site *cs;
	size_t ncs, capcs;
	const uint8_t *act;             /* action table */
	size_t actlen;                  /* bytes of it that call sites reach */
	uint64_t ntypes;                /* highest type index used */
	size_t speclen;                 /* bytes of exception specs after ttbase */
	struct rtl_eh_rd r;             /* over the region that holds the LSDA */
};

/* ehframe.c: the FDE over PC with its CIE, when the builder can
 * rewrite that CIE. */
int unw_find_record(const struct unw_image *img, uint64_t pc, struct rtl_eh_fde *f,
		    struct rtl_eh_cie *c, const char **why);

/* cfa.c: relocated address of original A (the instruction at or
 * after it; the function's bounds map to the copy's), or of exactly A (0 if
 * A is not an instruction start); the CFA program re-targeted. */
uint64_t unw_map_addr(const struct unw_map *m, uint64_t a);
uint64_t unw_map_exact(const struct unw_map *m, uint64_t a);
int unw_rewrite_cfa(const struct unw_image *img, const struct rtl_eh_cie *c,
		    const struct rtl_eh_fde *f, const struct unw_map *m, struct ob *o,
		    const char **why);

/* lsda.c: the LSDA at ADDR of the region starting at REGION_START,
 * and its rewritten form (free l->cs after parsing). */
int unw_parse_lsda(const struct unw_image *img, uint64_t addr, uint64_t region_start,
		   struct lsda *l, const char **why);
int unw_emit_lsda(const struct unw_image *img, struct lsda *l, uint64_t region_start,
		  const struct unw_map *m, struct ob *o, const char **why);

#endif
