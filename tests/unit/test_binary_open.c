/* rtl_binary on this test program itself, checked against what the dynamic
 * loader did with it (dl_iterate_phdr, getauxval), and on bad input. */
#include <errno.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>
#include <reticle/binary.h>
#include <reticle/error.h>
#include "check.h"

static char self[4096];
static uint64_t bias;
static const ElfW(Phdr) *phdrs;
static size_t nphdrs;

static int first_module(struct dl_phdr_info *info, size_t size, void *data)
{
	bias = info->dlpi_addr;
	phdrs = info->dlpi_phdr;
	nphdrs = info->dlpi_phnum;
	return 1;  /* the main program comes first */
}

int main(int argc, char **argv);
__attribute__((noinline)) int probe_function(int x)
{
	return x * 3 + 1;
}

/* The oracle for source lines: binutils' addr2line on this file. */
static int addr2line(uint64_t addr)
{
	char cmd[4300], out[4200] = "";
	snprintf(cmd, sizeof(cmd), "addr2line -e '%s' 0x%llx", self, (unsigned long long)addr);
	FILE *p = popen(cmd, "r");
	if (!p || !fgets(out, sizeof(out), p))
		return -1;
	pclose(p);
	char *colon = strrchr(out, ':');
	return colon ? atoi(colon + 1) : -1;
}

static void write_file(const char *path, const void *buf, size_t len)
{
	FILE *f = fopen(path, "wb");
	fwrite(buf, 1, len, f);
	fclose(f);
}

static void *read_self(size_t *len)
{
	FILE *f = fopen(self, "rb");
	fseek(f, 0, SEEK_END);
	*len = (size_t)ftell(f);
	rewind(f);
	void *buf = malloc(*len);
	if (fread(buf, 1, *len, f) != *len)
		abort();
	fclose(f);
	return buf;
}

static int open_err(const char *path)
{
	rtl_binary *bin = (void *)1;
	int err = rtl_binary_open(path, &bin);
	if (!err)
		rtl_binary_close(bin);
	else
		CHECK(bin == NULL);
	return err;
}

static void test_self(void)
{
	rtl_binary *bin;
	CHECK_EQ(rtl_binary_open(self, &bin), 0);
	if (!bin)
		return;
	dl_iterate_phdr(first_module, NULL);
	CHECK_EQ(rtl_binary_entry(bin) + bias, getauxval(AT_ENTRY));
	CHECK_EQ(rtl_binary_kind(bin), bias ? RTL_BIN_PIE : RTL_BIN_EXEC);
	CHECK(!rtl_binary_is_static(bin));
	CHECK(rtl_binary_interp(bin) != NULL);

	/* Segments: the same PT_LOADs the loader mapped. */
	size_t nload = 0;
	for (size_t i = 0; i < nphdrs; i++) {
		if (phdrs[i].p_type == PT_INTERP)
			CHECK_STR(rtl_binary_interp(bin), (const char *)(uintptr_t)(bias + phdrs[i].p_vaddr));
		if (phdrs[i].p_type != PT_LOAD)
			continue;
		const rtl_segment *s = rtl_binary_segment(bin, nload++);
		CHECK(s && s->vaddr == phdrs[i].p_vaddr && s->memsz == phdrs[i].p_memsz &&
		      s->flags == phdrs[i].p_flags);
	}
	CHECK_EQ(rtl_binary_segment_count(bin), nload);

	/* A function found by address, named from .symtab, whose bytes in the
	 * file are the bytes the process runs. */
	uint64_t addr = (uint64_t)(uintptr_t)probe_function - bias;
	const rtl_function *f = rtl_binary_find_function(bin, addr + 2);
	CHECK(f && f->addr == addr);
	CHECK_STR(f ? f->name : NULL, "probe_function");
	CHECK(f && (f->sources & RTL_SRC_SYMTAB) && (f->sources & RTL_SRC_EH_FRAME));
	unsigned char buf[16];
	CHECK_EQ(rtl_binary_read(bin, addr, buf, sizeof(buf)), 0);
	CHECK(!memcmp(buf, (void *)(uintptr_t)probe_function, sizeof(buf)));
	CHECK_EQ(rtl_binary_read(bin, UINT64_MAX - 4, buf, 8), -RTL_ERR_BAD_ELF);
	CHECK(rtl_binary_find_function(bin, 0) == NULL);

	/* Sorted, unique, non-empty. */
	for (size_t i = 0; i < rtl_binary_function_count(bin); i++) {
		const rtl_function *g = rtl_binary_function(bin, i);
		CHECK(g->size > 0 && g->name && g->name[0]);
		if (i)
			CHECK(rtl_binary_function(bin, i - 1)->addr < g->addr);
		CHECK(rtl_binary_find_function(bin, g->addr) == g);
	}
	CHECK(rtl_binary_function(bin, rtl_binary_function_count(bin)) == NULL);

	/* Code pointers land inside a function, never on its entry. */
	for (size_t i = 0; i < rtl_binary_code_pointer_count(bin); i++) {
		const rtl_code_pointer *c = rtl_binary_code_pointer(bin, i);
		const rtl_function *g = rtl_binary_find_function(bin, c->target);
		CHECK(g && g->addr < c->target);
		if (i)
			CHECK(rtl_binary_code_pointer(bin, i - 1)->target <= c->target);
	}

	rtl_binary_check_functions(bin);
	f = rtl_binary_find_function(bin, addr);
	CHECK(f && f->instrumentable);
	const rtl_function *main_f = rtl_binary_find_function(bin, (uint64_t)(uintptr_t)main - bias);
	CHECK_STR(main_f ? main_f->name : NULL, "main");

	/* DWARF: the test is built with -g. */
	const char *file = NULL;
	int line = 0;
	CHECK_EQ(rtl_binary_source_line(bin, addr, &file, &line), 0);
	CHECK(file && strstr(file, "test_binary_open.c"));
	CHECK_EQ(line, addr2line(addr));
	rtl_binary_close(bin);
}

