/* Merging candidates into one record per entry address, sizing, lookup and
 * the instrumentability check (which asks the relocator, src/isa/x86_64/). */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <reticle/error.h>
#include "isa/x86_64/check.h"
#include "binary_internal.h"
#include "elf/code_facts.h"
#include "util/array.h"

/* Sort by address, then best name first: rank, then named before unnamed,
 * then the shortest name, then bytewise, so the choice is stable. */
static int cand_cmp(const void *a, const void *b)
{
	const struct rtl_candidate *x = a, *y = b;
	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	if (x->rank != y->rank)
		return x->rank - y->rank;
	if (!x->name || !y->name)
		return !x->name - !y->name;
	size_t lx = strlen(x->name), ly = strlen(y->name);
	if (lx != ly)
		return lx < ly ? -1 : 1;
	return strcmp(x->name, y->name);
}

static int in_segment(const rtl_binary *bin, uint64_t addr)
{
	for (size_t i = 0; i < bin->nsegs; i++)
		if (addr >= bin->segs[i].vaddr && addr - bin->segs[i].vaddr < bin->segs[i].memsz)
			return 1;
	return 0;
}

/* The size of the group v[0..n): symbol, else PLT entry, else FDE range. */
static uint64_t group_size(const struct rtl_candidate *v, size_t n)
{
	uint64_t sym = 0, plt = 0, fde = 0;
	for (size_t i = 0; i < n; i++) {
		uint64_t *slot = v[i].source == RTL_SRC_PLT ? &plt :
				 v[i].source == RTL_SRC_EH_FRAME ? &fde : &sym;
		if (!*slot)
			*slot = v[i].size;  /* the best-ranked symbol that has a size */
	}
	return sym ? sym : plt ? plt : fde;
}

/* One record per address into bin->funcs, whose room a second build
 * reuses (fresh pages cost more than the work done in them). */
static int merge(rtl_binary *bin, struct rtl_cands *c)
{
	if (rtl_grow(&bin->funcs, &bin->capfuncs, c->n ? c->n : 1, sizeof(*bin->funcs)))
		return -ENOMEM;
	bin->nfuncs = 0;
	for (size_t i = 0, j; i < c->n; i = j) {
		unsigned sources = 0;
		for (j = i; j < c->n && c->v[j].addr == c->v[i].addr; j++)
			sources |= c->v[j].source;
		if (!in_segment(bin, c->v[i].addr))
			continue;
		bin->funcs[bin->nfuncs++] = (rtl_function){
			.name = c->v[i].name,   /* best first after sorting */
			.addr = c->v[i].addr,
			.size = group_size(c->v + i, j - i),
			.sources = sources,
			.reason = "not checked yet",
		};
	}
	return 0;
}

/* The end of the section (or segment) holding ADDR: sizes never cross it. */
static uint64_t container_end(const rtl_binary *bin, uint64_t addr)
{
	const struct rtl_section *sec = rtl_elf_section_at(bin, addr);
	if (sec)
		return sec->addr + sec->size;
	for (size_t i = 0; i < bin->nsegs; i++)
		if (addr >= bin->segs[i].vaddr && addr - bin->segs[i].vaddr < bin->segs[i].memsz)
			return bin->segs[i].vaddr + bin->segs[i].memsz;
	return addr;
}

static uint64_t segment_end(const rtl_binary *bin, uint64_t addr)
{
	for (size_t i = 0; i < bin->nsegs; i++)
		if (addr >= bin->segs[i].vaddr && addr - bin->segs[i].vaddr < bin->segs[i].memsz)
			return bin->segs[i].vaddr + bin->segs[i].memsz;
	return addr;
}

/* No size runs past the end of its segment (corrupt or hostile files). */
static uint64_t clamp_size(const rtl_binary *bin, uint64_t addr, uint64_t size)
{
	uint64_t seg_end = segment_end(bin, addr);
	return size > seg_end - addr ? seg_end - addr : size;
}

/* Zero-size symbols inside a sized function are labels, not functions;
 * the others extend to the next function or the end of their section. */
