/* Function candidates from .symtab and .dynsym: STT_FUNC and STT_GNU_IFUNC
 * symbols defined in this file (SHN_UNDEF imports are the PLT's business). */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <reticle/error.h>
#include "binary_internal.h"
#include "util/array.h"

int rtl_cands_push(struct rtl_cands *c, uint64_t addr, uint64_t size,
		   const char *name, unsigned source, int rank)
{
	if (rtl_grow(&c->v, &c->cap, c->n + 1, sizeof(*c->v)))
		return -ENOMEM;
	c->v[c->n++] = (struct rtl_candidate){ addr, size, name, source, rank };
	return 0;
}

static int rank_of(const Elf64_Sym *sym, unsigned source)
{
	if (source == RTL_SRC_DYNSYM)
		return RANK_DYNSYM;
	switch (GELF_ST_BIND(sym->st_info)) {
	case STB_GLOBAL: return RANK_SYMTAB_GLOBAL;
	case STB_WEAK: return RANK_SYMTAB_WEAK;
	default: return RANK_SYMTAB_LOCAL;
	}
}

/* The string table of a symbol table, read in place when libelf would
 * accept every offset below its size (a STRTAB, not compressed, ending in
 * a NUL); otherwise each name goes through elf_strptr. */
struct strtab {
	const char *s;
	size_t size;
};

static struct strtab plain_strtab(Elf *elf, const unsigned char *image, size_t image_size, size_t link)
{
	Elf_Scn *scn = elf_getscn(elf, link);
	GElf_Shdr sh;
	if (!scn || !gelf_getshdr(scn, &sh) || sh.sh_type != SHT_STRTAB || (sh.sh_flags & SHF_COMPRESSED) ||
	    !sh.sh_size || sh.sh_offset > image_size || sh.sh_size > image_size - sh.sh_offset ||
	    image[sh.sh_offset + sh.sh_size - 1])
		return (struct strtab){ NULL, 0 };
	return (struct strtab){ (const char *)image + sh.sh_offset, sh.sh_size };
}

/* The symbols are read in place (gelf_getsym's copy and checks per symbol,
 * and elf_strptr's, cost more than the rest); a name is first touched when
 * its symbol is checked, so the names a few symbols ahead are prefetched
 * (cc1's 29,000 dynamic symbols point all over 1.3 MB of strings). */
static int collect_table(Elf *elf, const unsigned char *image, size_t image_size, Elf_Scn *scn,
			 const GElf_Shdr *sh, unsigned source, struct rtl_cands *c)
{
	enum { AHEAD = 16 };
	Elf_Data *d = elf_getdata(scn, NULL);
	if (!d || !sh->sh_entsize || d->d_type != ELF_T_SYM)
		return 0;
	size_t n = sh->sh_size / sh->sh_entsize, have = d->d_size / sizeof(Elf64_Sym);
	if (n > have)
		n = have;   /* where gelf_getsym would fail */
	const Elf64_Sym *v = d->d_buf;
	struct strtab str = plain_strtab(elf, image, image_size, sh->sh_link);
	if (n > 1 && rtl_grow(&c->v, &c->cap, c->n + n - 1, sizeof(*c->v)))
		return -ENOMEM;
	for (size_t i = 1; i < n; i++) {
		Elf64_Sym sym;
		memcpy(&sym, v + i, sizeof(sym));
		if (i + AHEAD < n && str.s && v[i + AHEAD].st_name < str.size)
			__builtin_prefetch(str.s + v[i + AHEAD].st_name);
		int type = GELF_ST_TYPE(sym.st_info);
		if (type != STT_FUNC && type != STT_GNU_IFUNC)
			continue;
		if (sym.st_shndx == SHN_UNDEF || sym.st_shndx == SHN_ABS || sym.st_value == 0)
			continue;
		const char *name = !str.s ? elf_strptr(elf, sh->sh_link, sym.st_name) :
				   sym.st_name < str.size ? str.s + sym.st_name : NULL;
		if (name && !*name)
			name = NULL;
		c->v[c->n++] = (struct rtl_candidate){ sym.st_value, sym.st_size, name, source,
						       rank_of(&sym, source & ~RTL_SRC_DEBUG) };
	}
	return 0;
}

/* The symbol tables of ELF of SOURCE kinds (SHT_SYMTAB, and SHT_DYNSYM
 * unless SYMTAB_ONLY); *HAD_SYMTAB says whether it had a .symtab. */
static int collect_file(Elf *elf, const unsigned char *image, size_t image_size, unsigned extra,
			bool symtab_only, bool *had_symtab, struct rtl_cands *c)
{
	Elf_Scn *scn = NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		int err = 0;
		if (!gelf_getshdr(scn, &sh))
			continue;
		if (sh.sh_type == SHT_SYMTAB) {
			*had_symtab = true;
			err = collect_table(elf, image, image_size, scn, &sh, RTL_SRC_SYMTAB | extra, c);
		} else if (sh.sh_type == SHT_DYNSYM && !symtab_only) {
			err = collect_table(elf, image, image_size, scn, &sh, RTL_SRC_DYNSYM, c);
		}
		if (err)
			return err;
	}
	return 0;
}

int rtl_elf_collect_symbols(rtl_binary *bin, struct rtl_cands *c)
{
	bool had = false, debug_had = false;
	int err = collect_file(bin->elf, bin->image, bin->image_size, 0, false, &had, c);
	/* stripped: the names the separate debug file has */
	bin->has_symtab = had;
	bin->debug_consulted = !err && !had;
	if (!err && !had && !rtl_elf_open_debug_file(bin))
		err = collect_file(bin->debug_elf, bin->debug_image, bin->debug_image_size, RTL_SRC_DEBUG,
				   true, &debug_had, c);
	return err;
}
