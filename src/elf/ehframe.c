/* .eh_frame: every FDE's initial location is a function entry (or a cold
 * part of one) and its address range is the size. Parsed by hand from the
 * section bytes: CIEs give the pointer encoding of their FDEs (augmentation
 * 'R'), and every read is bounds-checked because the input is untrusted. */
#include <stdlib.h>
#include <string.h>
#include <dwarf.h>
#include <reticle/error.h>
#include "binary_internal.h"

struct reader {
	const unsigned char *p, *end;
	uint64_t base;   /* link-time address of the section start */
	const unsigned char *start;
	int bad;
};

static uint64_t rd_u(struct reader *r, size_t n)
{
	uint64_t v = 0;
	if ((size_t)(r->end - r->p) < n) {
		r->bad = 1;
		r->p = r->end;
		return 0;
	}
	for (size_t i = 0; i < n; i++)
		v |= (uint64_t)r->p[i] << (8 * i);
	r->p += n;
	return v;
}

static uint64_t rd_uleb(struct reader *r)
{
	uint64_t v = 0;
	for (unsigned shift = 0; r->p < r->end; shift += 7) {
		unsigned char b = *r->p++;
		if (shift < 64)
			v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			return v;
	}
	r->bad = 1;
	return v;
}

static int64_t rd_sleb(struct reader *r)
{
	int64_t v = 0;
	unsigned shift = 0;
	while (r->p < r->end) {
		unsigned char b = *r->p++;
		if (shift < 64)
			v |= (int64_t)((uint64_t)(b & 0x7f) << shift);
		shift += 7;
		if (!(b & 0x80)) {
			if (shift < 64 && (b & 0x40))
				v |= -((int64_t)1 << shift);
			return v;
		}
	}
	r->bad = 1;
	return v;
}

#define bases rtl_eh_bases

/* Reads a pointer in encoding ENC; APPLY 0 for the FDE's address range,
 * which uses only the value format. Sets r->bad on what it cannot read. */
static uint64_t rd_ptr(struct reader *r, unsigned enc, const struct bases *b, int apply)
{
	uint64_t here = r->base + (uint64_t)(r->p - r->start), v;

	if (enc == DW_EH_PE_omit)
		return 0;
	switch (enc & 0x0f) {
	case DW_EH_PE_absptr: v = rd_u(r, 8); break;
	case DW_EH_PE_uleb128: v = rd_uleb(r); break;
	case DW_EH_PE_udata2: v = rd_u(r, 2); break;
	case DW_EH_PE_udata4: v = rd_u(r, 4); break;
	case DW_EH_PE_udata8: v = rd_u(r, 8); break;
	case DW_EH_PE_sleb128: v = (uint64_t)rd_sleb(r); break;
	case DW_EH_PE_sdata2: v = (uint64_t)(int64_t)(int16_t)rd_u(r, 2); break;
	case DW_EH_PE_sdata4: v = (uint64_t)(int64_t)(int32_t)rd_u(r, 4); break;
	case DW_EH_PE_sdata8: v = rd_u(r, 8); break;
	default: r->bad = 1; return 0;
	}
	if (!apply)
		return v;
	switch (enc & 0x70) {
	case DW_EH_PE_absptr: break;
	case DW_EH_PE_pcrel: v += here; break;
	case DW_EH_PE_textrel: v += b->text; break;
	case DW_EH_PE_datarel: v += b->data; break;
	default: r->bad = 1; return 0;  /* funcrel, aligned: not used in .eh_frame */
	}
	if (enc & DW_EH_PE_indirect)
		r->bad = 1;  /* would need the loaded image; no linker emits it here */
	return v;
}

struct cie {
	unsigned fde_enc;
	int has_z;
	int signal;  /* 'S': a signal return trampoline */
};

/* Parses the CIE at R (after its id) for what FDEs need. */
static int parse_cie(struct reader *r, const struct bases *b, struct cie *cie)
{
	unsigned version = (unsigned)rd_u(r, 1);
	const char *aug = (const char *)r->p;
	const unsigned char *nul = memchr(r->p, 0, (size_t)(r->end - r->p));

	cie->fde_enc = DW_EH_PE_absptr;
	cie->has_z = 0;
	cie->signal = 0;
	if (!nul || (version != 1 && version != 3 && version != 4))
		return -1;
	r->p = nul + 1;
	if (strstr(aug, "eh"))
		rd_u(r, 8);
	if (version == 4)
		rd_u(r, 2);  /* address size, segment selector size */
	rd_uleb(r);  /* code alignment */
	rd_sleb(r);  /* data alignment */
	if (version == 1)
		rd_u(r, 1);
	else
		rd_uleb(r);
	if (aug[0] != 'z')
		return r->bad ? -1 : 0;
	cie->has_z = 1;
	uint64_t auglen = rd_uleb(r);
	const unsigned char *augend = r->p + (auglen < (uint64_t)(r->end - r->p) ? auglen : 0);
	for (const char *a = aug + 1; *a && !r->bad; a++) {
		if ((*a == 'R' || *a == 'L' || *a == 'P') && r->p >= augend)
			break;  /* the letters with data must fit in the length */
		if (*a == 'R')
			cie->fde_enc = (unsigned)rd_u(r, 1);
		else if (*a == 'L')
			rd_u(r, 1);
		else if (*a == 'P')
			rd_ptr(r, (unsigned)rd_u(r, 1) & 0x7f, b, 0);
		else if (*a == 'S')
			cie->signal = 1;
		else if (*a != 'B' && *a != 'G')
			break;  /* unknown letter: the augmentation length lets us skip it */
	}
	return r->bad ? -1 : 0;
}

