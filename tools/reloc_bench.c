/* Developer tool: relocation speed without a target. Decodes and relocates
 * every function of a binary as the engine would (at a made-up address) and
 * prints the time a function, decoding and relocating apart.
 * usage: reloc_bench BINARY [REPEAT] */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <reticle/binary.h>
#include <reticle/error.h>
#include "isa/x86_64/relocate.h"

static rtl_binary *bin;
static uint64_t next_counter;

static int rd(void *ctx, const uint64_t addr, void *buf, size_t len) { return rtl_binary_read(bin, addr, buf, len); }
static uint64_t same(void *ctx, uint64_t addr) { return addr; }
static uint64_t base;
static uint64_t ctr(void *ctx) { return base + (next_counter += 8) % (1u << 24); }
static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: reloc_bench BINARY [REPEAT]\n");
		return 2;
	}
	int repeat = argc > 2 ? atoi(argv[2]) : 1;
	next_counter = 0;
	int err = rtl_binary_open(argv[1], &bin);
	if (err) {
		fprintf(stderr, "%s: %s\n", argv[1], rtl_strerror(err));
		return 1;
	}
	base = rtl_binary_function(bin, 0)->addr + 0x30000000;
	double tdec = 0, trel = 0;
	size_t nfun = 0, ninsn = 0, nfail = 0, bytes = 0, nsites = 0, nkeep = 0, nblocks = 0;
	for (int rep = 0; rep < repeat; rep++)
		for (size_t i = 0; i < rtl_binary_function_count(bin); i++) {
			const rtl_function *f = rtl_binary_function(bin, i);
			if (!f->size || (f->sources & RTL_SRC_PLT))
				continue;
			uint8_t *code = malloc(f->size);
			if (rtl_binary_read(bin, f->addr, code, f->size)) {
				free(code);
				continue;
			}
			double t0 = now();
			struct x86_insn *insns = NULL;
			size_t n = 0;
			x86_decode_function(code, f->size, f->addr, &insns, &n);
			double t1 = now();
			struct x86_reloc_env env = { .addr = f->addr, .size = f->size, .code = code,
						     .read = rd, .redirect = same, .new_counter = ctr,
						     .entry_counter = 1, .block_counters = 1,
						     .insns = insns, .ninsns = n };
			struct x86_reloc r;
			const char *reason;
			if (x86_relocate(&env, f->addr + 0x20000000, &r, &reason)) {
				nfail++;
			} else {
				bytes += r.w.len;
				nblocks += r.nblocks;
				nsites += r.nsites;
				for (size_t k = 0; k < r.nsites; k++)
					nkeep += r.sites[k].keep_flags;
				x86_reloc_free(&r);
			}
			double t2 = now();
			tdec += t1 - t0;
			trel += t2 - t1;
			nfun++;
			ninsn += n;
			free(insns);
			free(code);
		}
	printf("%zu functions (%zu refused), %zu instructions, %zu bytes of copies\n", nfun, nfail, ninsn, bytes);
	printf("%zu blocks, %zu counter increments, %zu of them keep the flags (%.1f%%)\n", nblocks, nsites,
	       nkeep, 100.0 * nkeep / (nsites ? nsites : 1));
	printf("decode %.1f us a function (%.0f ns an instruction), relocate %.1f us a function (%.0f ns an instruction)\n",
	       1e6 * tdec / nfun, 1e9 * tdec / ninsn, 1e6 * trel / nfun, 1e9 * trel / ninsn);
	printf("total %.2f s per 10,000 functions\n", 1e4 * (tdec + trel) / nfun);
	return 0;
}
