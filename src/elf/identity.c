/* What identifies a binary's contents across runs: its GNU build-id, or the
 * file itself (device, inode, size, modification time) when it has none. */
#include <gelf.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include "binary_internal.h"

/* The NT_GNU_BUILD_ID descriptor of a PT_NOTE segment, or NULL. */
static const unsigned char *build_id(const rtl_binary *bin, size_t *len)
{
	for (size_t i = 0; i < bin->ehdr.e_phnum; i++) {
		GElf_Phdr ph;
		if (!gelf_getphdr(bin->elf, (int)i, &ph) || ph.p_type != PT_NOTE)
			continue;
		Elf_Data *d = elf_getdata_rawchunk(bin->elf, (int64_t)ph.p_offset, ph.p_filesz, ELF_T_NHDR);
		GElf_Nhdr nh;
		size_t off = 0, name_off, desc_off;
		while (d && (off = gelf_getnote(d, off, &nh, &name_off, &desc_off)) > 0)
			if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 && nh.n_descsz &&
			    !memcmp((const char *)d->d_buf + name_off, "GNU", 4)) {
				*len = nh.n_descsz;
				return (const unsigned char *)d->d_buf + desc_off;
			}
	}
	return NULL;
}

int rtl_binary_identity(const rtl_binary *bin, char *buf, size_t len)
{
	size_t n;
	const unsigned char *id = build_id(bin, &n);
	if (id && len >= 2 * n + 3) {
		int at = snprintf(buf, len, "b-");
		for (size_t i = 0; i < n; i++)
			at += snprintf(buf + at, len - (size_t)at, "%02x", id[i]);
		return 0;
	}
	struct stat st;
	if (fstat(bin->fd, &st))
		return -1;
	/* FNV-1a over the file's identity and its path */
	uint64_t h = 0xcbf29ce484222325ull;
	uint64_t parts[] = { st.st_dev, st.st_ino, (uint64_t)st.st_size, (uint64_t)st.st_mtim.tv_sec,
			     (uint64_t)st.st_mtim.tv_nsec };
	const unsigned char *bytes = (const unsigned char *)parts;
	for (size_t i = 0; i < sizeof(parts); i++)
		h = (h ^ bytes[i]) * 0x100000001b3ull;
	for (const char *c = bin->path; *c; c++)
		h = (h ^ (unsigned char)*c) * 0x100000001b3ull;
	return snprintf(buf, len, "f-%016llx", (unsigned long long)h) < (int)len ? 0 : -1;
}
