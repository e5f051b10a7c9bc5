/* Go's function table, .gopclntab, as a source of functions. A stripped Go
 * program (go build -ldflags=-s, Debian's gofmt) has neither .symtab nor
 * .eh_frame, so without it every function would be a guess of the gap
 * sweep and none instrumentable; but Go's runtime walks its stacks with
 * this table, so every Go binary keeps it: the entry and the name of each
 * function, sorted, and where the last ends. A function's size is what its
 * stack-pointer table (pcsp) covers, which is its symbol's size, padding
 * left out; the distance to the next entry when that table does not read.
 *
 * Four layouts, told apart by their magic (runtime/symtab.go, debug/gosym):
 * Go 1.2-1.15 (0xfffffffb), whose table holds absolute entries and
 * offsets from its start; 1.16-1.17 (0xfffffffa), with names, pc-value
 * tables and the table at offsets the header gives; 1.18-1.19
 * (0xfffffff0) and 1.20+ (0xfffffff1), whose entries are 32-bit offsets
 * from the header's textStart. Only x86-64's is read (8-byte words, a
 * 1-byte instruction quantum). The table is the section named so,
 * .data.rel.ro.gopclntab in Go's own PIE links, or, where an external
 * linker merged it into .data.rel.ro (docker, cgo PIEs), found there by
 * its header when the file has Go's .go.buildinfo.
 *
 * Read only without a .symtab: Go's symbols list the same entries, sizes
 * and names (but for the ".abi0" of ABI0 functions, "." for the table's
 * "·", and the type arguments the table elides as "[...]"), and reading
 * both cost docker's 35,000 functions 5 ms. */
#include <errno.h>
#include <string.h>
#include "binary_internal.h"

/* The table: FIELD-byte words, nfunc (entry, offset) pairs and the end;
 * each offset leads from FUNCS to a _func record that starts with the
 * entry again, then the name's offset from NAMES; its pcsp word, at PCSP,
 * is the offset of its stack-pointer table from PCTAB. */
struct pcln {
	const unsigned char *p;
	size_t n;
	uint64_t nfunc, text;
	size_t table, funcs, names, pctab, field, pcsp;
};

static uint64_t word(const unsigned char *p, size_t len)
{
	uint64_t v = 0;
	memcpy(&v, p, len);   /* little-endian, as x86-64 is */
	return v;
}

/* T's layout from its header, or -1 when it is not one we read. */
static int parse_header(struct pcln *t, uint64_t text)
{
	const unsigned char *p = t->p;
	if (t->n < 72 || p[4] || p[5] || p[6] != 1 || p[7] != 8)
		return -1;
	uint32_t magic = (uint32_t)word(p, 4);
	t->nfunc = word(p + 8, 8);
	if (magic == 0xfffffffb) {
		t->table = 16, t->funcs = t->names = t->pctab = 0, t->field = 8, t->pcsp = 20;
	} else if (magic == 0xfffffffa) {
		t->names = word(p + 24, 8), t->pctab = word(p + 48, 8);
		t->table = t->funcs = word(p + 56, 8), t->field = 8, t->pcsp = 20;
	} else if (magic == 0xfffffff0 || magic == 0xfffffff1) {
		t->text = word(p + 24, 8) ? word(p + 24, 8) : text;
		t->names = word(p + 32, 8), t->pctab = word(p + 56, 8);
		t->table = t->funcs = word(p + 64, 8), t->field = 4, t->pcsp = 16;
	} else {
		return -1;
	}
	if (t->names >= t->n || t->table >= t->n || t->pctab >= t->n)
		return -1;
	uint64_t words = (t->n - t->table) / t->field;   /* 2 * nfunc + 1 needed */
	return t->nfunc && words >= 3 && t->nfunc <= (words - 1) / 2 ? 0 : -1;
}

/* Word I of the table, an address for the entries. */
static uint64_t field(const struct pcln *t, uint64_t i, bool addr)
{
	return word(t->p + t->table + i * t->field, t->field) + (addr ? t->text : 0);
}

