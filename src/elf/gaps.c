/* Code that no symbol, FDE or ELF entry names: in stripped binaries, the
 * crt start-up helpers (deregister_tm_clones and friends have no unwind
 * info) and hand-written assembly without CFI. A gap between known
 * functions that holds more than padding becomes a function; it is split
 * where a `ret` is followed by padding up to a 16-byte boundary, the way
 * compilers lay out consecutive functions. */
#include <string.h>
#include <reticle/error.h>
#include "binary_internal.h"

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

static int sweep_section(rtl_binary *bin, const GElf_Shdr *sh, struct rtl_cands *c)
{
	const unsigned char *p = rtl_binary_ptr(bin, sh->sh_addr, sh->sh_size);
	uint64_t cur = sh->sh_addr, end = sh->sh_addr + sh->sh_size;
	if (!p)
		return 0;
	for (size_t i = 0; i <= bin->nfuncs; i++) {
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
		if (cur >= end)
			break;
	}
	return 0;
}

int rtl_elf_collect_gaps(rtl_binary *bin, struct rtl_cands *c)
{
	Elf_Scn *scn = NULL;
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
	return 0;
}