static void test_bad_input(const char *dir)
{
	char path[4200];
	size_t len;
	unsigned char *img = read_self(&len);

	snprintf(path, sizeof(path), "%s/missing", dir);
	CHECK_EQ(open_err(path), -ENOENT);
	CHECK_EQ(open_err(dir), -EISDIR);
	snprintf(path, sizeof(path), "%s/text", dir);
	write_file(path, "#!/bin/sh\necho hi\n", 18);
	CHECK_EQ(open_err(path), -RTL_ERR_NOT_ELF);
	write_file(path, "", 0);
	CHECK_EQ(open_err(path), -RTL_ERR_NOT_ELF);

	/* Other machines: a copy of this ELF with its class or machine changed. */
	unsigned char hdr[64];
	memcpy(hdr, img, 64);
	snprintf(path, sizeof(path), "%s/other", dir);
	img[EI_CLASS] = ELFCLASS32;
	write_file(path, img, len);
	CHECK_EQ(open_err(path), -RTL_ERR_WRONG_ARCH);
	img[EI_CLASS] = ELFCLASS64;
	img[EI_DATA] = ELFDATA2MSB;
	write_file(path, img, len);
	CHECK_EQ(open_err(path), -RTL_ERR_WRONG_ARCH);
	img[EI_DATA] = ELFDATA2LSB;
	((ElfW(Ehdr) *)img)->e_machine = EM_RISCV;
	write_file(path, img, len);
	CHECK_EQ(open_err(path), -RTL_ERR_WRONG_ARCH);
	((ElfW(Ehdr) *)img)->e_machine = EM_AARCH64;
	write_file(path, img, 200);
	CHECK_EQ(open_err(path), -RTL_ERR_WRONG_ARCH);
	memcpy(img, hdr, 64);

	/* Cut copies: every length up to the whole file minus one byte that
	 * cuts into what the headers describe. */
	static const size_t cuts[] = { 4, 5, 16, 63, 64, 100, 1000, 4096 };
	snprintf(path, sizeof(path), "%s/cut", dir);
	for (size_t i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++) {
		write_file(path, img, cuts[i]);
		CHECK_EQ(open_err(path), -RTL_ERR_TRUNCATED);
	}
	write_file(path, img, len / 2);
	CHECK_EQ(open_err(path), -RTL_ERR_TRUNCATED);
	write_file(path, img, len - 1);
	CHECK_EQ(open_err(path), -RTL_ERR_TRUNCATED);  /* section headers come last */
	write_file(path, img, 3);
	CHECK_EQ(open_err(path), -RTL_ERR_NOT_ELF);
	free(img);
}

int main(int argc, char **argv)
{
	char dir[] = "/tmp/rtl-binary-XXXXXX";
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0 || !mkdtemp(dir))
		return 1;
	self[n] = 0;
	test_self();
	test_bad_input(dir);
	char cmd[64];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd))
		return 1;
	return CHECK_DONE();
}
