/* What relocating a function needs to know of its binary alone: where
 * its code is, which data words point into it, and whether it identifies
 * its caller by the return address. Read by the patcher, by copies made
 * for no process (warm/prepare.c) and by the engine. */
#include <elf.h>
#include <stdlib.h>
#include <string.h>
#include "elf/code_facts.h"

bool fn_in_exec_segment(const rtl_binary *bin, uint64_t addr, uint64_t len)
{
	for (size_t i = 0; i < rtl_binary_segment_count(bin); i++) {
		const rtl_segment *s = rtl_binary_segment(bin, i);
		if ((s->flags & PF_X) && addr >= s->vaddr && addr + len <= s->vaddr + s->filesz)
			return true;
	}
	return false;
}

/* An executable segment alone is not enough: Rust binaries linked with one
 * read-execute segment keep .rodata in it, and a table of digits (zmij's
 * DIGITS2) read as offsets landed there: the lea of it was sent to a
 * "copy" of that table, and numbers came out wrong (rustup asked for
 * 437809346845567311 bytes). */
bool fn_is_function_code(const rtl_binary *bin, uint64_t addr)
{
	return fn_in_exec_segment(bin, addr, 1) && rtl_binary_find_function(bin, addr);
}

void fn_link_extent(const rtl_binary *bin, uint64_t *lo, uint64_t *hi)
{
	*lo = UINT64_MAX;
	*hi = 0;
	for (size_t i = 0; i < rtl_binary_segment_count(bin); i++) {
		const rtl_segment *s = rtl_binary_segment(bin, i);
		if (s->vaddr < *lo)
			*lo = s->vaddr;
		if (s->vaddr + s->memsz > *hi)
			*hi = s->vaddr + s->memsz;
	}
	*lo &= ~(uint64_t)4095;
}

/* The slice [*lo, *hi) of the binary's code pointers (sorted by target)
 * that point strictly inside F. */
static void code_pointers_into(const rtl_binary *bin, const rtl_function *f, size_t *lo, size_t *hi)
{
	size_t count = rtl_binary_code_pointer_count(bin), a = 0, b = count;
	while (a < b) {
		size_t mid = (a + b) / 2;
		if (rtl_binary_code_pointer(bin, mid)->target <= f->addr)
			a = mid + 1;
		else
			b = mid;
	}
	*lo = a;
	while (a < count && rtl_binary_code_pointer(bin, a)->target < f->addr + f->size)
		a++;
	*hi = a;
}

bool fn_has_code_pointers(const rtl_binary *bin, const rtl_function *f)
{
	size_t lo, hi;
	code_pointers_into(bin, f, &lo, &hi);
	return hi > lo;
}

uint64_t *fn_interior_pointers(const rtl_binary *bin, const rtl_function *f, uint64_t bias, size_t *n)
{
	size_t lo, hi, k = 0;
	code_pointers_into(bin, f, &lo, &hi);
	uint64_t *out = malloc((hi - lo + 1) * sizeof(*out));
	if (!out) {
		*n = 0;
		return NULL;
	}
	for (size_t i = lo; i < hi; i++)
		out[k++] = rtl_binary_code_pointer(bin, i)->target + bias;
	*n = k;
	return out;
}

void fn_code_pointer_slice(const rtl_binary *bin, const rtl_function *f, size_t *lo, size_t *hi)
{
	code_pointers_into(bin, f, lo, hi);
}

bool fn_keeps_caller(const rtl_function *f)
{
	static const char *const names[] = { "dlopen", "dlmopen", "dlsym", "dlvsym",
					     "__libc_dlopen_mode", "__libc_dlsym", "__libc_dlvsym" };
	if (!f->name)
		return false;
	size_t len = strcspn(f->name, "@");   /* dlsym@plt, dlsym@@GLIBC_2.34 */
	for (size_t i = 0; i < sizeof(names) / sizeof(*names); i++)
		if (strlen(names[i]) == len && !strncmp(f->name, names[i], len))
			return true;
	return false;
}

bool fn_marks_return_tables(const rtl_function *f)
{
	/* OCaml's native runtime (4.x and 5.x) */
	return f->name && (!strcmp(f->name, "caml_start_program") || !strcmp(f->name, "caml_call_gc"));
}

bool fn_has_return_tables(const rtl_binary *bin)
{
	for (size_t i = 0; i < rtl_binary_function_count(bin); i++)
		if (fn_marks_return_tables(rtl_binary_function(bin, i)))
			return true;
	return false;
}