static void fix_sizes(rtl_binary *bin)
{
	size_t out = 0;
	uint64_t covered = 0;  /* end of the furthest sized function so far */
	for (size_t i = 0; i < bin->nfuncs; i++) {
		rtl_function f = bin->funcs[i];
		if (f.size == 0 && f.addr < covered)
			continue;
		if (f.size == 0) {
			uint64_t end = container_end(bin, f.addr);
			if (i + 1 < bin->nfuncs && bin->funcs[i + 1].addr < end)
				end = bin->funcs[i + 1].addr;
			f.size = end - f.addr;
		}
		if ((f.size = clamp_size(bin, f.addr, f.size)) == 0)
			continue;
		if (f.addr + f.size > covered)
			covered = f.addr + f.size;
		bin->funcs[out++] = f;
	}
	bin->nfuncs = out;
}

static size_t hex_digits(uint64_t v)
{
	size_t n = 1;
	while (v >>= 4)
		n++;
	return n;
}

/* sub_<hex address> for every unnamed function, all in one block (stripped
 * cc1 has 19,000 of them: a snprintf and a strdup each took a millisecond
 * in all). */
static int name_unnamed(rtl_binary *bin)
{
	size_t total = 0;
	for (size_t i = 0; i < bin->nfuncs; i++)
		if (!bin->funcs[i].name)
			total += sizeof("sub_") + hex_digits(bin->funcs[i].addr);
	if (!total)
		return 0;
	char *block = malloc(total), *at = block;
	if (!rtl_binary_keep_string(bin, block))
		return -ENOMEM;
	for (size_t i = 0; i < bin->nfuncs; i++) {
		if (bin->funcs[i].name)
			continue;
		uint64_t a = bin->funcs[i].addr;
		size_t n = hex_digits(a);
		bin->funcs[i].name = at;
		memcpy(at, "sub_", 4);
		for (size_t k = 0; k < n; k++, a >>= 4)
			at[4 + n - 1 - k] = "0123456789abcdef"[a & 15];
		at[4 + n] = 0;
		at += 4 + n + 1;
	}
	return 0;
}

/* Sorts the candidates whose first SORTED are sorted already (the second
 * build only adds gaps): sort the tail, then merge it in from the back, in
 * place, the first run's candidate first among equals. */
static int sort_cands(struct rtl_cands *c, size_t sorted, struct rtl_scratch *s)
{
	size_t n = c->n, tail = n - sorted;
	struct rtl_candidate *t = rtl_scratch_get(s, (tail ? tail : 1) * sizeof(*t));
	if (!t)
		return -ENOMEM;
	/* by address with a radix sort (tens of thousands of FDEs), then each
	 * run of one address by the name order, by insertion (runs are short) */
	if (tail > 1 && rtl_radix_sort_u64_tmp(c->v + sorted, tail, sizeof(*c->v),
					       offsetof(struct rtl_candidate, addr), t))
		qsort(c->v + sorted, tail, sizeof(*c->v), cand_cmp);
	for (size_t i = sorted + 1; i < n; i++)
		for (size_t j = i; j > sorted && c->v[j - 1].addr == c->v[j].addr &&
				   cand_cmp(&c->v[j - 1], &c->v[j]) > 0; j--) {
			struct rtl_candidate t = c->v[j];
			c->v[j] = c->v[j - 1];
			c->v[j - 1] = t;
		}
	if (!sorted || !tail)
		return 0;
	memcpy(t, c->v + sorted, tail * sizeof(*t));
	for (size_t i = sorted, j = tail, k = n; j > 0; )
		c->v[--k] = i > 0 && cand_cmp(&c->v[i - 1], &t[j - 1]) > 0 ? c->v[--i] : t[--j];
	return 0;
}

/* Lookups by address are frequent (every branch the relocator meets): a
 * page index narrows the search to the few records of one page. */
