/* Go's function table in its four layouts (Go 1.2-1.15, 1.16-1.17,
 * 1.18-1.19, 1.20+), assembled here byte by byte from the runtime's
 * definitions (runtime/symtab.go's pcHeader and _func of each version), so
 * the entries, sizes and names are known without the parser's help; then
 * the faults a damaged table may hold, and every truncation of it. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "elf/binary_internal.h"
#include "check.h"

#define TEXT 0x401000ull

enum layout { GO12, GO116, GO118, GO120 };

/* The functions: entry (from TEXT), code size, name; the pc-value table
 * of the stack pointer covers SIZE bytes, and the next entry is where
 * padding to 32 bytes ends. FIRST0: its table's first value delta is 0
 * (allowed at the first step only). A size of 0: a marker without a
 * table (go:textfipsstart), which is no function. */
static const struct fn { uint64_t off, size; const char *name; int first0; } fns[] = {
	{ 0x000, 89, "internal/cpu.Initialize", 0 },
	{ 0x060, 1, "runtime.asminit", 0 },
	{ 0x080, 300, "main.(*node).sum", 0 },      /* pc deltas of two varint bytes */
	{ 0x1c0, 0, "go:textfipsstart", 0 },
	{ 0x1e0, 40, "type:.eq.[...]string", 1 },
};
#define NFN (sizeof(fns) / sizeof(fns[0]))
#define END 0x220ull

static unsigned char tab[8192];
static size_t len;

static void put(size_t at, uint64_t v, int n) { for (int i = 0; i < n; i++) tab[at + i] = (unsigned char)(v >> (8 * i)); }
static void u8(unsigned v) { tab[len++] = (unsigned char)v; }
static void uvarint(uint64_t v) { do { u8((v & 0x7f) | (v > 0x7f ? 0x80 : 0)); v >>= 7; } while (v); }
static uint64_t zigzag(int64_t v) { return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63); }

/* F's stack-pointer table: steps (value delta, pc delta) up to its size,
 * then the 0 that ends it. */
static void pcsp(const struct fn *f)
{
	if (f->size == 1) {
		uvarint(zigzag(1)), uvarint(1);
	} else {
		uvarint(f->first0 ? 0 : zigzag(1)), uvarint(4);
		uvarint(zigzag(24)), uvarint(f->size - 6);
		uvarint(zigzag(-24)), uvarint(2);
	}
	u8(0);
}

/* The table of layout L; TEXT_WORD is the header's textStart (1.18+). */
static void assemble(enum layout l, uint64_t text_word)
{
	size_t w = l >= GO118 ? 4 : 8;      /* the functab's words */
	size_t hdr = l == GO12 ? 16 : l == GO116 ? 64 : 72;
	size_t names[NFN], pcs[NFN], funcs[NFN];
	size_t records = (2 * NFN + 1) * w + (l == GO12 ? 4 : 0);   /* 1.2: the filetab word */
	memset(tab, 0xee, sizeof(tab));
	/* 1.16+: names and pc-value tables in their own regions, at offsets
	 * from the header, then the functab and the records; 1.2: the functab
	 * right after the header, everything at offsets from the table's
	 * start. A pc-value offset of 0 means "none": the region starts with
	 * a 0. */
	len = l == GO12 ? hdr + records + NFN * 48 : hdr;
	size_t name_base = l == GO12 ? 0 : len;
	for (size_t i = 0; i < NFN; i++) {
		names[i] = len - name_base;
		memcpy(tab + len, fns[i].name, strlen(fns[i].name) + 1);
		len += strlen(fns[i].name) + 1;
	}
	size_t pc_base = l == GO12 ? 0 : len;
	u8(0);
	for (size_t i = 0; i < NFN; i++) {
		pcs[i] = fns[i].size ? len - pc_base : 0;
		if (fns[i].size)
			pcsp(&fns[i]);
	}
	len = (len + 7) & ~(size_t)7;
	size_t end = len, table = l == GO12 ? hdr : len, func_base = l == GO12 ? 0 : table;
	size_t rec = table + records;
	for (size_t i = 0; i < NFN; i++, rec += 48) {
		uint64_t entry = l >= GO118 ? fns[i].off : TEXT + fns[i].off;
		funcs[i] = rec - func_base;
		put(table + 2 * i * w, entry, (int)w);
		put(table + (2 * i + 1) * w, funcs[i], (int)w);
		/* _func: entry, nameoff, args, frame/deferreturn, pcsp... */
		memset(tab + rec, 0, 48);
		put(rec, entry, (int)w);
		put(rec + w, names[i], 4);
		put(rec + (l >= GO118 ? 16 : 20), pcs[i], 4);
	}
	put(table + 2 * NFN * w, l >= GO118 ? END : TEXT + END, (int)w);
	len = l == GO12 ? end : rec;
	static const uint32_t magic[] = { 0xfffffffb, 0xfffffffa, 0xfffffff0, 0xfffffff1 };
	put(0, magic[l], 4);
	put(4, 0x08010000, 4);   /* two zeros, quantum 1, 8-byte words */
	put(8, NFN, 8);
	if (l == GO116) {
		put(24, name_base, 8), put(48, pc_base, 8), put(56, table, 8);
	} else if (l >= GO118) {
		put(24, text_word, 8), put(32, name_base, 8), put(56, pc_base, 8), put(64, table, 8);
	}
}

