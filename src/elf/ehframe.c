/* .eh_frame: every FDE's initial location is a function entry (or a cold
 * part of one) and its address range is the size. The section is read by
 * ehframe_read.c (shared with the unwind-info builder of src/patch). */
#include <string.h>
#include "binary_internal.h"
#include "code_facts.h"

static void section_bases(rtl_binary *bin, struct rtl_eh_bases *b)
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

struct parse_ctx {
	rtl_fde_fn fn;
	void *ctx;
	int err;   /* FN's */
};

static int visit_fde(void *p, const struct rtl_eh_fde *f, const struct rtl_eh_cie *c)
{
	struct parse_ctx *x = p;
	uint64_t range = f->pc_end - f->pc_begin;
	/* a 4-byte range is read as unsigned here (libgcc, and so the
	 * reader, sign-extends it: an FDE over nothing) */
	if (rtl_eh_enc_size(c->fde_enc) == 4)
		range &= 0xffffffff;
	if (f->pc_begin == 0 || range == 0)
		return 0;  /* discarded by the linker, or empty */
	x->err = x->fn(x->ctx, f->pc_begin, range, c->signal);
	return x->err != 0;
}

int rtl_elf_parse_eh_frame(const unsigned char *sec, size_t size, uint64_t base,
			   const struct rtl_eh_bases *b, rtl_fde_fn fn, void *ctx)
{
	struct rtl_eh_frame eh = { sec, size, base, *b, .lenient = true };
	struct parse_ctx x = { fn, ctx, 0 };
	const char *why;
	/* a malformed record ends the walk: the FDEs before it are kept */
	rtl_eh_foreach_fde(&eh, visit_fde, &x, &why);
	return x.err;
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
	struct rtl_eh_bases b = { 0 };
	struct fde_ctx ctx = { bin, c };

	if (!rtl_binary_find_section(bin, ".eh_frame", &sh) ||
	    (sh.sh_type != SHT_PROGBITS && sh.sh_type != SHT_X86_64_UNWIND))
		return 0;
	section_bases(bin, &b);
	/* the section's bytes were checked against the file size at open */
	return rtl_elf_parse_eh_frame(bin->image + sh.sh_offset, sh.sh_size, sh.sh_addr, &b,
				      add_fde, &ctx);
}

/* The CIEs only: an FDE record is stepped over by its length. */
static bool cies_plain(const unsigned char *sec, size_t size, uint64_t base, const struct rtl_eh_bases *b)
{
	struct rtl_eh_frame eh = { sec, size, base, *b, .lenient = false };
	for (size_t off = 0; off + 8 <= size;) {
		uint32_t len, id;
		memcpy(&len, sec + off, 4);
		if (len == 0)
			break;   /* the terminator: the unwinder reads no further */
		if (len == 0xffffffff || len < 4 || len > size - off - 4)
			return false;   /* 64-bit records, or out of the section: not known */
		memcpy(&id, sec + off + 4, 4);
		struct rtl_eh_cie c;
		const char *why;
		if (id == 0 && (rtl_eh_parse_cie(&eh, off, &c, &why) || c.pers_enc != DW_EH_PE_omit))
			return false;
		off += 4 + (size_t)len;
	}
	return true;
}

bool fn_eh_plain(rtl_binary *bin)
{
	if (bin->eh_plain >= 0)
		return bin->eh_plain;
	GElf_Shdr sh;
	struct rtl_eh_bases b = { 0 };
	bool plain = !(rtl_binary_find_section(bin, ".gcc_except_table", &sh) && sh.sh_type != SHT_NOBITS &&
		       sh.sh_size);
	if (plain && rtl_binary_find_section(bin, ".eh_frame", &sh) && sh.sh_type != SHT_NOBITS) {
		section_bases(bin, &b);
		plain = cies_plain(bin->image + sh.sh_offset, sh.sh_size, sh.sh_addr, &b);
	}
	bin->eh_plain = plain;
	return plain;
}
