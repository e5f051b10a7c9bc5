/* Function entries the ELF file names without symbols: the entry point,
 * DT_INIT and DT_FINI, and the words of .init_array, .fini_array and
 * .preinit_array. In a stripped binary these are the only trace of the
 * crt start-up code (crtstuff.c is built without unwind tables). */
#include <string.h>
#include <reticle/error.h>
#include "binary_internal.h"

uint64_t rtl_elf_word_at(rtl_binary *bin, uint64_t where)
{
	Elf_Scn *scn = NULL;
	while ((scn = elf_nextscn(bin->elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_RELA || !(sh.sh_flags & SHF_ALLOC) ||
		    !sh.sh_entsize || !(d = elf_getdata(scn, NULL)))
			continue;
		for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Rela r;
			if (!gelf_getrela(d, (int)i, &r))
				break;
			if (r.r_offset == where && GELF_R_TYPE(r.r_info) == R_X86_64_RELATIVE)
				return (uint64_t)r.r_addend;
		}
	}
	const unsigned char *p = rtl_binary_ptr(bin, where, 8);
	uint64_t v = 0;
	if (p)
		memcpy(&v, p, 8);
	return v;
}

static int collect_array(rtl_binary *bin, const GElf_Shdr *sh, struct rtl_cands *c)
{
	for (uint64_t off = 0; off + 8 <= sh->sh_size && off < 8 * 256; off += 8) {
		uint64_t fn = rtl_elf_word_at(bin, sh->sh_addr + off);
		/* 0 and -1 are the classic list terminators */
		if (fn && fn != ~(uint64_t)0) {
			int err = rtl_cands_push(c, fn, 0, NULL, RTL_SRC_ENTRY, RANK_NONE);
			if (err)
				return err;
		}
	}
	return 0;
}

static int collect_dynamic(rtl_binary *bin, Elf_Scn *scn, const GElf_Shdr *sh, struct rtl_cands *c)
{
	Elf_Data *d = elf_getdata(scn, NULL);
	if (!d || !sh->sh_entsize)
		return 0;
	for (size_t i = 0; i < sh->sh_size / sh->sh_entsize; i++) {
		GElf_Dyn dyn;
		int err = 0;
		if (!gelf_getdyn(d, (int)i, &dyn) || dyn.d_tag == DT_NULL)
			break;
		if (dyn.d_tag == DT_INIT)
			err = rtl_cands_push(c, dyn.d_un.d_ptr, 0, "_init", RTL_SRC_ENTRY, RANK_ENTRY);
		else if (dyn.d_tag == DT_FINI)
			err = rtl_cands_push(c, dyn.d_un.d_ptr, 0, "_fini", RTL_SRC_ENTRY, RANK_ENTRY);
		if (err)
			return err;
	}
	return 0;
}

int rtl_elf_collect_entries(rtl_binary *bin, struct rtl_cands *c)
{
	Elf_Scn *scn = NULL;
	int err = 0;

	if (bin->ehdr.e_entry)
		err = rtl_cands_push(c, bin->ehdr.e_entry, 0,
				     bin->kind == RTL_BIN_SHARED ? NULL : "_start", RTL_SRC_ENTRY, RANK_ENTRY);
	while (!err && (scn = elf_nextscn(bin->elf, scn))) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh))
			continue;
		if (sh.sh_type == SHT_INIT_ARRAY || sh.sh_type == SHT_FINI_ARRAY ||
		    sh.sh_type == SHT_PREINIT_ARRAY)
			err = collect_array(bin, &sh, c);
		else if (sh.sh_type == SHT_DYNAMIC)
			err = collect_dynamic(bin, scn, &sh, c);
	}
	return err;
}