static int build_page_index(rtl_binary *bin)
{
	enum { MAX_PAGES = 1 << 20 };
	bin->npages = 0;
	if (!bin->nfuncs)
		return 0;
	uint64_t lo = bin->funcs[0].addr, span = bin->funcs[bin->nfuncs - 1].addr - lo;
	size_t n = (size_t)(span >> 12) + 2;
	if (span >> 12 >= MAX_PAGES)
		return 0;   /* functions spread too far apart: plain binary search */
	uint32_t *v = realloc(bin->page_first, n * sizeof(*bin->page_first));
	if (!v)
		return -ENOMEM;
	bin->page_first = v;
	for (size_t pg = 0, i = 0; pg < n; pg++) {
		while (i < bin->nfuncs && bin->funcs[i].addr < lo + ((uint64_t)pg << 12))
			i++;
		bin->page_first[pg] = (uint32_t)i;
	}
	bin->npages = n;
	return 0;
}

static int build_cover(rtl_binary *bin)
{
	uint64_t *v = realloc(bin->cover, (bin->nfuncs ? bin->nfuncs : 1) * sizeof(*bin->cover));
	if (!v)
		return -ENOMEM;
	bin->cover = v;
	for (size_t i = 0; i < bin->nfuncs; i++) {
		uint64_t end = bin->funcs[i].addr + bin->funcs[i].size;
		if (end < bin->funcs[i].addr)
			end = UINT64_MAX;
		bin->cover[i] = i && bin->cover[i - 1] > end ? bin->cover[i - 1] : end;
	}
	return build_page_index(bin);
}

int rtl_elf_build_functions(rtl_binary *bin, struct rtl_cands *c, size_t sorted,
			    struct rtl_scratch *s)
{
	int err;
	if ((err = sort_cands(c, sorted, s)))
		return err;
	if ((err = merge(bin, c)))
		return err;
	fix_sizes(bin);
	return build_cover(bin);
}

/* Where the gap G would go among the functions, if it can go there without
 * a second build: it starts past every function before it and ends before
 * the next, so that no size changes. Else -1. */
