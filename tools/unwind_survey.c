/* Developer tool: for every function of a binary that the relocator accepts,
 * relocates it at a made-up address (as reloc_dump does) and builds its
 * unwind blob with unw_build; counts successes and refusals by reason, and
 * checks each blob reads back (its FDE covers the copy, it has an LSDA when
 * the original has one). usage: unwind_survey BINARY */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <reticle/binary.h>
#include <reticle/error.h>
#include "isa/x86_64/relocate.h"
#include "patch/unwind.h"

static rtl_binary *bin;
static uint64_t next_counter = 0x30000000;

static int rd(void *ctx, const uint64_t addr, void *buf, size_t len) { return rtl_binary_read(bin, addr, buf, len); }
static uint64_t same(void *ctx, uint64_t addr) { return addr; }
static uint64_t ctr(void *ctx) { return next_counter += 8; }

struct tally {
	const char *reason;
	size_t n;
};
static struct tally reasons[64];

static void count(const char *why)
{
	for (size_t i = 0; i < 64; i++)
		if (!reasons[i].reason || !strcmp(reasons[i].reason, why)) {
			reasons[i].reason = why;
			reasons[i].n++;
			return;
		}
}

/* Reads the blob back as its own .eh_frame. */
static int blob_ok(const uint8_t *blob, size_t len, uint64_t at, const struct x86_reloc *r, int has_lsda)
{
	struct unw_image own = { .eh_frame = { at, blob, len } };
	struct unw_fde fde;
	if (unw_find_fde(&own, r->w.base, &fde) || fde.pc_end != r->w.base + r->w.len)
		return 0;
	return !fde.lsda == !has_lsda;
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: unwind_survey BINARY\n");
		return 2;
	}
	int err = rtl_binary_open(argv[1], &bin);
	struct unw_image img;
	if (!err)
		err = unw_image_load(argv[1], 0, &img);
	if (err) {
		fprintf(stderr, "%s: %s\n", argv[1], rtl_strerror(err));
		return 1;
	}
	size_t nfn = rtl_binary_function_count(bin), moved = 0, built = 0, lsdas = 0, nofde = 0, bad = 0;
	uint64_t dest = 0x40000000, bytes = 0;
	for (size_t i = 0; i < nfn; i++) {
		const rtl_function *f = rtl_binary_function(bin, i);
		uint8_t *code = malloc(f->size ? f->size : 1);
		if (!code || rtl_binary_read(bin, f->addr, code, f->size)) {
			free(code);
			continue;
		}
		struct x86_reloc_env env = { .addr = f->addr, .size = f->size, .code = code, .read = rd,
					     .redirect = same, .new_counter = ctr, .entry_counter = 1,
					     .block_counters = 1 };
		struct x86_reloc r;
		const char *why;
		if (x86_relocate(&env, dest, &r, &why)) {
			free(code);
			continue;
		}
		moved++;
		struct unw_map map = { r.map_from, r.map_to, r.nmap, f->addr, f->size, r.w.base, r.w.len,
				       r.w.buf };
		uint64_t at = dest + ((r.w.len + 15) & ~15ul);
		uint8_t *blob;
		size_t len;
		struct unw_fde fde;
		err = unw_build(&img, &map, at, &blob, &len, &why);
		if (err == -ENOENT) {
			nofde++;
		} else if (err) {
			count(why);
		} else {
			built++;
			bytes += len;
			int has_lsda = unw_find_fde(&img, f->addr, &fde) == 0 && fde.lsda;
			lsdas += has_lsda;
			if (!blob_ok(blob, len, at, &r, has_lsda)) {
				bad++;
				fprintf(stderr, "%s: blob does not read back\n", f->name);
			}
			free(blob);
		}
		dest = at + ((len + 15) & ~15ul);
		x86_reloc_free(&r);
		free(code);
	}
	printf("%s: %zu functions, %zu relocated, %zu without FDE, %zu blobs (%zu with LSDA, %llu bytes), %zu unreadable\n",
	       argv[1], nfn, moved, nofde, built, lsdas, (unsigned long long)bytes, bad);
	for (size_t i = 0; i < 64 && reasons[i].reason; i++)
		printf("  refused %zu: %s\n", reasons[i].n, reasons[i].reason);
	unw_image_free(&img);
	rtl_binary_close(bin);
	return bad ? 1 : 0;
}
