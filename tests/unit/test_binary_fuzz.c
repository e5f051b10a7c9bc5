/* Seeded corruption of a real binary: byte flips, extreme values in the
 * headers and tables, and truncations. rtl_binary_open must return 0 or a
 * known error and never crash; on success every accessor must work. */
#include <elf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <reticle/binary.h>
#include <reticle/error.h>
#include "check.h"
#include "../fuzz/binary_fuzz.h"

/* ctest runs 400 variants of bzip2; for longer runs (under ASan):
 * test_binary_fuzz [BINARY [VARIANTS [SEED]]] */
#define VARIANTS 400

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* File ranges worth hitting: headers, section and program headers, and
 * the sections the analyzer parses (symbols, relocations, .eh_frame...). */
struct range { size_t off, len; };
static struct range ranges[256];
static size_t nranges;

static void add_range(size_t off, size_t len, size_t size)
{
	if (off < size && len && nranges < 256)
		ranges[nranges++] = (struct range){ off, len < size - off ? len : size - off };
}

static void find_ranges(const unsigned char *img, size_t size)
{
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)img;
	add_range(0, sizeof(*eh), size);
	add_range(eh->e_phoff, (size_t)eh->e_phnum * sizeof(Elf64_Phdr), size);
	add_range(eh->e_shoff, (size_t)eh->e_shnum * sizeof(Elf64_Shdr), size);
	for (size_t i = 0; i < eh->e_shnum && eh->e_shoff + (i + 1) * sizeof(Elf64_Shdr) <= size; i++) {
		const Elf64_Shdr *sh = (const Elf64_Shdr *)(img + eh->e_shoff) + i;
		if (sh->sh_type != SHT_NOBITS && !(sh->sh_flags & SHF_EXECINSTR))
			add_range(sh->sh_offset, sh->sh_size, size);
	}
}

static void mutate(unsigned char *img, size_t *size)
{
	int kind = (int)(next() % 4);
	int count = 1 + (int)(next() % 8);
	if (kind == 0) {  /* truncation */
		*size = next() % *size;
		return;
	}
	for (int i = 0; i < count; i++) {
		struct range r = ranges[next() % nranges];
		size_t off = kind == 1 ? next() % *size : r.off + next() % r.len;
		if (kind == 3 && off + 8 <= *size) {  /* an extreme value in a field */
			static const uint64_t extremes[] = { 0, ~0ull, 0x7fffffff, 0x80000000, 0xffffffff, 1 };
			uint64_t v = extremes[next() % 6];
			memcpy(img + (off & ~(size_t)3), &v, (next() & 1) ? 4 : 8);
		} else {
			img[off] ^= (unsigned char)(1u << (next() % 8));
		}
	}
}

/* Corrupts SRC VARIANTS times; returns 0 if it could run at all. */
static int fuzz_file(const char *src, int variants)
{
	char path[] = "/tmp/rtl-fuzz-XXXXXX";
	FILE *f = fopen(src, "rb");
	unsigned char *orig, *img;
	size_t size, opened = 0, failed = 0;
	int fd = mkstemp(path);

	if (!f || fd < 0)
		return 1;
	fseek(f, 0, SEEK_END);
	size = (size_t)ftell(f);
	rewind(f);
	orig = malloc(size);
	img = malloc(size);
	if (!orig || !img || fread(orig, 1, size, f) != size)
		return 1;
	fclose(f);
	nranges = 0;
	find_ranges(orig, size);
	for (int v = 0; v < variants; v++) {
		size_t len = size;
		memcpy(img, orig, size);
		mutate(img, &len);
		if (ftruncate(fd, 0) || pwrite(fd, img, len, 0) != (ssize_t)len)
			return 1;
		int err = fuzz_exercise_binary(path, next());
		if (err == 0) {
			opened++;
		} else {
			failed++;
			CHECK(err < 0 && strcmp(rtl_strerror(err), "unknown error"));
		}
	}
	printf("%s: %d variants, %zu opened, %zu rejected\n", src, variants, opened, failed);
	close(fd);
	unlink(path);
	free(orig);
	free(img);
	return 0;
}

/* Default: bzip2 (stripped, PIE) and this test itself (built with -g, so
 * libdw reads corrupted DWARF through rtl_binary_source_line). */
int main(int argc, char **argv)
{
	if (argc > 3)
		rng = strtoull(argv[3], NULL, 0) | 1;
	if (argc > 1)
		return fuzz_file(argv[1], argc > 2 ? atoi(argv[2]) : VARIANTS) || CHECK_DONE();
	if (!access("/usr/bin/bzip2", R_OK) && fuzz_file("/usr/bin/bzip2", VARIANTS))
		return 1;
	if (fuzz_file("/proc/self/exe", VARIANTS / 2))
		return 1;
	return CHECK_DONE();
}
