/* .eh_frame parsing with every pointer encoding a CIE can ask for. The
 * section is assembled here byte by byte from the DWARF/LSB rules, so the
 * expected FDE starts are known without the parser's help. */
#include <dwarf.h>
#include <stdint.h>
#include <string.h>
#include "elf/binary_internal.h"
#include "check.h"

#define BASE 0x10000ull   /* link-time address of the section */
#define TEXT 0x2000ull    /* DW_EH_PE_textrel base */
#define DATA 0x30000ull   /* DW_EH_PE_datarel base */

static unsigned char sec[4096];
static size_t len;

static void u8(unsigned v) { sec[len++] = (unsigned char)v; }
static void un(uint64_t v, int n) { for (int i = 0; i < n; i++) u8((unsigned)(v >> (8 * i)) & 0xff); }
static void uleb(uint64_t v) { do { u8((v & 0x7f) | (v > 0x7f ? 0x80 : 0)); v >>= 7; } while (v); }
static void str(const char *s) { do u8((unsigned char)*s); while (*s++); }
static uint64_t here(void) { return BASE + len; }

static size_t begin(void) { size_t at = len; un(0, 4); return at; }
static void end(size_t at)
{
	while ((len - at) % 4)
		u8(DW_CFA_nop);
	uint32_t l = (uint32_t)(len - at - 4);
	memcpy(sec + at, &l, 4);
}

/* A CIE with augmentation AUG; EXTRA writes the augmentation data. */
static size_t cie(int version, const char *aug, unsigned enc, int personality)
{
	size_t at = begin();
	un(0, 4);
	u8((unsigned)version);
	str(aug);
	uleb(1);
	u8(0x78);  /* data alignment -8 */
	if (version == 1)
		u8(16);
	else
		uleb(16);
	if (aug[0] == 'z') {
		uleb(personality ? 1 + 4 + 1 + 1 : 1);
		for (const char *a = aug + 1; *a; a++) {
			if (*a == 'P') {
				u8(DW_EH_PE_indirect | DW_EH_PE_pcrel | DW_EH_PE_sdata4);
				un(0x1234, 4);
			} else if (*a == 'L') {
				u8(DW_EH_PE_pcrel | DW_EH_PE_sdata4);
			} else if (*a == 'R') {
				u8(enc);
			}
		}
	}
	end(at);
	return at;
}

/* An FDE of CIE at CIE_AT: PC written with the encoding's rules. */
static void fde(size_t cie_at, unsigned enc, uint64_t pc, uint64_t range, int lsda)
{
	size_t at = begin();
	un(len - cie_at, 4);  /* CIE pointer: back from this field */
	uint64_t v = pc;
	switch (enc & 0x70) {
	case DW_EH_PE_pcrel: v = pc - here(); break;
	case DW_EH_PE_textrel: v = pc - TEXT; break;
	case DW_EH_PE_datarel: v = pc - DATA; break;
	}
	switch (enc & 0x0f) {
	case DW_EH_PE_absptr: case DW_EH_PE_udata8: case DW_EH_PE_sdata8: un(v, 8); un(range, 8); break;
	case DW_EH_PE_udata4: case DW_EH_PE_sdata4: un(v, 4); un(range, 4); break;
	case DW_EH_PE_udata2: case DW_EH_PE_sdata2: un(v, 2); un(range, 2); break;
	case DW_EH_PE_uleb128: uleb(v); uleb(range); break;
	}
	if (lsda) {
		uleb(4);
		un(0, 4);
	} else {
		uleb(0);
	}
	end(at);
}

struct seen { uint64_t pc[32], range[32]; int signal[32]; int n; };

static int collect(void *p, uint64_t pc, uint64_t range, int signal)
{
	struct seen *s = p;
	if (s->n < 32) {
		s->pc[s->n] = pc;
		s->range[s->n] = range;
		s->signal[s->n++] = signal;
	}
	return 0;
}

