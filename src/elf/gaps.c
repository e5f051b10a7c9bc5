/* Code that no symbol, FDE or ELF entry names: in stripped binaries, the
 * crt start-up helpers (deregister_tm_clones and friends have no unwind
 * info) and hand-written assembly without CFI. A gap between known
 * functions that holds more than padding becomes a function; it is split
 * where a `ret` is followed by padding up to a 16-byte boundary, the way
 * compilers lay out consecutive functions, and, when there is a lot of such
 * code, at the aligned targets of direct calls (split_gaps below). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <reticle/error.h>
#include "binary_internal.h"
#include "util/array.h"

/* Length of a padding instruction at P (nop forms that assemblers emit,
 * int3), or 0. */
static size_t pad_len(const unsigned char *p, size_t n)
{
	size_t k = 0;
	if (n && (p[0] == 0x90 || p[0] == 0xcc))
		return 1;
	while (k < n && k < 14 && (p[k] == 0x66 || p[k] == 0x2e))
		k++;
	if (k && k < n && p[k] == 0x90)
		return k + 1;
	if (k + 3 > n || p[k] != 0x0f || p[k + 1] != 0x1f)
		return 0;
	unsigned m = p[k + 2], mod = m >> 6, rm = m & 7;
	size_t len = k + 3;
	if (mod != 3 && rm == 4) {
		if (len >= n)
			return 0;
		if (mod == 0 && (p[len] & 7) == 5)
			len += 4;
		len++;
	}
	if (mod == 1)
		len += 1;
	else if (mod == 2 || (mod == 0 && rm == 5))
		len += 4;
	return len <= n ? len : 0;
}

size_t rtl_elf_skip_padding(const unsigned char *p, size_t n, int zeros)
{
	size_t i = 0, l;
	while (i < n) {
		if (zeros && p[i] == 0)
			l = 1;
		else if (!(l = pad_len(p + i, n - i)))
			break;
		i += l;
	}
	return i;
}

/* The end of the code that starts at offset S: a ret followed by padding
 * that reaches a 16-byte boundary, or N. */
static size_t code_end(const unsigned char *p, size_t n, size_t s, uint64_t base)
{
	for (size_t i = s + 1; i < n; i++) {
		if (p[i - 1] != 0xc3)
			continue;
		size_t j = i + rtl_elf_skip_padding(p + i, n - i, 0);
		if (j > i && j < n && ((base + j) & 15) == 0)
			return j;
	}
	return n;
}

/* Sweeps [LO, HI); P has AVAIL bytes (to the section end), so that a
 * padding instruction may run past HI into the next function, as glibc's
 * signal restorer does (its FDE starts inside the nop before it). Code
 * right after a known function's end, with no padding and off a 16-byte
 * boundary, is that function's tail (a second FDE of the same function,
 * as in glibc's clone), not a new function. */
static int sweep(const unsigned char *p, size_t avail, uint64_t lo, uint64_t hi, struct rtl_cands *c)
{
	size_t n = (size_t)(hi - lo), i = rtl_elf_skip_padding(p, avail, 1);
	if (i == 0 && (lo & 15))
		return 0;
	while (i < n) {
		size_t end = code_end(p, n, i, lo);
		int err = rtl_cands_push(c, lo + i, end - i, NULL, RTL_SRC_GAP, RANK_NONE);
		if (err)
			return err;
		i = end + rtl_elf_skip_padding(p + end, avail - end, 1);
	}
	return 0;
}

/* Each gap is a cache miss (cc1: 37,000 of them, nearly all padding): the
 * gap a few functions ahead is prefetched while this one is read. Where
 * it starts in P, or NULL. (The prefetch itself stays in the loop: GCC
 * drops calls to a function whose only effect is one.) */
static const unsigned char *gap_ahead(const rtl_binary *bin, const unsigned char *p,
				      const GElf_Shdr *sh, size_t i)
{
	enum { AHEAD = 8 };
	if (i + AHEAD >= bin->nfuncs)
		return NULL;
	const rtl_function *f = &bin->funcs[i + AHEAD];
	uint64_t gap = f->addr + f->size;
	return gap >= sh->sh_addr && gap - sh->sh_addr < sh->sh_size ? p + (gap - sh->sh_addr) : NULL;
}

static int sweep_section(rtl_binary *bin, const GElf_Shdr *sh, struct rtl_cands *c)
{
	const unsigned char *p = rtl_binary_ptr(bin, sh->sh_addr, sh->sh_size);
	uint64_t cur = sh->sh_addr, end = sh->sh_addr + sh->sh_size;
	if (!p)
		return 0;
	/* from the first function in the section, past what those before it
	 * cover (cover[i]: the furthest end among 0..i; no size wraps) */
	size_t i = 0, hi = bin->nfuncs;
	while (i < hi) {
		size_t mid = i + (hi - i) / 2;
		if (bin->funcs[mid].addr < cur)
			i = mid + 1;
		else
			hi = mid;
	}
	if (i > 0 && bin->cover[i - 1] > cur)
		cur = bin->cover[i - 1];
	for (; i <= bin->nfuncs && cur < end; i++) {
		const unsigned char *ahead = gap_ahead(bin, p, sh, i);
		if (ahead)
			__builtin_prefetch(ahead);
		uint64_t next = i < bin->nfuncs ? bin->funcs[i].addr : end;
		if (next > end)
			next = end;
		if (next > cur) {
			int err = sweep(p + (cur - sh->sh_addr), (size_t)(end - cur), cur, next, c);
			if (err)
				return err;
		}
		if (i < bin->nfuncs && bin->funcs[i].addr + bin->funcs[i].size > cur)
			cur = bin->funcs[i].addr + bin->funcs[i].size;
	}
	return 0;
}

