/* What identifies a binary's contents across runs: its GNU build-id, or the
 * file itself (device, inode, size, modification time) when it has none. */
#include <gelf.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include "binary_internal.h"
#include "elf/facts.h"
#include "util/hash.h"

static const unsigned char *note_build_id(Elf_Data *d, size_t *len)
{
	GElf_Nhdr nh;
	size_t off = 0, name_off, desc_off;
	while (d && (off = gelf_getnote(d, off, &nh, &name_off, &desc_off)) > 0)
		if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 && nh.n_descsz &&
		    !memcmp((const char *)d->d_buf + name_off, "GNU", 4)) {
			*len = nh.n_descsz;
			return (const unsigned char *)d->d_buf + desc_off;
		}
	return NULL;
}

const unsigned char *rtl_elf_build_id(Elf *elf, size_t *len)
{
	const unsigned char *id;
	Elf_Scn *scn = NULL;
	/* a note section (a debug file keeps it), else a PT_NOTE segment */
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_NOTE &&
		    (id = note_build_id(elf_getdata(scn, NULL), len)))
			return id;
	}
	size_t n;
	if (elf_getphdrnum(elf, &n))
		return NULL;
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;
		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_NOTE)
			continue;
		if ((id = note_build_id(elf_getdata_rawchunk(elf, (int64_t)ph.p_offset, ph.p_filesz,
							     ELF_T_NHDR), len)))
			return id;
	}
	return NULL;
}

int rtl_binary_identity(const rtl_binary *bin, char *buf, size_t len)
{
	size_t n;
	const unsigned char *id = rtl_elf_build_id(bin->elf, &n);
	if (id && len < 2 * n + 3)
		return -1;   /* not the other key instead: a binary has one identity */
	if (id) {
		int at = snprintf(buf, len, "b-");
		for (size_t i = 0; i < n; i++)
			at += snprintf(buf + at, len - (size_t)at, "%02x", id[i]);
		return 0;
	}
	struct stat st;
	if (fstat(bin->fd, &st))
		return -1;
	/* FNV-1a over the file's identity and its path */
	uint64_t parts[] = { st.st_dev, st.st_ino, (uint64_t)st.st_size, (uint64_t)st.st_mtim.tv_sec,
			     (uint64_t)st.st_mtim.tv_nsec };
	uint64_t h = fnv1a(fnv1a(FNV1A_INIT, parts, sizeof(parts)), bin->path, strlen(bin->path));
	return snprintf(buf, len, "f-%016llx", (unsigned long long)h) < (int)len ? 0 : -1;
}

uint64_t rtl_elf_file_size(const rtl_binary *bin)
{
	struct stat st;
	return fstat(bin->fd, &st) ? 0 : (uint64_t)st.st_size;
}
