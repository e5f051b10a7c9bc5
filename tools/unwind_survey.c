/* Developer tool: for every function of a binary that the relocator accepts,
 * relocates it at a made-up address (as reloc_dump does) and builds its
 * unwind blob with unw_build; counts successes and refusals by reason, and
 * checks each blob reads back (its FDE covers the copy, it has an LSDA when
 * the original has one). For every call instruction of a function with an
 * LSDA, the call-site entry that libgcc's personality would pick for the
 * return address (handler, action) must be the same in the copy as in the
 * original: the LSDAs are decoded here by a separate minimal reader.
 * usage: unwind_survey BINARY */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <reticle/binary.h>
#include <reticle/error.h>
#include "isa/x86_64/insn.h"
#include "isa/x86_64/relocate.h"
#include "unwind/unwind.h"

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

/* ---- a minimal LSDA reader, independent of src/unwind/build.c ---- */

static uint64_t uleb(const uint8_t **p)
{
	uint64_t v = 0;
	unsigned sh = 0;
	uint8_t b;
	do {
		b = *(*p)++;
		v |= (uint64_t)(b & 0x7f) << sh;
		sh += 7;
	} while (b & 0x80);
	return v;
}

/* Pointer in ENC at *P, which lives at address AT; -1 for an encoding this
 * reader does not know. */
static uint64_t ptr(const uint8_t **p, unsigned enc, uint64_t at)
{
	uint64_t v = 0;
	switch (enc & 0x0f) {
	case 0x01: v = uleb(p); break;
	case 0x03: v = (uint32_t)((*p)[0] | (*p)[1] << 8 | (*p)[2] << 16 | (uint32_t)(*p)[3] << 24); *p += 4; break;
	case 0x0b: v = (uint64_t)(int64_t)(int32_t)((*p)[0] | (*p)[1] << 8 | (*p)[2] << 16 | (uint32_t)(*p)[3] << 24); *p += 4; break;
	case 0x00: case 0x04: case 0x0c: memcpy(&v, *p, 8); *p += 8; break;
	default: return (uint64_t)-1;
	}
	if ((enc & 0x70) == 0x10 && v)
		v += at;
	return v;
}

struct hit {
	int found;
	uint64_t lp, action;   /* landing pad address or 0 */
};

/* What __gxx_personality_v0 finds for IP in the LSDA at DATA (address AT)
 * of a region starting at START. */
static struct hit lookup(const uint8_t *data, uint64_t at, uint64_t start, uint64_t ip)
{
	struct hit h = { 0, 0, 0 };
	const uint8_t *p = data;
	unsigned lpenc = *p++;
	uint64_t lpstart = lpenc == 0xff ? start : ptr(&p, lpenc, at + (uint64_t)(p - data));
	if (*p++ != 0xff)
		uleb(&p);
	unsigned csenc = *p++;
	uint64_t cslen = uleb(&p);
	const uint8_t *end = p + cslen;
	while (p < end) {
		uint64_t s = ptr(&p, csenc, 0), l = ptr(&p, csenc, 0), lp = ptr(&p, csenc, 0);
		uint64_t a = uleb(&p);
		if (ip < start + s)
			break;
		if (ip < start + s + l) {
			h.found = 1;
			h.lp = lp ? lpstart + lp : 0;
			h.action = a;
			break;
		}
	}
	return h;
}

static uint64_t exact(const struct x86_reloc *r, uint64_t a)
{
	for (size_t k = 0; k < r->nmap; k++)
		if (r->map_from[k] == a)
			return r->map_to[k];
	return 0;
}

static size_t sites, site_errors, partial;

/* Every call of the function: same personality outcome before and after. */
static void check_call_sites(const rtl_function *f, const uint8_t *code, const struct x86_reloc *r,
			     const uint8_t *olsda, uint64_t olsda_at, uint64_t ostart,
			     const uint8_t *nlsda, uint64_t nlsda_at)
{
	for (size_t i = 0; i < r->nmap; i++) {
		struct x86_insn in;
		if (x86_decode(code + (r->map_from[i] - f->addr), f->addr + f->size - r->map_from[i],
			       r->map_from[i], &in) || (in.kind != X86_CALL && in.kind != X86_ICALL))
			continue;
		uint64_t ra = r->map_from[i] + in.len, ra2 = 0, pc = r->map_to[i];
		for (int k = 0; k < 12 && pc < r->w.base + r->w.len; k++) {
			struct x86_insn out;
			if (x86_decode(r->w.buf + (pc - r->w.base), r->w.base + r->w.len - pc, pc, &out))
				break;
			pc += out.len;
			if (out.kind == X86_CALL || out.kind == X86_ICALL) {
				ra2 = pc;
				break;
			}
		}
		struct hit a = lookup(olsda, olsda_at, ostart, ra - 1);
		struct hit b = lookup(nlsda, nlsda_at, r->w.base, ra2 - 1);
		sites++;
		if (!ra2 || a.found != b.found || a.action != b.action || !a.lp != !b.lp ||
		    (a.lp && exact(r, a.lp) != b.lp)) {
			site_errors++;
			fprintf(stderr, "%s: call at %#llx: original (%d, %#llx, %llu), copy (%d, %#llx, %llu)\n",
				f->name, (unsigned long long)r->map_from[i], a.found, (unsigned long long)a.lp,
				(unsigned long long)a.action, b.found, (unsigned long long)b.lp,
				(unsigned long long)b.action);
		}
	}
}

/* Reads the blob back as its own .eh_frame. */
static int blob_ok(const uint8_t *blob, size_t len, uint64_t at, const struct x86_reloc *r, int has_lsda)
{
	struct unw_image own = { .eh_frame = { at, blob, len } };
	struct unw_fde fde;
	if (unw_find_fde(&own, r->w.base, &fde) || fde.pc_end > r->w.base + r->w.len)
		return 0;
	partial += fde.pc_end != r->w.base + r->w.len;   /* the FDE ends inside the function */
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
				       r.w.rows, r.w.nrows };
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
			} else if (has_lsda) {
				struct unw_image own = { .eh_frame = { at, blob, len } };
				struct unw_fde nf;
				const struct unw_region *x = &img.except_table;
				if (fde.lsda >= x->addr && fde.lsda < x->addr + x->size &&
				    unw_find_fde(&own, r.w.base, &nf) == 0)
					check_call_sites(f, code, &r, x->data + (fde.lsda - x->addr), fde.lsda,
							 fde.pc_begin, blob + (nf.lsda - at), nf.lsda);
			}
			free(blob);
		}
		dest = at + ((len + 15) & ~15ul);
		x86_reloc_free(&r);
		free(code);
	}
	printf("%s: %zu functions, %zu relocated, %zu without FDE, %zu blobs (%zu with LSDA, %llu bytes), %zu unreadable\n",
	       argv[1], nfn, moved, nofde, built, lsdas, (unsigned long long)bytes, bad);
	printf("  call sites checked %zu, mismatched %zu; FDEs ending inside their function %zu\n",
	       sites, site_errors, partial);
	for (size_t i = 0; i < 64 && reasons[i].reason; i++)
		printf("  refused %zu: %s\n", reasons[i].n, reasons[i].reason);
	unw_image_free(&img);
	rtl_binary_close(bin);
	return bad || site_errors ? 1 : 0;
}
