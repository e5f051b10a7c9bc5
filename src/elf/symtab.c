/* The symbol table as the file lists it, for exporters that must name code
 * as other tools do (BOLT's names of local functions count same-named
 * locals), unlike the merged function list of functions.c. */
#include <errno.h>
#include "binary_internal.h"

static int walk(Elf *elf, Elf_Scn *scn, const GElf_Shdr *sh, int (*fn)(const rtl_symbol *s, void *user),
		void *user)
{
	Elf_Data *d = elf_getdata(scn, NULL);
	size_t n = d && sh->sh_entsize ? d->d_size / sh->sh_entsize : 0;
	for (size_t i = 1; i < n; i++) {
		GElf_Sym sym;
		if (!gelf_getsym(d, (int)i, &sym) || sym.st_shndx == SHN_UNDEF)
			continue;
		unsigned type = GELF_ST_TYPE(sym.st_info);
		if (type == STT_FILE || type == STT_SECTION)
			continue;
		const char *name = elf_strptr(elf, sh->sh_link, sym.st_name);
		rtl_symbol s = { name ? name : "", sym.st_value, sym.st_size, (uint8_t)type,
				 (uint8_t)GELF_ST_BIND(sym.st_info), i };
		int r = fn(&s, user);
		if (r)
			return r;
	}
	return 0;
}

int rtl_binary_foreach_symbol(rtl_binary *bin, int (*fn)(const rtl_symbol *s, void *user), void *user)
{
	Elf_Scn *scn = NULL, *dyn = NULL;
	GElf_Shdr sh, dynsh;
	while ((scn = elf_nextscn(bin->elf, scn))) {
		if (!gelf_getshdr(scn, &sh))
			continue;
		if (sh.sh_type == SHT_SYMTAB)
			return walk(bin->elf, scn, &sh, fn, user);
		if (sh.sh_type == SHT_DYNSYM) {
			dyn = scn;
			dynsh = sh;
		}
	}
	return dyn ? walk(bin->elf, dyn, &dynsh, fn, user) : -ENOENT;
}
