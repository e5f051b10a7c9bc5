/* Code pointers into the middle of functions: the words the dynamic loader
 * fills with base + addend (R_X86_64_RELATIVE, R_X86_64_64, DT_RELR) in a
 * PIE or shared object, and, in a non-PIE executable where no relocation
 * exists, the aligned data words whose value lands inside a function.
 * These are computed-goto tables (lua's luaV_execute, python's eval loop)
 * and absolute switch tables: the relocator must keep their targets. */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <reticle/error.h>
#include "binary_internal.h"
#include "util/array.h"

#ifndef SHT_RELR
#define SHT_RELR 19
#endif

/* Words whose value lies in the span of the functions, before the check
 * that the value is strictly inside one: a range test per word while
 * scanning, then one merge with the functions once sorted by target (a
 * lookup per word missed the cache for most of cc1's 250,000). */
struct cp_vec {
	rtl_code_pointer *v;
	size_t n, cap;
	uint64_t lo, span;   /* kept: lo <= target < lo + span */
	uint64_t last;       /* where the last word kept is */
	bool unsorted;       /* a word was kept after one at a higher address */
};

static int cp_add(struct cp_vec *cv, uint64_t where, uint64_t target)
{
	if (target - cv->lo >= cv->span)
		return 0;
	if (rtl_grow(&cv->v, &cv->cap, cv->n + 1, sizeof(*cv->v)))
		return -ENOMEM;
	cv->unsorted |= cv->n > 0 && where < cv->last;
	cv->last = where;
	cv->v[cv->n++] = (rtl_code_pointer){ where, target };
	return 0;
}

static int scan_rela(rtl_binary *bin, Elf_Scn *scn, const GElf_Shdr *sh, struct cp_vec *cv)
{
	Elf_Data *d = elf_getdata(scn, NULL), *symd = NULL;
	Elf_Scn *syms = sh->sh_link ? elf_getscn(bin->elf, sh->sh_link) : NULL;
	if (!d || !sh->sh_entsize)
		return 0;
	if (syms)
		symd = elf_getdata(syms, NULL);
	for (size_t i = 0; i < sh->sh_size / sh->sh_entsize; i++) {
		GElf_Rela r;
		GElf_Sym sym;
		uint64_t target;
		if (!gelf_getrela(d, (int)i, &r))
			break;
		unsigned type = GELF_R_TYPE(r.r_info), si = GELF_R_SYM(r.r_info);
		if (type == R_X86_64_RELATIVE)
			target = (uint64_t)r.r_addend;
		else if (type != R_X86_64_64)
			continue;
		else if (si == 0)
			target = (uint64_t)r.r_addend;
		else if (symd && gelf_getsym(symd, (int)si, &sym) && sym.st_shndx != SHN_UNDEF)
			target = sym.st_value + (uint64_t)r.r_addend;
		else
			continue;
		int err = cp_add(cv, r.r_offset, target);
		if (err)
			return err;
	}
	return 0;
}

/* DT_RELR: an address, then bitmaps of the following words; each word
 * holds its own addend, read from the file image. */
static int relr_word(rtl_binary *bin, struct cp_vec *cv, uint64_t where)
{
	const unsigned char *w = rtl_binary_ptr(bin, where, 8);
	uint64_t word;
	if (!w)
		return 0;
	memcpy(&word, w, 8);
	return cp_add(cv, where, word);
}

static int scan_relr(rtl_binary *bin, const GElf_Shdr *sh, struct cp_vec *cv)
{
	const unsigned char *p = bin->image + sh->sh_offset;
	uint64_t base = 0;
	int err = 0;
	for (uint64_t off = 0; off + 8 <= sh->sh_size && !err; off += 8) {
		uint64_t e;
		memcpy(&e, p + off, 8);
		if ((e & 1) == 0) {
			err = relr_word(bin, cv, e);
			base = e + 8;
			continue;
		}
		for (unsigned bit = 0; bit < 63 && !err; bit++)
			if ((e >> (bit + 1)) & 1)
				err = relr_word(bin, cv, base + 8 * (uint64_t)bit);
		base += 63 * 8;
	}
	return err;
}

