/* The shortcuts rtl_binary_open takes for speed, against the plain way on
 * the installed programs and this test: the code pointers (a range test,
 * one sort, a merge with the functions) against every relocation and data
 * word looked up with rtl_binary_find_function and sorted by qsort; the
 * gaps added in place against a second build of all candidates. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <reticle/binary.h>
#include "check.h"
#include "elf/binary_internal.h"

#ifndef SHT_RELR
#define SHT_RELR 19
#endif

struct words {
	rtl_code_pointer *v;
	size_t n, cap;
};

/* The definition: a word whose value is strictly inside a function that
 * is not a PLT stub. */
static void consider(const rtl_binary *bin, struct words *w, uint64_t where, uint64_t target)
{
	const rtl_function *f = rtl_binary_find_function(bin, target);
	if (!f || f->addr == target || (f->sources & RTL_SRC_PLT))
		return;
	if (w->n == w->cap && !(w->v = realloc(w->v, (w->cap = w->cap * 2 + 64) * sizeof(*w->v))))
		abort();
	w->v[w->n++] = (rtl_code_pointer){ where, target };
}

static void relocations(rtl_binary *bin, Elf_Scn *scn, const GElf_Shdr *sh, struct words *w)
{
	Elf_Data *d = elf_getdata(scn, NULL), *symd = NULL;
	Elf_Scn *syms = sh->sh_link ? elf_getscn(bin->elf, sh->sh_link) : NULL;
	if (syms)
		symd = elf_getdata(syms, NULL);
	for (size_t i = 0; d && sh->sh_entsize && i < sh->sh_size / sh->sh_entsize; i++) {
		GElf_Rela r;
		GElf_Sym sym;
		if (!gelf_getrela(d, (int)i, &r))
			break;
		unsigned type = GELF_R_TYPE(r.r_info), si = GELF_R_SYM(r.r_info);
		if (type == R_X86_64_RELATIVE || (type == R_X86_64_64 && si == 0))
			consider(bin, w, r.r_offset, (uint64_t)r.r_addend);
		else if (type == R_X86_64_64 && symd && gelf_getsym(symd, (int)si, &sym) &&
			 sym.st_shndx != SHN_UNDEF)
			consider(bin, w, r.r_offset, sym.st_value + (uint64_t)r.r_addend);
	}
}

static void relr_word(rtl_binary *bin, struct words *w, uint64_t where)
{
	const unsigned char *p = rtl_binary_ptr(bin, where, 8);
	uint64_t word;
	if (p) {
		memcpy(&word, p, 8);
		consider(bin, w, where, word);
	}
}

static void relr(rtl_binary *bin, const GElf_Shdr *sh, struct words *w)
{
	uint64_t base = 0;
	for (uint64_t off = 0; off + 8 <= sh->sh_size; off += 8) {
		uint64_t e;
		memcpy(&e, bin->image + sh->sh_offset + off, 8);
		if (!(e & 1)) {
			relr_word(bin, w, e);
			base = e + 8;
			continue;
		}
		for (unsigned bit = 0; bit < 63; bit++)
			if ((e >> (bit + 1)) & 1)
				relr_word(bin, w, base + 8 * (uint64_t)bit);
		base += 63 * 8;
	}
}

static int by_target(const void *a, const void *b)
{
	const rtl_code_pointer *x = a, *y = b;
	if (x->target != y->target)
		return x->target < y->target ? -1 : 1;
	return (x->where > y->where) - (x->where < y->where);
}

