/* Function candidates from .symtab and .dynsym: STT_FUNC and STT_GNU_IFUNC
 * symbols defined in this file (SHN_UNDEF imports are the PLT's business). */
#include <errno.h>
#include <stdlib.h>
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

static int rank_of(const GElf_Sym *sym, unsigned source)
{
	if (source == RTL_SRC_DYNSYM)
		return RANK_DYNSYM;
	switch (GELF_ST_BIND(sym->st_info)) {
	case STB_GLOBAL: return RANK_SYMTAB_GLOBAL;
	case STB_WEAK: return RANK_SYMTAB_WEAK;
	default: return RANK_SYMTAB_LOCAL;
	}
}

static int collect_table(rtl_binary *bin, Elf_Scn *scn, const GElf_Shdr *sh,
			 unsigned source, struct rtl_cands *c)
{
	Elf_Data *d = elf_getdata(scn, NULL);
	if (!d || !sh->sh_entsize)
		return 0;
	size_t n = sh->sh_size / sh->sh_entsize;
	for (size_t i = 1; i < n; i++) {
		GElf_Sym sym;
		if (!gelf_getsym(d, (int)i, &sym))
			break;
		int type = GELF_ST_TYPE(sym.st_info);
		if (type != STT_FUNC && type != STT_GNU_IFUNC)
			continue;
		if (sym.st_shndx == SHN_UNDEF || sym.st_shndx == SHN_ABS || sym.st_value == 0)
			continue;
		const char *name = elf_strptr(bin->elf, sh->sh_link, sym.st_name);
		if (name && !*name)
			name = NULL;
		int err = rtl_cands_push(c, sym.st_value, sym.st_size, name, source,
					 rank_of(&sym, source));
		if (err)
			return err;
	}
	return 0;
}

int rtl_elf_collect_symbols(rtl_binary *bin, struct rtl_cands *c)
{
	Elf_Scn *scn = NULL;
	while ((scn = elf_nextscn(bin->elf, scn))) {
		GElf_Shdr sh;
		int err = 0;
		if (!gelf_getshdr(scn, &sh))
			continue;
		if (sh.sh_type == SHT_SYMTAB)
			err = collect_table(bin, scn, &sh, RTL_SRC_SYMTAB, c);
		else if (sh.sh_type == SHT_DYNSYM)
			err = collect_table(bin, scn, &sh, RTL_SRC_DYNSYM, c);
		if (err)
			return err;
	}
	return 0;
}