struct seen {
	int n;
	uint64_t entry[16], size[16];
	char name[16][64];
};

static int collect(void *ctx, uint64_t entry, uint64_t size, const char *name)
{
	struct seen *s = ctx;
	if (s->n < 16) {
		s->entry[s->n] = entry;
		s->size[s->n] = size;
		snprintf(s->name[s->n], sizeof(s->name[0]), "%s", name ? name : "(null)");
		s->n++;
	}
	return 0;
}

/* The table of LEN bytes in a block of its own (a read past it shows
 * under ASan). */
static int parse(size_t n, uint64_t text, struct seen *s)
{
	unsigned char *copy = malloc(n ? n : 1);
	memcpy(copy, tab, n);
	memset(s, 0, sizeof(*s));
	int r = rtl_elf_parse_gopclntab(copy, n, text, collect, s);
	free(copy);
	return r;
}

/* Every function of fns but the marker, in order, whose sizes are those
 * of fns, or where SPAN_AT is, the distance to the next entry. */
static void expect(const struct seen *s, int span_at)
{
	int k = 0;
	CHECK_EQ(s->n, NFN - 1);
	for (size_t i = 0; i < NFN && k < s->n; i++) {
		if (!fns[i].size)
			continue;
		uint64_t next = i + 1 < NFN ? fns[i + 1].off : END;
		CHECK_EQ(s->entry[k], TEXT + fns[i].off);
		CHECK_EQ(s->size[k], (int)i == span_at ? next - fns[i].off : fns[i].size);
		CHECK_STR(s->name[k], fns[i].name);
		k++;
	}
}

int main(void)
{
	struct seen s;
	for (enum layout l = GO12; l <= GO120; l++) {
		assemble(l, TEXT);
		CHECK_EQ(parse(len, 0, &s), 0);
		expect(&s, -1);
		size_t full = len;

		/* every truncation: no read past the end, no function made up */
		for (size_t cut = 0; cut < full; cut++) {
			assemble(l, TEXT);
			int r = parse(cut, 0, &s);
			CHECK(r == 0 || r == 1);
			CHECK(s.n <= (int)NFN - 1);
			for (int k = 0; k < s.n; k++)
				CHECK(s.entry[k] >= TEXT && s.entry[k] < TEXT + END);
		}

		/* seeded flips of one to four bytes (under ASan: no read past
		 * the end, whatever the words say) */
		srand(7 + l);
		for (int v = 0; v < 500; v++) {
			assemble(l, TEXT);
			for (int k = rand() % 4; k >= 0; k--)
				tab[(size_t)rand() % full] ^= (unsigned char)(1 + rand() % 255);
			int r = parse(full, 0, &s);
			CHECK(r == 0 || r == 1);
		}

		/* a record whose entry is not the table's: a layout misread */
		assemble(l, TEXT);
		size_t w = l >= GO118 ? 4 : 8, table = l == GO12 ? 16 : (size_t)(tab[l == GO116 ? 56 : 64] |
								     tab[(l == GO116 ? 56 : 64) + 1] << 8);
		uint64_t rec = 0;
		memcpy(&rec, tab + table + 3 * w, w);   /* function 1's record */
		rec += l == GO12 ? 0 : table;
		tab[rec] ^= 0x40;
		CHECK_EQ(parse(len, 0, &s), 1);

		/* entries out of order */
		assemble(l, TEXT);
		put(table + 2 * 2 * w, l >= GO118 ? 0x10 : TEXT + 0x10, (int)w);
		CHECK_EQ(parse(len, 0, &s), 1);

		/* a pc-value table that does not read: up to the next entry */
		assemble(l, TEXT);
		memcpy(&rec, tab + table + 5 * w, w);   /* function 2's record */
		rec += l == GO12 ? 0 : table;
		put(rec + (l >= GO118 ? 16 : 20), full, 4);
		CHECK_EQ(parse(len, 0, &s), 0);
		expect(&s, 2);

		/* 4-byte words (not x86-64), an unknown magic */
		assemble(l, TEXT);
		tab[7] = 4;
		CHECK_EQ(parse(len, 0, &s), 1);
		assemble(l, TEXT);
		tab[0] = 0xfc;
		CHECK_EQ(parse(len, 0, &s), 1);
	}

	/* 1.18+ in a PIE an external linker left unrelocated: textStart 0,
	 * the relocation's addend given */
	assemble(GO118, 0);
	CHECK_EQ(parse(len, TEXT, &s), 0);
	expect(&s, -1);
	return CHECK_DONE();
}
