/* Shared by the libFuzzer harness and the seeded corruption test: opens
 * PATH and walks everything rtl_binary offers, so that a corrupted file
 * reaches every parser. Returns rtl_binary_open's result. */
#ifndef RETICLE_TESTS_BINARY_FUZZ_H
#define RETICLE_TESTS_BINARY_FUZZ_H
#include <stdint.h>
#include <reticle/binary.h>

static int fuzz_exercise_binary(const char *path, uint64_t seed)
{
	rtl_binary *bin;
	int err = rtl_binary_open(path, &bin);
	if (err)
		return err;
	size_t n = rtl_binary_function_count(bin);
	rtl_binary_check_functions(bin);
	for (size_t i = 0; i < n; i++) {
		const rtl_function *f = rtl_binary_function(bin, i);
		if (rtl_binary_find_function(bin, f->addr + f->size / 2) == NULL && f->size > 1)
			__builtin_trap();  /* a function must contain its own middle */
	}
	for (size_t i = 0; i < rtl_binary_code_pointer_count(bin); i++)
		(void)rtl_binary_find_function(bin, rtl_binary_code_pointer(bin, i)->target);
	unsigned char buf[64];
	for (size_t i = 0; i < rtl_binary_segment_count(bin); i++) {
		const rtl_segment *s = rtl_binary_segment(bin, i);
		(void)rtl_binary_read(bin, s->vaddr + (s->memsz ? seed % s->memsz : 0), buf, sizeof(buf));
		(void)rtl_binary_read(bin, s->vaddr + s->memsz - 8, buf, 8);
	}
	const char *file;
	int line;
	for (size_t i = 0; i < n && i < 8; i++)
		(void)rtl_binary_source_line(bin, rtl_binary_function(bin, (seed + i) % n)->addr, &file, &line);
	(void)rtl_binary_path(bin);
	(void)rtl_binary_kind(bin);
	(void)rtl_binary_interp(bin);
	(void)rtl_binary_entry(bin);
	rtl_binary_close(bin);
	return 0;
}

#endif
