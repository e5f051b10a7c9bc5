/* The one reader of the .eh_frame format (LSB "Exception Frame"), for the
 * binary analyzer (ehframe.c: functions from FDEs) and for the unwind-info
 * builder of src/patch (it rewrites CIEs, FDEs and LSDAs for relocated
 * code). Owned by src/elf; src/patch may use it, not the other way round.
 *
 * Every read is bounds-checked: the bytes come from untrusted files. A
 * reader that runs out of bytes or meets an encoding it cannot decode sets
 * its BAD flag and returns 0 from then on. Pointer decoding follows libgcc's
 * read_encoded_value: a raw zero stays null (a discarded FDE or no LSDA). */
#ifndef RETICLE_ELF_EHFRAME_H
#define RETICLE_ELF_EHFRAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <dwarf.h>

/* ---- primitive reads: fixed-size little-endian, LEB128, DW_EH_PE_* ---- */

struct rtl_eh_rd {
	const uint8_t *start, *p, *end;
	uint64_t base;   /* address of start, for DW_EH_PE_pcrel */
	bool bad;
};

/* Bases of the DW_EH_PE_* application formats other than pcrel. */
struct rtl_eh_bases {
	uint64_t text, data;   /* DW_EH_PE_textrel, DW_EH_PE_datarel */
	uint64_t bias;         /* added to absolute pointers (a module's load bias) */
};

/* A reader over DATA[OFF, END) (both clamped to SIZE); DATA[0] lives at ADDR. */
static inline void rtl_eh_rd_init(struct rtl_eh_rd *r, const uint8_t *data, size_t size,
				  uint64_t addr, size_t off, size_t end)
{
	r->start = data;
	r->p = data + (off < size ? off : size);
	r->end = data + (end < size ? end : size);
	r->base = addr;
	r->bad = off > size;
}

static inline uint64_t rtl_eh_u(struct rtl_eh_rd *r, size_t n)
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

static inline uint64_t rtl_eh_uleb(struct rtl_eh_rd *r)
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

static inline int64_t rtl_eh_sleb(struct rtl_eh_rd *r)
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

/* Bytes of a value in encoding ENC; 0 for the variable-length LEB128. */
static inline size_t rtl_eh_enc_size(unsigned enc)
{
	switch (enc & 0x0f) {
	case DW_EH_PE_absptr: case DW_EH_PE_udata8: case DW_EH_PE_sdata8: return 8;
	case DW_EH_PE_udata2: case DW_EH_PE_sdata2: return 2;
	case DW_EH_PE_udata4: case DW_EH_PE_sdata4: return 4;
	default: return 0;
	}
}

/* The value part of a pointer in encoding ENC, no base applied. */
static inline uint64_t rtl_eh_value(struct rtl_eh_rd *r, unsigned enc)
{
	if ((enc & 0x0f) == DW_EH_PE_sdata4 && r->end - r->p >= 4) {
		/* what GCC and ld emit, first: the compiler makes it one load */
		uint32_t v = (uint32_t)r->p[0] | (uint32_t)r->p[1] << 8 | (uint32_t)r->p[2] << 16 |
			     (uint32_t)r->p[3] << 24;
		r->p += 4;
		return (uint64_t)(int64_t)(int32_t)v;
	}
	switch (enc & 0x0f) {
	case DW_EH_PE_absptr: case DW_EH_PE_udata8: case DW_EH_PE_sdata8: return rtl_eh_u(r, 8);
	case DW_EH_PE_uleb128: return rtl_eh_uleb(r);
	case DW_EH_PE_sleb128: return (uint64_t)rtl_eh_sleb(r);
	case DW_EH_PE_udata2: return rtl_eh_u(r, 2);
	case DW_EH_PE_sdata2: return (uint64_t)(int64_t)(int16_t)rtl_eh_u(r, 2);
	case DW_EH_PE_udata4: return rtl_eh_u(r, 4);
	case DW_EH_PE_sdata4: return (uint64_t)(int64_t)(int32_t)rtl_eh_u(r, 4);
	default: r->bad = true; return 0;
	}
}