/* Non-PIE executables have no relocations for their tables: look at the
 * aligned words of every allocated, non-executable data section (1.3
 * million in cc1), a chunk at a time with room for all of its words. Most
 * runs of 4 words hold no value near code (3 in 4 in cc1, 9 in 10 in
 * python3.11) and cost a few operations; in the others, keeping a word is
 * a store and an add, not a branch. */
static int scan_data(rtl_binary *bin, const GElf_Shdr *sh, struct cp_vec *cv)
{
	enum { CHUNK = 4096 };
	uint64_t first = (sh->sh_addr + 7) & ~(uint64_t)7, end = sh->sh_addr + sh->sh_size;
	if (first < sh->sh_addr || end < first || end - first < 8)
		return 0;
	const unsigned char *p = bin->image + sh->sh_offset + (first - sh->sh_addr);
	uint64_t nwords = (end - first) / 8, lo = cv->lo, span = cv->span;
	for (uint64_t done = 0; done < nwords; done += CHUNK) {
		size_t m = nwords - done < CHUNK ? (size_t)(nwords - done) : CHUNK, k = cv->n, i = 0;
		if (rtl_grow(&cv->v, &cv->cap, k + m, sizeof(*cv->v)))
			return -ENOMEM;
		const unsigned char *q = p + 8 * done;
		uint64_t where = first + 8 * done, w0, w1, w2, w3;
		for (; i + 4 <= m; i += 4) {
			memcpy(&w0, q + 8 * i, 8);
			memcpy(&w1, q + 8 * i + 8, 8);
			memcpy(&w2, q + 8 * i + 16, 8);
			memcpy(&w3, q + 8 * i + 24, 8);
			if (!((w0 - lo < span) | (w1 - lo < span) | (w2 - lo < span) | (w3 - lo < span)))
				continue;
			cv->v[k] = (rtl_code_pointer){ where + 8 * i, w0 };
			k += w0 - lo < span;
			cv->v[k] = (rtl_code_pointer){ where + 8 * i + 8, w1 };
			k += w1 - lo < span;
			cv->v[k] = (rtl_code_pointer){ where + 8 * i + 16, w2 };
			k += w2 - lo < span;
			cv->v[k] = (rtl_code_pointer){ where + 8 * i + 24, w3 };
			k += w3 - lo < span;
		}
		for (; i < m; i++) {
			memcpy(&w0, q + 8 * i, 8);
			cv->v[k] = (rtl_code_pointer){ where + 8 * i, w0 };
			k += w0 - lo < span;
		}
		if (k > cv->n) {   /* a section's words come in order */
			cv->unsorted |= cv->n > 0 && cv->v[cv->n].where < cv->last;
			cv->last = cv->v[k - 1].where;
		}
		cv->n = k;
	}
	return 0;
}

/* Keeps the words (sorted by target) whose target is strictly inside a
 * function, as rtl_binary_find_function sees it, other than a PLT stub:
 * .got.plt's lazy pointers into stubs (stub + 6) are of no interest, as
 * stubs are never relocated. */
static size_t keep_interior(const rtl_binary *bin, rtl_code_pointer *v, size_t n)
{
	size_t out = 0, next = 0;   /* next: the first function past the target */
	const rtl_function *last = NULL;   /* funcs[next - 1] when no earlier one reaches further */
	for (size_t i = 0; i < n; i++) {
		uint64_t t = v[i].target;
		if (next < bin->nfuncs && bin->funcs[next].addr <= t) {
			while (next < bin->nfuncs && bin->funcs[next].addr <= t)
				next++;
			last = &bin->funcs[next - 1];
			if (bin->cover[next - 1] != last->addr + last->size)
				last = NULL;   /* nested, or the end wraps: the full walk */
		}
		const rtl_function *f = last ? (t - last->addr < last->size ? last : NULL) :
					rtl_elf_function_before(bin, next, t);
		v[out] = v[i];   /* kept or not, without a branch */
		out += f && f->addr != t && !(f->sources & RTL_SRC_PLT);
	}
	return out;
}

