/* The separate debug file of a stripped binary (Debian's -dbg and -dbgsym
 * packages): found through the build-id (/usr/lib/debug/.build-id/xx/
 * yyyy.debug) or .gnu_debuglink (beside the binary, in its .debug/ folder,
 * or under /usr/lib/debug/ as gdb looks), and used only when its build-id
 * is the binary's. Its .symtab names what .dynsym does not (_int_malloc,
 * __memmove_avx512_unaligned_erms); addresses are the binary's own. */
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "binary_internal.h"
#include "util/log.h"

/* $RETICLE_DEBUG_DIR (colon-separated) first, then /usr/lib/debug. */
static const char *debug_root(size_t i, char *buf, size_t len)
{
	const char *env = getenv("RETICLE_DEBUG_DIR");
	size_t k = 0;
	for (const char *s = env; s && *s; k++) {
		const char *e = strchr(s, ':');
		size_t n = e ? (size_t)(e - s) : strlen(s);
		if (k == i) {
			snprintf(buf, len, "%.*s", (int)n, s);
			return buf;
		}
		s = e ? e + 1 : s + n;
	}
	return i == k ? "/usr/lib/debug" : NULL;
}

/* Opens PATH as the debug file of BIN when its build-id is BIN's (or, with
 * no build-id in BIN, when it is an ELF file at all). */
static int try_open(rtl_binary *bin, const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	Elf *e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	size_t mine_len, theirs_len;
	const unsigned char *mine = rtl_elf_build_id(bin->elf, &mine_len);
	const unsigned char *theirs = e && elf_kind(e) == ELF_K_ELF ? rtl_elf_build_id(e, &theirs_len) : NULL;
	if (!e || elf_kind(e) != ELF_K_ELF ||
	    (mine && (!theirs || theirs_len != mine_len || memcmp(mine, theirs, mine_len)))) {
		rtl_debug("%s: %s is not its debug file (build-id differs)", bin->path, path);
		if (e)
			elf_end(e);
		close(fd);
		return -1;
	}
	bin->debug_elf = e;
	bin->debug_fd = fd;
	bin->debug_image = (const unsigned char *)elf_rawfile(e, &bin->debug_image_size);
	if (!bin->debug_image) {
		elf_end(e);
		close(fd);
		bin->debug_elf = NULL;
		bin->debug_fd = -1;
		return -1;
	}
	rtl_debug("%s: names from %s", bin->path, path);
	return 0;
}

/* The file name in .gnu_debuglink, or NULL. */
static const char *debuglink(const rtl_binary *bin)
{
	GElf_Shdr sh;
	Elf_Scn *scn = rtl_binary_find_section(bin, ".gnu_debuglink", &sh);
	Elf_Data *d = scn && sh.sh_type != SHT_NOBITS ? elf_getdata(scn, NULL) : NULL;
	if (!d || !d->d_size || !memchr(d->d_buf, 0, d->d_size))
		return NULL;
	const char *name = d->d_buf;
	return *name && !strchr(name, '/') ? name : NULL;
}

int rtl_elf_open_debug_file(rtl_binary *bin)
{
	char path[PATH_MAX], root_buf[PATH_MAX];
	const char *root;
	size_t idlen;
	const unsigned char *id = rtl_elf_build_id(bin->elf, &idlen);
	if (id && idlen >= 2) {
		for (size_t r = 0; (root = debug_root(r, root_buf, sizeof(root_buf))); r++) {
			int at = snprintf(path, sizeof(path), "%s/.build-id/%02x/", root, id[0]);
			for (size_t i = 1; i < idlen && at > 0 && (size_t)at < sizeof(path) - 8; i++)
				at += snprintf(path + at, sizeof(path) - (size_t)at, "%02x", id[i]);
			snprintf(path + at, sizeof(path) - (size_t)at, ".debug");
			if (!access(path, R_OK) && !try_open(bin, path))
				return 0;
		}
	}
	const char *link = debuglink(bin);
	char *real = link ? realpath(bin->path, NULL) : NULL;
	if (!real)
		return -1;
	char *slash = strrchr(real, '/');
	*slash = 0;   /* the binary's folder */
	const char *dir = *real ? real : "/";
	int found = -1;
	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, link) < sizeof(path) &&
	    strcmp(path, bin->path) && !access(path, R_OK) && !try_open(bin, path))
		found = 0;
	else if ((size_t)snprintf(path, sizeof(path), "%s/.debug/%s", dir, link) < sizeof(path) &&
		 !access(path, R_OK) && !try_open(bin, path))
		found = 0;
	for (size_t r = 0; found && (root = debug_root(r, root_buf, sizeof(root_buf))); r++)
		if ((size_t)snprintf(path, sizeof(path), "%s%s/%s", root, real, link) < sizeof(path) &&
		    !access(path, R_OK) && !try_open(bin, path))
			found = 0;
	free(real);
	return found;
}