static void code_pointers(rtl_binary *bin, const char *path)
{
	struct words w = { 0 };
	Elf_Scn *scn = NULL;
	while ((scn = elf_nextscn(bin->elf, scn))) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh))
			continue;
		if (sh.sh_type == SHT_RELA && (sh.sh_flags & SHF_ALLOC))
			relocations(bin, scn, &sh, &w);
		else if (sh.sh_type == SHT_RELR)
			relr(bin, &sh, &w);
		else if (bin->ehdr.e_type == ET_EXEC && sh.sh_type == SHT_PROGBITS &&
			 (sh.sh_flags & SHF_ALLOC) && !(sh.sh_flags & SHF_EXECINSTR))
			for (uint64_t a = (sh.sh_addr + 7) & ~(uint64_t)7; a + 8 <= sh.sh_addr + sh.sh_size; a += 8) {
				uint64_t word;
				memcpy(&word, bin->image + sh.sh_offset + (a - sh.sh_addr), 8);
				consider(bin, &w, a, word);
			}
	}
	if (w.n > 1)
		qsort(w.v, w.n, sizeof(*w.v), by_target);
	CHECK_EQ(rtl_binary_code_pointer_count(bin), w.n);
	size_t same = 0;
	for (size_t i = 0; i < w.n && i < rtl_binary_code_pointer_count(bin); i++)
		same += !memcmp(rtl_binary_code_pointer(bin, i), &w.v[i], sizeof(*w.v));
	CHECK_EQ(same, w.n);
	printf("%s: %zu code pointers as defined\n", path, same);
	free(w.v);
}

static int same_record(const rtl_function *a, const rtl_function *b)
{
	return a->addr == b->addr && a->size == b->size && a->sources == b->sources &&
	       (a->name == b->name || (a->name && b->name && !strcmp(a->name, b->name))) &&
	       !strcmp(a->reason, b->reason);
}

/* Discovery again on BIN, the gaps both ways. Returns 1 if they went in
 * place, 0 if a second build was needed, -1 on a difference. */
static int gaps_both_ways(rtl_binary *bin)
{
	struct rtl_cands c = { 0 };
	struct rtl_scratch s = { 0 };
	bin->nfdes = bin->nsigtramps = 0;
	CHECK(!rtl_elf_collect_symbols(bin, &c) && !rtl_elf_collect_plt(bin, &c) &&
	      !rtl_elf_collect_fdes(bin, &c) && !rtl_elf_collect_entries(bin, &c) &&
	      !rtl_elf_build_functions(bin, &c, 0, &s));
	size_t before = c.n, n = bin->nfuncs;
	CHECK(!rtl_elf_collect_gaps(bin, &c));
	rtl_function *first = malloc((n ? n : 1) * sizeof(*first)), *in_place = NULL;
	memcpy(first, bin->funcs, n * sizeof(*first));
	int way = c.n != before ? rtl_elf_add_gaps(bin, &c, before, &s) : 1;
	CHECK(way >= 0);
	size_t m = bin->nfuncs;
	if (way == 0) {
		in_place = malloc(m * sizeof(*in_place));
		memcpy(in_place, bin->funcs, m * sizeof(*in_place));
		memcpy(bin->funcs, first, n * sizeof(*first));
		bin->nfuncs = n;
		CHECK(!rtl_elf_build_functions(bin, &c, before, &s));
		CHECK_EQ(bin->nfuncs, m);
		for (size_t i = 0; i < m && i < bin->nfuncs && way == 0; i++)
			if (!same_record(&in_place[i], &bin->funcs[i])) {
				CHECK(!"a gap added in place differs from the second build");
				way = -1;
			}
	}
	free(first);
	free(in_place);
	free(c.v);
	free(s.p);
	return way == 0;
}

int main(void)
{
	static const char *const programs[] = {
		"/usr/bin/python3.11", "/usr/lib/gcc/x86_64-linux-gnu/12/cc1",
		"/lib/x86_64-linux-gnu/libc.so.6", "/usr/bin/lua5.4", "/usr/bin/sqlite3",
		"/usr/bin/bzip2", "/lib/x86_64-linux-gnu/libstdc++.so.6",
		"/lib64/ld-linux-x86-64.so.2", "/proc/self/exe",
	};
	size_t tried = 0, in_place = 0;
	for (size_t i = 0; i < sizeof(programs) / sizeof(*programs); i++) {
		rtl_binary *bin;
		if (access(programs[i], R_OK) || rtl_binary_open(programs[i], &bin))
			continue;
		code_pointers(bin, programs[i]);
		in_place += gaps_both_ways(bin) == 1;
		tried++;
		rtl_binary_close(bin);
	}
	printf("%zu programs, gaps added in place in %zu\n", tried, in_place);
	CHECK(tried > 0);
	return CHECK_DONE();
}
