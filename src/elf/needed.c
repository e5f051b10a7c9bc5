/* A program's direct library dependencies and their imports, before the
 * loader maps them: reticle chooses at the program's start how copies call
 * (original return addresses: lazy.c), and a library that walks its
 * caller's stack (libasan's reports, libgfortran's and libruby's
 * backtraces) needs them as much as an executable does. */
#include <fcntl.h>
#include <gelf.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "elf/binary_internal.h"
#include "elf/needed.h"

enum { MAX_NEEDED = 64 };

/* Debian's and the usual multiarch directories, as ld.so.cache lists them. */
static const char *const system_dirs[] = {
	"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64", "/usr/lib64",
	"/lib", "/usr/lib", "/usr/local/lib",
};

/* Whether the ELF file at PATH imports one of NAMES (its .dynsym alone:
 * the library is not analysed). */
static bool file_imports_any(const char *path, const char *const *names, size_t nnames)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	Elf *e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	bool found = e && rtl_elf_dynsym_has_any(e, names, nnames, true);
	elf_end(e);
	close(fd);
	return found;
}

/* BIN's DT_NEEDED names (NEEDED, at most MAX_NEEDED) and its run path. */
static size_t needed_names(const rtl_binary *bin, const char **needed, const char **runpath)
{
	size_t n = 0;
	Elf_Scn *scn = NULL;
	*runpath = NULL;
	while ((scn = elf_nextscn(bin->elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNAMIC || !sh.sh_entsize ||
		    !(d = elf_getdata(scn, NULL)))
			continue;
		for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Dyn dyn;
			if (!gelf_getdyn(d, (int)i, &dyn) || dyn.d_tag == DT_NULL)
				break;
			const char *s = (dyn.d_tag == DT_NEEDED || dyn.d_tag == DT_RUNPATH || dyn.d_tag == DT_RPATH)
					? elf_strptr(bin->elf, sh.sh_link, dyn.d_un.d_val) : NULL;
			if (!s)
				continue;
			if (dyn.d_tag == DT_NEEDED && n < MAX_NEEDED)
				needed[n++] = s;
			else if (dyn.d_tag == DT_RUNPATH || (dyn.d_tag == DT_RPATH && !*runpath))
				*runpath = s;
		}
	}
	return n;
}

/* Whether NAME is found in the colon-separated DIRS ($ORIGIN: ORIGIN), into PATH. */
static bool find_in(const char *dirs, const char *origin, const char *name, char path[PATH_MAX])
{
	while (dirs && *dirs) {
		size_t len = strcspn(dirs, ":");
		char dir[PATH_MAX];
		if (len && len < sizeof(dir)) {
			memcpy(dir, dirs, len);
			dir[len] = 0;
			const char *rest = !strncmp(dir, "$ORIGIN", 7) ? dir + 7 : !strncmp(dir, "${ORIGIN}", 9) ? dir + 9 : NULL;
			int w = rest ? snprintf(path, PATH_MAX, "%s%s/%s", origin, rest, name)
				     : snprintf(path, PATH_MAX, "%s/%s", dir, name);
			if (w > 0 && w < PATH_MAX && !access(path, R_OK))
				return true;
		}
		dirs += len + (dirs[len] == ':');
	}
	return false;
}

bool elf_needed_imports_any(const rtl_binary *bin, const char *path, const char *library_path,
			    const char *const *names, size_t nnames)
{
	const char *needed[MAX_NEEDED], *runpath;
	size_t n = needed_names(bin, needed, &runpath);
	char origin[PATH_MAX], found[PATH_MAX];
	snprintf(origin, sizeof(origin), "%s", path);
	char *slash = strrchr(origin, '/');
	if (slash)
		*slash = 0;
	else
		snprintf(origin, sizeof(origin), ".");
	for (size_t i = 0; i < n; i++) {
		bool at = false;
		if (strchr(needed[i], '/')) {
			snprintf(found, sizeof(found), "%s", needed[i]);
			at = !access(found, R_OK);
		} else {
			at = find_in(runpath, origin, needed[i], found) || find_in(library_path, origin, needed[i], found);
			for (size_t k = 0; !at && k < sizeof(system_dirs) / sizeof(*system_dirs); k++)
				at = find_in(system_dirs[k], origin, needed[i], found);
		}
		if (at && file_imports_any(found, names, nnames))
			return true;
	}
	return false;
}
