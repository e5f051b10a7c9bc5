#ifndef RETICLE_ENGINE_SYMBOL_H
#define RETICLE_ENGINE_SYMBOL_H
#include <stdint.h>
/* Link-time address of symbol NAME in the ELF file at PATH (.dynsym or
 * .symtab). Returns 0 or -ENOENT / -errno. */
int elf_symbol_lookup(const char *path, const char *name, uint64_t *addr);
#endif
