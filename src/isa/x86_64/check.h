/* The relocator's verdict on one function, for the binary analyzer's listing
 * (rtl_binary_check_functions). */
#ifndef RETICLE_ISA_X86_64_CHECK_H
#define RETICLE_ISA_X86_64_CHECK_H

#include <stddef.h>
#include <stdint.h>

/* Returns 1 if the function at ADDR (LEN bytes of CODE) can be relocated,
 * else 0 with *REASON set to a static string. */
int rtl_x86_check_function(const uint8_t *code, size_t len, uint64_t addr, const char **reason);

/* 1 if LEN bytes of CODE are nothing but nops and int3s (alignment padding). */
int x86_is_padding(const uint8_t *code, size_t len);

#endif