/* Programs with neither symbols nor unwind tables (Free Pascal, stripped
 * Go) leave whole sections as gaps. Their functions are 16-byte aligned
 * targets of direct calls: a byte scan for E8 rel32 whose target is an
 * aligned address inside a gap finds them without a decoder. A stray E8
 * inside another instruction rarely points into a gap at an aligned
 * address (about R/2^36 per stray byte for R bytes of gaps). */
#define SPLIT_MIN_GAPS 4096  /* below this, gaps are crt start-up code */

struct targets {
	uint64_t *v;
	size_t n, cap;
};

struct region {
	uint64_t addr, size;
};

static int region_cmp(const void *a, const void *b)
{
	const struct region *x = a, *y = b;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* Whether ADDR lies in one of the sorted regions v[0..n), past its start. */
static int in_region(const struct region *v, size_t n, uint64_t addr)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (v[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo && addr > v[lo - 1].addr && addr - v[lo - 1].addr < v[lo - 1].size;
}

static int push_target(struct targets *t, uint64_t target)
{
	if (rtl_grow(&t->v, &t->cap, t->n + 1, sizeof(*t->v)))
		return -ENOMEM;
	t->v[t->n++] = target;
	return 0;
}

static int scan_calls(rtl_binary *bin, const struct region *r, size_t nr, struct targets *t)
{
	int err = 0;
	for (size_t k = 0; k < bin->nsecs && !err; k++) {
		const struct rtl_section *sec = &bin->secs[k];
		const unsigned char *p;
		if (!(sec->flags & SHF_EXECINSTR) || sec->is_plt ||
		    !(p = rtl_binary_ptr(bin, sec->addr, sec->size)))
			continue;
		for (uint64_t i = 0; i + 5 <= sec->size && !err; i++) {
			int32_t rel;
			if (p[i] != 0xe8)
				continue;
			memcpy(&rel, p + i + 1, 4);
			uint64_t target = sec->addr + i + 5 + (int64_t)rel;
			if (!(target & 15) && in_region(r, nr, target))
				err = push_target(t, target);
		}
	}
	return err;
}

/* Regions with guessed extents: the gap candidates c->v[first..] and the
 * functions known only from an ELF entry (Free Pascal's _start runs to
 * the end of .text). Splits them at call targets: the new candidates and
 * the old gaps get size 0, so each extends to the next function. */
static int split_gaps(rtl_binary *bin, struct rtl_cands *c, size_t first)
{
	size_t nr = 0, total = 0;
	struct region *r = malloc((c->n - first + bin->nfuncs + 1) * sizeof(*r));
	struct targets t = { 0 };
	int err = r ? 0 : -ENOMEM;

	for (size_t i = first; !err && i < c->n; i++)
		r[nr++] = (struct region){ c->v[i].addr, c->v[i].size };
	for (size_t i = 0; !err && i < bin->nfuncs; i++)
		if (bin->funcs[i].sources == RTL_SRC_ENTRY)
			r[nr++] = (struct region){ bin->funcs[i].addr, bin->funcs[i].size };
	for (size_t i = 0; i < nr; i++)
		total += r[i].size;
	if (err || total < SPLIT_MIN_GAPS)
		goto out;
	qsort(r, nr, sizeof(*r), region_cmp);
	if ((err = scan_calls(bin, r, nr, &t)))
		goto out;
	for (size_t i = first; i < c->n; i++)
		c->v[i].size = 0;
	for (size_t k = 0; k < t.n && !err; k++)
		err = rtl_cands_push(c, t.v[k], 0, NULL, RTL_SRC_GAP, RANK_NONE);
out:
	free(r);
	free(t.v);
	return err;
}

int rtl_elf_collect_gaps(rtl_binary *bin, struct rtl_cands *c)
{
	Elf_Scn *scn = NULL;
	size_t first = c->n;
	while ((scn = elf_nextscn(bin->elf, scn))) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS ||
		    (sh.sh_flags & (SHF_ALLOC | SHF_EXECINSTR)) != (SHF_ALLOC | SHF_EXECINSTR))
			continue;
		if (rtl_elf_in_plt(bin, sh.sh_addr))
			continue;
		int err = sweep_section(bin, &sh, c);
		if (err)
			return err;
	}
	return split_gaps(bin, c, first);
}
