/* A program's direct library dependencies, found as the dynamic loader
 * finds them (needed.c), and whether a library imports a symbol, read
 * from its dynamic symbols alone (no full analysis of the library). */
#ifndef RETICLE_ELF_NEEDED_H
#define RETICLE_ELF_NEEDED_H

#include <stdbool.h>
#include <stddef.h>
#include <reticle/binary.h>

/* Whether a library BIN (at PATH, its $ORIGIN) needs directly imports one
 * of NAMES: its DT_NEEDED names looked up in its DT_RUNPATH (or DT_RPATH),
 * LD_LIBRARY_PATH (LIBRARY_PATH, the program's), then the system's
 * directories. A library not found is taken as not importing. */
bool elf_needed_imports_any(const rtl_binary *bin, const char *path, const char *library_path,
			    const char *const *names, size_t nnames);

#endif
