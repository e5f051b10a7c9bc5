/* What relocating a function needs to know of its binary alone
 * (code_facts.c): the patcher's, warm start's and the engine's one answer. */
#ifndef RETICLE_ELF_CODE_FACTS_H
#define RETICLE_ELF_CODE_FACTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <reticle/binary.h>

/* Whether [ADDR, ADDR+LEN) (link-time) lies in an executable segment's file bytes. */
bool fn_in_exec_segment(const rtl_binary *bin, uint64_t addr, uint64_t len);
/* Whether the function at link-time ADDR is a signal return trampoline
 * (its FDE's 'S': glibc's __restore_rt), which the kernel returns into
 * from a handler and unwinders recognize by its bytes. */
bool fn_is_signal_trampoline(const rtl_binary *bin, uint64_t addr);
/* Code a jump-table entry may lead to: inside a known function. */
bool fn_is_function_code(const rtl_binary *bin, uint64_t addr);
/* The link-time extent of BIN's loadable segments, [*LO, *HI), *LO down to
 * its page. */
void fn_link_extent(const rtl_binary *bin, uint64_t *lo, uint64_t *hi);
/* Whether data words point inside F (rewritten when it is relocated: they
 * must hold their run-time values by then). */
bool fn_has_code_pointers(const rtl_binary *bin, const rtl_function *f);
/* Those words: the slice [*LO, *HI) of the binary's code pointers. */
void fn_code_pointer_slice(const rtl_binary *bin, const rtl_function *f, size_t *lo, size_t *hi);
/* Their targets, at run time for BIAS (malloc'd, *N of them), or NULL. */
uint64_t *fn_interior_pointers(const rtl_binary *bin, const rtl_function *f, uint64_t bias, size_t *n);
/* Whether BIN's data holds return addresses that its runtime looks up as
 * they are: OCaml's frame tables, hashed by return address when the
 * program starts and searched at every collection. Such code pointers keep
 * their values, and the program's calls push original return addresses. */
bool fn_has_return_tables(const rtl_binary *bin);
/* Whether no frame of BIN can catch an exception or run a cleanup: no
 * .gcc_except_table, and no CIE of .eh_frame names a personality routine
 * (plain C); false also when a record does not read. Walks the CIEs on
 * the first call (FDEs are skipped by their length) and keeps the
 * answer: not for concurrent first calls (ehframe.c). */
bool fn_eh_plain(rtl_binary *bin);
/* Whether F is a function that tells so (fn_has_return_tables). */
bool fn_marks_return_tables(const rtl_function *f);
/* Whether F identifies its caller by the return address (dlopen, dlsym):
 * copies call it with the original return address. */
bool fn_keeps_caller(const rtl_function *f);

#endif
