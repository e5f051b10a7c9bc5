/* A binary's discovered functions as bytes, and back (facts.c): warm start
 * keeps them per binary so that a later run skips discovery (symbols, FDEs,
 * gaps, code pointers: milliseconds per library, 14 ms for cc1). */
#ifndef RETICLE_ELF_FACTS_H
#define RETICLE_ELF_FACTS_H

#include <stdbool.h>
#include <stddef.h>
#include <reticle/binary.h>

/* Function discovery on a binary opened without it (rtl_binary_open_image). */
int rtl_elf_discover(rtl_binary *bin);
/* BIN's discovered functions, code pointers and FDE facts as one blob
 * (*BLOB malloc'd); -ENOTSUP when they cannot be (a function already
 * checked, a name too far). */
int rtl_elf_facts_pack(const rtl_binary *bin, void **blob, size_t *len);
/* Takes them from BLOB (LEN bytes, 8-aligned) into BIN, opened without
 * discovery: names point into BLOB, which RELEASE(OWNER) lets go of when
 * BIN closes (not called on failure). -EINVAL when BLOB is malformed; on
 * any failure BIN is as it was, ready for rtl_elf_discover. */
int rtl_elf_facts_adopt(rtl_binary *bin, const void *blob, size_t len, void *owner,
			void (*release)(void *owner));

/* The debug file discovery would read names from: the first readable
 * place it looks (PATH, "" when none). -1 when that is not known without
 * asking debuginfod servers. */
int rtl_elf_debug_candidate(rtl_binary *bin, char *path, size_t len);
/* The debug file BIN read names from, or NULL. */
const char *rtl_elf_debug_path(const rtl_binary *bin);
/* Whether discovery looked for a debug file (BIN has no .symtab). */
bool rtl_elf_debug_consulted(const rtl_binary *bin);
/* The size of BIN's file in bytes (0 if unknown): two binaries given the
 * same build-id by hand (-Wl,--build-id=0x...) share a cache identity,
 * not a size, most often. */
uint64_t rtl_elf_file_size(const rtl_binary *bin);

#endif