/* The unsigned varint at *AT (at most 32 bits), or false. */
static bool uvarint(const struct pcln *t, size_t *at, uint32_t *v)
{
	*v = 0;
	for (unsigned shift = 0; shift < 35 && *at < t->n; shift += 7) {
		unsigned char b = t->p[(*at)++];
		*v |= (uint32_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			return true;
	}
	return false;
}

/* The bytes of code the pc-value table at OFF covers (each step: a value
 * delta, a pc delta; a zero value delta past the first step ends it),
 * or 0 when it does not read or covers more than MOST. A step per byte
 * at most, so that a damaged table costs no more than its span. */
static uint64_t covered(const struct pcln *t, uint64_t off, uint64_t most)
{
	if (off >= t->n - t->pctab)
		return 0;
	size_t at = t->pctab + off;
	uint64_t pc = 0;
	for (uint64_t steps = 0; steps <= most + 1; steps++) {
		uint32_t dv, dpc;
		if (!uvarint(t, &at, &dv))
			return 0;
		if (!dv && pc)
			return pc;
		if (!uvarint(t, &at, &dpc) || (pc += dpc) > most)
			return 0;
	}
	return 0;
}

/* Function I's name (NULL when it does not read: no NUL within 64 KiB,
 * so that a damaged table costs no more than that per function) and size
 * (at most SPAN).
 * Returns 0; 1 for an entry without a pcsp table, a marker without code
 * (go:textfipsstart, int3 padding); -1 when its record does not hold its
 * entry (a layout misread). */
static int describe(const struct pcln *t, uint64_t i, uint64_t entry, uint64_t span,
		    const char **name, uint64_t *size)
{
	uint64_t off = field(t, 2 * i + 1, false);
	*name = NULL;
	if (off > t->n - t->funcs || t->n - t->funcs - off < t->pcsp + 4)
		return -1;
	const unsigned char *f = t->p + t->funcs + off;
	if (word(f, t->field) + t->text != entry)
		return -1;
	uint64_t at = t->names + (uint32_t)word(f + t->field, 4), pcsp = word(f + t->pcsp, 4);
	if (at < t->n && memchr(t->p + at, 0, t->n - at < 65536 ? t->n - at : 65536) && t->p[at])
		*name = (const char *)t->p + at;
	if (!pcsp)
		return 1;
	*size = covered(t, pcsp, span);
	if (!*size)
		*size = span;   /* a table that does not read: up to the next entry */
	return 0;
}

int rtl_elf_parse_gopclntab(const unsigned char *p, size_t n, uint64_t text, rtl_go_func_fn fn, void *ctx)
{
	struct pcln t = { .p = p, .n = n };
	if (parse_header(&t, text))
		return 1;
	uint64_t entry = field(&t, 0, true);
	for (uint64_t i = 0; i < t.nfunc; i++) {
		uint64_t next = field(&t, 2 * i + 2, true), size;
		const char *name;
		int err = next <= entry ? -1 : describe(&t, i, entry, next - entry, &name, &size);
		if (err < 0)
			return 1;
		if (!err && (err = fn(ctx, entry, size, name)))
			return err;
		entry = next;
	}
	return 0;
}

static int push(void *ctx, uint64_t entry, uint64_t size, const char *name)
{
	return rtl_cands_push(ctx, entry, size, name, RTL_SRC_GOPCLNTAB, RANK_PCLNTAB);
}

/* The functions of the table at P (N bytes, at link-time ADDR) as
 * candidates: 0, or 1 (none) when it does not read, or -ENOMEM. */
static int collect(rtl_binary *bin, const unsigned char *p, size_t n, uint64_t addr, struct rtl_cands *c)
{
	size_t first = c->n;
	/* an external linker that does not apply dynamic relocations (lld)
	 * leaves a 1.18+ textStart 0 in a PIE: the loader's word is the addend */
	bool go118 = n >= 32 && (word(p, 4) | 1) == 0xfffffff1;
	uint64_t text = go118 && !word(p + 24, 8) ? rtl_elf_word_at(bin, addr + 24) : 0;
	int err = rtl_elf_parse_gopclntab(p, n, text, push, c);
	if (err)
		c->n = first;   /* entries out of order, records that disagree */
	return err;
}

/* The section NAME's bytes, its size in *N and address in *ADDR, or NULL. */
static const unsigned char *section(rtl_binary *bin, const char *name, size_t *n, uint64_t *addr)
{
	GElf_Shdr sh;
	Elf_Scn *scn = rtl_binary_find_section(bin, name, &sh);
	Elf_Data *d = scn && sh.sh_type == SHT_PROGBITS ? elf_getdata(scn, NULL) : NULL;
	if (!d || !d->d_buf)
		return NULL;
	*n = d->d_size;
	*addr = sh.sh_addr;
	return d->d_buf;
}

/* A header at an 8-byte boundary of .data.rel.ro whose table reads: the
 * magic's last three bytes 0xff, two zeros, a quantum of 1, 8-byte words. */
static int scan_relro(rtl_binary *bin, struct rtl_cands *c)
{
	size_t n;
	uint64_t addr;
	const unsigned char *p = section(bin, ".data.rel.ro", &n, &addr);
	if (!p || !rtl_binary_find_section(bin, ".go.buildinfo", NULL))
		return 0;
	for (size_t at = 0; at + 8 <= n; at += 8) {
		if ((word(p + at, 8) & ~(uint64_t)0xff) != 0x08010000ffffff00ull)
			continue;
		int err = collect(bin, p + at, n - at, addr + at, c);
		if (err <= 0)
			return err;
	}
	return 0;
}

int rtl_elf_collect_gopclntab(rtl_binary *bin, struct rtl_cands *c)
{
	static const char *const names[] = { ".gopclntab", ".data.rel.ro.gopclntab" };
	size_t n;
	uint64_t addr;
	if (bin->has_symtab)
		return 0;   /* Go's symbols name the same functions (docs/binary-analyzer.md) */
	for (size_t i = 0; i < sizeof(names) / sizeof(*names); i++) {
		const unsigned char *p = section(bin, names[i], &n, &addr);
		if (p) {
			int err = collect(bin, p, n, addr, c);
			return err < 0 ? err : 0;
		}
	}
	return scan_relro(bin, c);
}

int rtl_binary_is_go(const rtl_binary *bin)
{
	return rtl_binary_find_section(bin, ".gopclntab", NULL) ||
	       rtl_binary_find_section(bin, ".data.rel.ro.gopclntab", NULL) ||
	       rtl_binary_find_section(bin, ".go.buildinfo", NULL);
}