static void section_bases(rtl_binary *bin, struct bases *b)
{
	GElf_Shdr sh;
	b->text = rtl_binary_find_section(bin, ".text", &sh) ? sh.sh_addr : 0;
	b->data = rtl_binary_find_section(bin, ".got", &sh) ? sh.sh_addr : 0;
}

/* Hand-written assembly sometimes opens its CFI before the alignment
 * padding (glibc's _dl_tlsdesc_undefweak): an FDE that starts off a 16-byte
 * boundary with padding up to one describes the function that follows. */
static void skip_leading_padding(const rtl_binary *bin, uint64_t *pc, uint64_t *range)
{
	if ((*pc & 15) == 0 || *range > 1u << 30)
		return;
	const unsigned char *p = rtl_binary_ptr(bin, *pc, (size_t)*range);
	if (!p)
		return;
	size_t skip = rtl_elf_skip_padding(p, (size_t)*range, 0);
	if (skip && skip < *range && ((*pc + skip) & 15) == 0) {
		*pc += skip;
		*range -= skip;
	}
}

/* One entry at OFF: returns the offset of the next or 0 at the end. */
static size_t parse_entry(const unsigned char *sec, size_t size, size_t off, uint64_t base,
			  const struct bases *b, rtl_fde_fn fn, void *ctx, int *err)
{
	struct reader r = { sec + off, sec + size, base, sec, 0 };
	uint64_t len = rd_u(&r, 4);
	if (r.bad || len == 0)
		return 0;
	if (len == 0xffffffff)
		len = rd_u(&r, 8);
	size_t body = (size_t)(r.p - sec);
	if (r.bad || len > size - body)
		return 0;
	size_t next = body + len;
	r.end = sec + next;
	const unsigned char *idpos = r.p;
	uint32_t id = (uint32_t)rd_u(&r, 4);
	if (r.bad || id == 0)
		return next;  /* a CIE: parsed when an FDE refers to it */
	if (id > (size_t)(idpos - sec))
		return next;
	struct reader cr = { idpos - id, sec + size, base, sec, 0 };
	uint64_t clen = rd_u(&cr, 4);
	if (cr.bad || clen == 0xffffffff || clen > (uint64_t)(cr.end - cr.p))
		return next;
	cr.end = cr.p + clen;
	struct cie cie;
	if (rd_u(&cr, 4) != 0 || parse_cie(&cr, b, &cie))
		return next;
	uint64_t pc = rd_ptr(&r, cie.fde_enc, b, 1);
	uint64_t range = rd_ptr(&r, cie.fde_enc & 0x0f, b, 0);
	if (r.bad || pc == 0 || range == 0)
		return next;  /* discarded by the linker, or unreadable */
	if ((cie.fde_enc & 0x0f) == DW_EH_PE_udata4 || (cie.fde_enc & 0x0f) == DW_EH_PE_sdata4)
		range &= 0xffffffff;
	*err = fn(ctx, pc, range, cie.signal);
	return next;
}

int rtl_elf_parse_eh_frame(const unsigned char *sec, size_t size, uint64_t base,
			   const struct rtl_eh_bases *b, rtl_fde_fn fn, void *ctx)
{
	int err = 0;
	for (size_t off = 0; off < size && !err;) {
		size_t next = parse_entry(sec, size, off, base, b, fn, ctx, &err);
		if (next <= off)
			break;
		off = next;
	}
	return err;
}

struct fde_ctx {
	rtl_binary *bin;
	struct rtl_cands *c;
};

static int add_fde(void *p, uint64_t pc, uint64_t range, int signal)
{
	struct fde_ctx *x = p;
	rtl_binary *bin = x->bin;

	bin->nfdes++;
	if (signal && range > 1) {
		/* glibc and the vDSO start a signal trampoline's FDE one byte
		 * early (".LSTART_name-1"), for unwinders that look up pc-1. */
		pc++;
		range--;
		if (bin->nsigtramps < sizeof(bin->sigtramps) / sizeof(bin->sigtramps[0]))
			bin->sigtramps[bin->nsigtramps++] = pc;
	}
	skip_leading_padding(bin, &pc, &range);
	return rtl_cands_push(x->c, pc, range, NULL, RTL_SRC_EH_FRAME, RANK_NONE);
}

int rtl_elf_collect_fdes(rtl_binary *bin, struct rtl_cands *c)
{
	GElf_Shdr sh;
	struct bases b;
	struct fde_ctx ctx = { bin, c };

	if (!rtl_binary_find_section(bin, ".eh_frame", &sh) ||
	    (sh.sh_type != SHT_PROGBITS && sh.sh_type != SHT_X86_64_UNWIND))
		return 0;
	section_bases(bin, &b);
	/* the section's bytes were checked against the file size at open */
	return rtl_elf_parse_eh_frame(bin->image + sh.sh_offset, sh.sh_size, sh.sh_addr, &b,
				      add_fde, &ctx);
}
