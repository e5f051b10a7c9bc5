/* Developer tool: relocates one function of a binary as the engine would
 * (at a made-up address) and writes the bytes for objdump, to inspect what
 * the relocator emits. usage: reloc_dump BINARY FUNCTION DEST OUT.bin */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <reticle/binary.h>
#include <reticle/error.h>
#include "isa/x86_64/relocate.h"

static rtl_binary *bin;
static uint64_t next_counter = 0x10000000;

static int rd(void *ctx, const uint64_t addr, void *buf, size_t len) { return rtl_binary_read(bin, addr, buf, len); }
static uint64_t same(void *ctx, uint64_t addr) { return addr; }
static uint64_t ctr(void *ctx) { return next_counter += 8; }
static bool ro(void *ctx, uint64_t addr, size_t len) { return rtl_binary_is_readonly(bin, addr, len); }

int main(int argc, char **argv)
{
	if (argc != 5) {
		fprintf(stderr, "usage: reloc_dump BINARY FUNCTION DEST OUT.bin\n");
		return 2;
	}
	int err = rtl_binary_open(argv[1], &bin);
	if (err) {
		fprintf(stderr, "%s: %s\n", argv[1], rtl_strerror(err));
		return 1;
	}
	const rtl_function *f = NULL;
	for (size_t i = 0; i < rtl_binary_function_count(bin); i++)
		if (!strcmp(rtl_binary_function(bin, i)->name, argv[2]))
			f = rtl_binary_function(bin, i);
	if (!f) {
		fprintf(stderr, "no function %s\n", argv[2]);
		return 1;
	}
	uint8_t *code = malloc(f->size);
	rtl_binary_read(bin, f->addr, code, f->size);
	size_t n = 0;
	uint64_t *interior = malloc(sizeof(uint64_t) * (rtl_binary_code_pointer_count(bin) + 1));
	for (size_t i = 0; i < rtl_binary_code_pointer_count(bin); i++) {
		const rtl_code_pointer *cp = rtl_binary_code_pointer(bin, i);
		if (cp->target > f->addr && cp->target < f->addr + f->size)
			interior[n++] = cp->target;
	}
	struct x86_reloc_env env = { .addr = f->addr, .size = f->size, .code = code, .interior = interior,
				     .ninterior = n, .read = rd, .redirect = same, .new_counter = ctr, .is_readonly = ro,
				     .entry_counter = 1, .block_counters = 1 };
	struct x86_reloc r;
	const char *reason;
	uint64_t dest = strtoull(argv[3], NULL, 0);
	if ((err = x86_relocate(&env, dest, &r, &reason))) {
		fprintf(stderr, "relocation failed: %s\n", reason ? reason : rtl_strerror(err));
		return 1;
	}
	FILE *o = fopen(argv[4], "wb");
	fwrite(r.w.buf, 1, r.w.len, o);
	fclose(o);
	printf("%s at %#llx size %llu: %zu bytes, %zu blocks, %zu jump tables, %zu interior pointers\n",
	       f->name, (unsigned long long)f->addr, (unsigned long long)f->size, r.w.len, r.nblocks,
	       r.njump_tables, n);
	return 0;
}