/* A pointer in encoding ENC with its base applied (a raw zero stays 0;
 * DW_EH_PE_omit is the caller's to check: here it is unreadable). The
 * indirect bit is left to the caller: the result is then the address of
 * the pointer. */
static inline uint64_t rtl_eh_ptr(struct rtl_eh_rd *r, unsigned enc, const struct rtl_eh_bases *b)
{
	uint64_t here = r->base + (uint64_t)(r->p - r->start);
	uint64_t v = rtl_eh_value(r, enc);

	if (v == 0 || r->bad)
		return v;
	switch (enc & 0x70) {
	case DW_EH_PE_absptr: return v + b->bias;
	case DW_EH_PE_pcrel: return v + here;
	case DW_EH_PE_textrel: return v + b->text;
	case DW_EH_PE_datarel: return v + b->data;
	default: r->bad = true; return 0;   /* funcrel, aligned: not in .eh_frame */
	}
}

/* ---- records ---- */

/* A .eh_frame section: its bytes, where they live, the pointer bases. */
struct rtl_eh_frame {
	const uint8_t *data;
	size_t size;
	uint64_t addr;   /* address of data[0] */
	struct rtl_eh_bases bases;
	/* For function discovery, which needs only each FDE's start and
	 * range: an FDE whose augmentation data does not read is still
	 * visited (lsda 0, insns NULL), and a record whose CIE
	 * pointer leaves the section is skipped instead of ending the walk. */
	bool lenient;
};

struct rtl_eh_cie {
	unsigned version;                   /* 1, 3 or 4 */
	const char *aug;                    /* the augmentation string */
	bool has_z;                         /* augmentation data with a length */
	bool signal;                        /* 'S': a signal return trampoline */
	bool unknown_aug;                   /* a letter not known (skipped through the 'z'
					     * length), or letters without 'z' */
	const uint8_t *fixed, *fixed_end;   /* alignment factors and RA register */
	uint64_t caf;
	int64_t daf;
	unsigned fde_enc, lsda_enc, pers_enc;
	uint64_t pers;                      /* personality (address of it if indirect) */
	const uint8_t *insns, *insns_end;   /* initial CFA program */
};

struct rtl_eh_fde {
	uint64_t pc_begin, pc_end;          /* pc_begin 0: discarded by the linker;
					     * pc_end <= pc_begin: covers nothing */
	uint64_t lsda;                      /* 0 if none */
	size_t fde_off, cie_off;            /* offsets of the records in the section */
	const uint8_t *insns, *insns_end;   /* CFA program */
};

/* The CIE at OFF. 0, -RTL_ERR_BAD_INPUT or -RTL_ERR_UNSUPPORTED (a version
 * other than 1, 3 and 4); *WHY says which. */
int rtl_eh_parse_cie(const struct rtl_eh_frame *eh, size_t off, struct rtl_eh_cie *c,
		     const char **why);
/* The FDE at OFF with its CIE. 0, -RTL_ERR_BAD_INPUT or -RTL_ERR_UNSUPPORTED. */
int rtl_eh_load_fde(const struct rtl_eh_frame *eh, size_t off, struct rtl_eh_fde *f,
		    struct rtl_eh_cie *c, const char **why);
/* Calls VISIT on every FDE whose CIE and fields read (pc_begin may be 0)
 * in section order, up to the terminator, until it returns nonzero (that
 * value is returned). FDEs under a CIE that does not read are skipped;
 * a record whose length (or, unless lenient, CIE pointer) is out of the
 * section ends the walk with -RTL_ERR_BAD_INPUT (what came before it was
 * visited). */
typedef int (*rtl_eh_visit_fn)(void *ctx, const struct rtl_eh_fde *f, const struct rtl_eh_cie *c);
int rtl_eh_foreach_fde(const struct rtl_eh_frame *eh, rtl_eh_visit_fn visit, void *ctx,
		       const char **why);

#endif
