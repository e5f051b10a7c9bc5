/* Dynamic-symbol lookup by name, for the few loader symbols the engine needs
 * (_r_debug). The binary analyzer indexes functions only. */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <string.h>
#include <unistd.h>
#include "engine/symbol.h"

int elf_symbol_lookup(const char *path, const char *name, uint64_t *addr)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), err = -ENOENT;
	if (fd < 0)
		return -errno;
	elf_version(EV_CURRENT);
	Elf *e = elf_begin(fd, ELF_C_READ, NULL);
	Elf_Scn *scn = NULL;
	while (e && err && (scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh) || (sh.sh_type != SHT_DYNSYM && sh.sh_type != SHT_SYMTAB))
			continue;
		Elf_Data *d = elf_getdata(scn, NULL);
		size_t n = sh.sh_entsize ? sh.sh_size / sh.sh_entsize : 0;
		for (size_t i = 0; d && i < n; i++) {
			GElf_Sym sym;
			const char *s;
			if (gelf_getsym(d, (int)i, &sym) && sym.st_shndx != SHN_UNDEF &&
			    (s = elf_strptr(e, sh.sh_link, sym.st_name)) && !strcmp(s, name)) {
				*addr = sym.st_value;
				err = 0;
				break;
			}
		}
	}
	if (e)
		elf_end(e);
	close(fd);
	return err;
}