static int cp_cmp(const void *a, const void *b)
{
	const rtl_code_pointer *x = a, *y = b;
	if (x->target != y->target)
		return x->target < y->target ? -1 : 1;
	return x->where < y->where ? -1 : x->where > y->where;
}

static int scans_data(const rtl_binary *bin, const GElf_Shdr *sh)
{
	return bin->ehdr.e_type == ET_EXEC && sh->sh_type == SHT_PROGBITS && (sh->sh_flags & SHF_ALLOC) &&
	       !(sh->sh_flags & SHF_EXECINSTR);
}

size_t rtl_elf_code_pointer_bound(rtl_binary *bin)
{
	Elf_Scn *scn = NULL;
	size_t n = 0;
	while ((scn = elf_nextscn(bin->elf, scn))) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh))
			continue;
		if (sh.sh_type == SHT_RELA && (sh.sh_flags & SHF_ALLOC) && sh.sh_entsize)
			n += sh.sh_size / sh.sh_entsize;
		else if (scans_data(bin, &sh))
			n += sh.sh_size / 8;
	}
	return n < bin->image_size / 8 ? n : bin->image_size / 8;
}

int rtl_elf_collect_code_pointers(rtl_binary *bin, struct rtl_scratch *room, struct rtl_scratch *s)
{
	struct cp_vec cv = { .v = room->p, .cap = room->size / sizeof(rtl_code_pointer) };
	Elf_Scn *scn = NULL;
	int err = 0;

	*room = (struct rtl_scratch){ 0 };
	if (!bin->nfuncs) {
		free(cv.v);
		return 0;
	}
	/* most data words are nowhere near code: only those strictly after
	 * the first entry and before the furthest end can be kept */
	cv.lo = bin->funcs[0].addr + 1;
	cv.span = bin->cover[bin->nfuncs - 1] > cv.lo ? bin->cover[bin->nfuncs - 1] - cv.lo : 0;
	while (!err && (scn = elf_nextscn(bin->elf, scn))) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh))
			continue;
		if (sh.sh_type == SHT_RELA && (sh.sh_flags & SHF_ALLOC))
			err = scan_rela(bin, scn, &sh, &cv);
		else if (sh.sh_type == SHT_RELR)
			err = scan_relr(bin, &sh, &cv);
		else if (scans_data(bin, &sh))
			err = scan_data(bin, &sh, &cv);
	}
	if (err) {
		free(cv.v);
		return err;
	}
	/* by target, then by where (a data scan finds them by where already) */
	rtl_code_pointer *tmp = rtl_scratch_get(s, (cv.n ? cv.n : 1) * sizeof(*cv.v));
	if (cv.n > 1 && (!tmp ||
			 (cv.unsorted && rtl_radix_sort_u64_tmp(cv.v, cv.n, sizeof(*cv.v),
								offsetof(rtl_code_pointer, where), tmp)) ||
			 rtl_radix_sort_u64_within(cv.v, cv.n, sizeof(*cv.v), offsetof(rtl_code_pointer, target),
						   tmp, cv.lo, cv.lo + cv.span - 1)))
		qsort(cv.v, cv.n, sizeof(*cv.v), cp_cmp);
	bin->ncptrs = keep_interior(bin, cv.v, cv.n);
	/* the room for words not kept goes back */
	if (!bin->ncptrs) {
		free(cv.v);
		return 0;
	}
	rtl_code_pointer *v = realloc(cv.v, bin->ncptrs * sizeof(*v));
	bin->cptrs = v ? v : cv.v;
	return 0;
}

size_t rtl_binary_code_pointer_count(const rtl_binary *bin) { return bin->ncptrs; }

const rtl_code_pointer *rtl_binary_code_pointer(const rtl_binary *bin, size_t i)
{
	return i < bin->ncptrs ? &bin->cptrs[i] : NULL;
}
