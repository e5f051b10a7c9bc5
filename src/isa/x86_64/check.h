/* The relocator's verdict on one function, used by the binary analyzer
 * (rtl_binary_check_functions). Owned by the x86-64 relocator; src/elf/
 * holds a weak default so it links without it. Returns 1 if the function
 * at ADDR (CODE, LEN bytes from the file) can be relocated and patched,
 * else 0 with *REASON set to a static string. */
#ifndef RETICLE_ISA_X86_64_CHECK_H
#define RETICLE_ISA_X86_64_CHECK_H

#include <stddef.h>
#include <stdint.h>

int rtl_x86_check_function(const uint8_t *code, size_t len, uint64_t addr, const char **reason);

#endif
