/* The relocator's verdict on one function, used by the binary analyzer
 * (rtl_binary_check_functions). Owned by the x86-64 relocator; src/elf/
 * holds a weak default so it links without it. Returns 1 if the function
 * at ADDR (CODE, LEN bytes from the file) can be relocated and patched,
 * else 0 with *REASON set to a static string.
 *
 * Linking trap: libreticle is a static archive and src/elf/functions.o
 * already pulls in the weak default, so the linker never extracts an
 * archive member just to override it. Define the strong version in an
 * object the program needs for other reasons (the relocator's main file),
 * not alone in a file of its own, or it is silently never linked. */
#ifndef RETICLE_ISA_X86_64_CHECK_H
#define RETICLE_ISA_X86_64_CHECK_H

#include <stddef.h>
#include <stdint.h>

int rtl_x86_check_function(const uint8_t *code, size_t len, uint64_t addr, const char **reason);

#endif