int main(void)
{
	static const struct { const char *aug; int version; unsigned enc; uint64_t pc; } cases[] = {
		{ "zR", 1, DW_EH_PE_pcrel | DW_EH_PE_sdata4, 0x2340 },  /* what GCC emits */
		{ "zR", 1, DW_EH_PE_absptr, 0x401000 },
		{ "zR", 1, DW_EH_PE_udata8, 0x401100 },
		{ "zR", 1, DW_EH_PE_udata4, 0x401200 },
		{ "zR", 1, DW_EH_PE_datarel | DW_EH_PE_sdata4, 0x2400 },  /* below the base */
		{ "zR", 1, DW_EH_PE_textrel | DW_EH_PE_udata4, 0x2500 },
		{ "zR", 3, DW_EH_PE_pcrel | DW_EH_PE_sdata8, 0x2600 },
		{ "zR", 1, DW_EH_PE_uleb128, 0x2700 },
		{ "zR", 1, DW_EH_PE_pcrel | DW_EH_PE_sdata2, 0x10800 },  /* within 32 KiB */
		{ "zPLR", 1, DW_EH_PE_pcrel | DW_EH_PE_sdata4, 0x2900 },  /* personality, LSDA */
		{ "zRS", 1, DW_EH_PE_pcrel | DW_EH_PE_sdata4, 0x2a00 },  /* signal frame */
		{ "", 1, 0, 0x402000 },  /* no augmentation: absptr */
	};
	const int n = sizeof(cases) / sizeof(cases[0]);
	for (int i = 0; i < n; i++) {
		size_t c = cie(cases[i].version, cases[i].aug, cases[i].enc, strchr(cases[i].aug, 'P') != NULL);
		fde(c, cases[i].aug[0] ? cases[i].enc : 0, cases[i].pc, 0x40 + (uint64_t)i,
		    strchr(cases[i].aug, 'L') != NULL);
		if (i == 0)
			fde(c, cases[i].enc, 0, 0x10, 0);  /* pc 0: discarded by the linker, skipped */
	}
	/* DW_EH_PE_aligned and indirect have no meaning for an FDE start:
	 * skipped, and the parse goes on. */
	size_t c = cie(1, "zR", DW_EH_PE_aligned | DW_EH_PE_sdata4, 0);
	fde(c, DW_EH_PE_sdata4, 0x2b00, 8, 0);
	c = cie(1, "zR", DW_EH_PE_indirect | DW_EH_PE_sdata4, 0);
	fde(c, DW_EH_PE_sdata4, 0x2b80, 8, 0);
	c = cie(1, "zR", DW_EH_PE_pcrel | DW_EH_PE_sdata4, 0);
	fde(c, DW_EH_PE_pcrel | DW_EH_PE_sdata4, 0x2b90, 0x4b, 0);  /* read */
	un(0, 4);  /* terminator */
	fde(c, DW_EH_PE_pcrel | DW_EH_PE_sdata4, 0x2c00, 8, 0);  /* after it: not read */

	struct rtl_eh_bases b = { TEXT, DATA, 0 };
	struct seen s = { .n = 0 };
	CHECK_EQ(rtl_elf_parse_eh_frame(sec, len, BASE, &b, collect, &s), 0);
	CHECK_EQ(s.n, n + 1);
	CHECK_EQ(s.pc[n], 0x2b90);
	CHECK_EQ(s.range[n], 0x4b);
	for (int i = 0; i < n && i < s.n; i++) {
		if (s.pc[i] != cases[i].pc)
			fprintf(stderr, "case %d (%s, enc %#x)\n", i, cases[i].aug, cases[i].enc);
		CHECK_EQ(s.pc[i], cases[i].pc);
		CHECK_EQ(s.range[i], 0x40 + i);
		CHECK_EQ(s.signal[i], strchr(cases[i].aug, 'S') != NULL);
	}

	/* Truncated and garbage sections: no crash, nothing past the end. */
	for (size_t cut = 0; cut < len; cut++) {
		struct seen t = { .n = 0 };
		rtl_elf_parse_eh_frame(sec, cut, BASE, &b, collect, &t);
		CHECK(t.n <= s.n);
	}
	return CHECK_DONE();
}