static long gap_slot(const rtl_binary *bin, const struct rtl_candidate *g)
{
	size_t lo = 0, hi = bin->nfuncs;
	while (lo < hi) {  /* first record with addr > G */
		size_t mid = lo + (hi - lo) / 2;
		if (bin->funcs[mid].addr <= g->addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (g->size == 0 || (lo > 0 && bin->cover[lo - 1] > g->addr) ||
	    (lo < bin->nfuncs && g->size > bin->funcs[lo].addr - g->addr))
		return -1;
	return (long)lo;
}

int rtl_elf_add_gaps(rtl_binary *bin, struct rtl_cands *c, size_t first, struct rtl_scratch *s)
{
	size_t n = c->n - first, ngroups = 0;
	struct rtl_candidate *g = c->v + first;
	/* by address, as a second build would order them (its name order
	 * sees no difference between gaps) */
	void *tmp = rtl_scratch_get(s, (n ? n : 1) * (sizeof(*g) > sizeof(size_t) ? sizeof(*g) : sizeof(size_t)));
	if (!tmp || rtl_radix_sort_u64_tmp(g, n, sizeof(*g), offsetof(struct rtl_candidate, addr), tmp))
		return -ENOMEM;
	size_t *slot = tmp;   /* each group's: how many functions come before it */
	for (size_t i = 0; i < n; i++) {   /* all gaps go in, or none */
		long at = gap_slot(bin, &g[i]);
		if (at < 0 || !in_segment(bin, g[i].addr))
			return 1;
		if (i == 0 || g[i].addr != g[i - 1].addr)
			slot[ngroups++] = (size_t)at;
	}
	if (rtl_grow(&bin->funcs, &bin->capfuncs, bin->nfuncs + ngroups, sizeof(*bin->funcs)))
		return -ENOMEM;
	/* from the back: the functions after a group move up by the groups
	 * still to place, then the group's record goes before them */
	size_t moved = bin->nfuncs;
	for (size_t i = n, k = ngroups; k > 0; k--) {
		size_t j = i - 1;
		while (j > 0 && g[j - 1].addr == g[j].addr)
			j--;
		memmove(&bin->funcs[slot[k - 1] + k], &bin->funcs[slot[k - 1]],
			(moved - slot[k - 1]) * sizeof(*bin->funcs));
		moved = slot[k - 1];
		bin->funcs[moved + k - 1] = (rtl_function){
			.addr = g[j].addr,
			.size = clamp_size(bin, g[j].addr, group_size(g + j, i - j)),
			.sources = RTL_SRC_GAP,
			.reason = "not checked yet",
		};
		i = j;
	}
	bin->nfuncs += ngroups;
	return build_cover(bin);
}

int rtl_elf_index_functions(rtl_binary *bin)
{
	return build_cover(bin);
}

int rtl_elf_name_functions(rtl_binary *bin)
{
	return name_unnamed(bin);
}

size_t rtl_binary_function_count(const rtl_binary *bin) { return bin->nfuncs; }

const rtl_function *rtl_binary_function(const rtl_binary *bin, size_t i)
{
	return i < bin->nfuncs ? &bin->funcs[i] : NULL;
}

size_t rtl_binary_fde_count(const rtl_binary *bin) { return bin->nfdes; }

const rtl_function *rtl_binary_find_function(const rtl_binary *bin, uint64_t addr)
{
	size_t lo = 0, hi = bin->nfuncs;
	if (bin->npages && addr >= bin->funcs[0].addr) {
		uint64_t pg = (addr - bin->funcs[0].addr) >> 12;
		if (pg + 1 < bin->npages) {
			lo = bin->page_first[pg];
			hi = bin->page_first[pg + 1];
		} else {
			lo = bin->nfuncs;   /* past the last record's page */
		}
	}
	while (lo < hi) {  /* first record with addr > ADDR */
		size_t mid = lo + (hi - lo) / 2;
		if (bin->funcs[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return rtl_elf_function_before(bin, lo, addr);
}

const rtl_function *rtl_elf_function_before(const rtl_binary *bin, size_t next, uint64_t addr)
{
	/* Usually the record just before; when functions nest (hand-written
	 * asm with entries inside others), walk back while an earlier function
	 * can still reach ADDR: cover[k] is the furthest end among 0..k. */
	for (; next > 0 && bin->cover[next - 1] > addr; next--) {
		const rtl_function *f = &bin->funcs[next - 1];
		if (addr - f->addr < f->size)
			return f;
	}
	return NULL;
}

static int is_executable(const rtl_binary *bin, uint64_t addr)
{
	const struct rtl_section *sec = rtl_elf_section_at(bin, addr);
	if (sec)
		return (sec->flags & SHF_EXECINSTR) != 0;
	for (size_t i = 0; i < bin->nsegs; i++)
		if (addr >= bin->segs[i].vaddr && addr - bin->segs[i].vaddr < bin->segs[i].memsz)
			return (bin->segs[i].flags & PF_X) != 0;
	return 0;
}

static int is_sigtramp(const rtl_binary *bin, uint64_t addr)
{
	for (size_t i = 0; i < bin->nsigtramps; i++)
		if (bin->sigtramps[i] == addr)
			return 1;
	return 0;
}

bool fn_is_signal_trampoline(const rtl_binary *bin, uint64_t addr)
{
	return is_sigtramp(bin, addr);
}

static void check_one(const rtl_binary *bin, rtl_function *f)
{
	const char *reason = NULL;
	const unsigned char *code;

	f->instrumentable = 0;
	if ((f->sources & RTL_SRC_PLT) || rtl_elf_in_plt(bin, f->addr))
		reason = "PLT stub";
	else if (!is_executable(bin, f->addr))
		reason = "not in an executable section";
	else if (is_sigtramp(bin, f->addr))
		reason = "signal return trampoline";  /* unwinders match its bytes */
	else if (f->sources == RTL_SRC_GAP)
		reason = "no symbol or FDE: boundaries guessed";
	else if (!(code = rtl_binary_ptr(bin, f->addr, f->size)))
		reason = "code not in the file";
	else if (rtl_x86_check_function(code, f->size, f->addr, &reason))
		reason = NULL, f->instrumentable = 1;
	else if (!reason)
		reason = "rejected by the relocator";
	f->reason = reason;
}

void rtl_binary_check_functions(rtl_binary *bin)
{
	for (size_t i = 0; i < bin->nfuncs; i++)
		check_one(bin, &bin->funcs[i]);
}
