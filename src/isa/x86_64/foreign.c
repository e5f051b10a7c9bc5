/* Where code outside a function enters it other than at its entry, as far
 * as the functions it jumps into show: a function jumps (it does not call)
 * into its .cold parts, unnamed in stripped binaries, and they jump back
 * into its body; a .cold part is entered by its parent's jumps (and
 * BOLT's .warm parts the same way, in both directions). The
 * dominators of x86_cfg_implied_blocks are rooted there too. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include "isa/x86_64/relocate.h"
#include "util/array.h"

/* Functions larger than MAX_SIZE are not read (cover's implied blocks,
 * and parts of one function, read up to MAX_SIZE_COVER: BOLT's .cold and
 * .warm parts of LLVM's functions are tens of KiB), and a large function
 * F tail-calls is decoded for nothing (25 ms of a cold gcc run when every
 * one was read). */
enum { MAX_FUNCS = 16, MAX_SIZE = 4 << 10, MAX_SIZE_COVER = 64 << 10 };
/* Stubs that enter a function's middle (neighbour_entries): up to
 * NEIGHBOURS functions on each side, each at most STUB_SIZE bytes and no
 * farther than NEIGHBOUR_GAP bytes from the function (glibc's erms stubs
 * lie 72 bytes before the function they enter). */
enum { NEIGHBOURS = 4, STUB_SIZE = 64, NEIGHBOUR_GAP = 128 };

static bool jumps(const struct x86_insn *in)
{
	return in->kind == X86_JMP || in->kind == X86_JCC || in->kind == X86_LOOP || in->kind == X86_CALL;
}

bool x86_branches_into(const rtl_binary *bin, uint64_t bias, const rtl_function *c, uint64_t lo, uint64_t hi,
		       uint64_t **v, size_t *n)
{
	uint8_t *code = malloc(c->size);
	struct x86_insn *insns = NULL;
	size_t ninsns = 0;
	bool ok = code && !rtl_binary_read(bin, c->addr, code, c->size);
	/* what decodes before bytes that do not still counts */
	ok = ok && !x86_decode_function(code, c->size, c->addr + bias, &insns, &ninsns);
	for (size_t i = 0; i < ninsns; i++) {
		uint64_t t = insns[i].target;
		if (!jumps(&insns[i]) || t <= lo || t >= hi)
			continue;
		uint64_t *nv = realloc(*v, (*n + 1) * sizeof(**v));
		if (!nv) {
			ok = false;
			break;
		}
		*v = nv;
		(*v)[(*n)++] = t;
	}
	free(code);
	free(insns);
	return ok;
}

struct x86_foreign_cache {
	size_t n;
	_Atomic(struct branch_list *) *slot;
};

/* A function's direct branch targets outside itself (link-time), or
 * UNREADABLE. */
struct branch_list {
	size_t n;
	uint64_t t[];
};
static struct branch_list unreadable;

struct x86_foreign_cache *x86_foreign_cache_new(size_t nfunctions)
{
	struct x86_foreign_cache *c = malloc(sizeof(*c));
	if (c && !(c->slot = calloc(nfunctions ? nfunctions : 1, sizeof(*c->slot)))) {
		free(c);
		return NULL;
	}
	if (c)
		c->n = nfunctions;
	return c;
}

void x86_foreign_cache_free(struct x86_foreign_cache *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->n; i++) {
		struct branch_list *l = atomic_load(&c->slot[i]);
		if (l != &unreadable)
			free(l);
	}
	free(c->slot);
	free(c);
}

/* A part split off a function (GCC's and BOLT's NAME.cold, BOLT's
 * NAME.warm), which jumps back into its body. */
static bool is_part(const char *name)
{
	return name && (strstr(name, ".cold") || strstr(name, ".warm"));
}

/* Whether A and B are parts of one function: one of them a split part,
 * the other its parent (NAME and NAME.cold) or another part of it. */
static bool same_function(const rtl_function *a, const rtl_function *b)
{
	if (is_part(b->name))
		return true;   /* jumped into by its parent, whatever F is */
	if (!a->name || !b->name || !is_part(a->name))
		return false;
	size_t n = strlen(b->name);
	return !strncmp(a->name, b->name, n) && a->name[n] == '.';
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

/* C's branches out of itself (decoded once per cache: a function that many
 * tail-call was decoded for each of them, 8% of a cold gcc run). */
static struct branch_list *branches_of(const rtl_binary *bin, const rtl_function *c, struct x86_foreign_cache *cache)
{
	size_t k = (size_t)(c - rtl_binary_function(bin, 0));
	struct branch_list *l = cache && k < cache->n ? atomic_load(&cache->slot[k]) : NULL;
	if (l)
		return l;
	uint64_t *v = NULL;
	size_t n = 0;
	bool ok = c->size && c->size <= MAX_SIZE_COVER && x86_branches_into(bin, 0, c, 0, UINT64_MAX, &v, &n);
	size_t kept = 0;
	for (size_t i = 0; ok && i < n; i++)
		if (v[i] < c->addr || v[i] >= c->addr + c->size)
			v[kept++] = v[i];
	l = ok ? malloc(sizeof(*l) + kept * sizeof(*l->t)) : NULL;
	if (l) {
		l->n = kept;
		memcpy(l->t, v, kept * sizeof(*v));
		qsort(l->t, kept, sizeof(*l->t), cmp_u64);   /* each caller takes its slice */
	} else {
		l = &unreadable;
	}
	free(v);
	struct branch_list *none = NULL;
	if (cache && k < cache->n && !atomic_compare_exchange_strong(&cache->slot[k], &none, l)) {
		if (l != &unreadable)   /* another thread's came first */
			free(l);
		l = none;
	}
	return l;
}

/* Whether stub C (link-time) may hold a direct jump or branch into (LO,
 * HI): a byte that would start one, wherever it lies, as a filter before
 * decoding (most functions beside F hold none, and a cold gcc run looks
 * beside thousands). */
static bool may_branch_into(const rtl_binary *bin, const rtl_function *c, uint64_t lo, uint64_t hi)
{
	uint8_t b[STUB_SIZE];
	if (rtl_binary_read(bin, c->addr, b, c->size))
		return true;   /* left to the decoder to say */
	for (size_t i = 0; i < c->size; i++) {
		uint64_t t = 0;
		int32_t rel;
		if ((b[i] == 0xeb || (b[i] & 0xf0) == 0x70) && i + 2 <= c->size) {   /* jmp, jcc rel8 */
			t = c->addr + i + 2 + (uint64_t)(int64_t)(int8_t)b[i + 1];
		} else if (b[i] == 0xe9 && i + 5 <= c->size) {   /* jmp rel32 */
			memcpy(&rel, b + i + 1, 4);
			t = c->addr + i + 5 + (uint64_t)(int64_t)rel;
		} else if (b[i] == 0x0f && i + 6 <= c->size && (b[i + 1] & 0xf0) == 0x80) {   /* jcc rel32 */
			memcpy(&rel, b + i + 2, 4);
			t = c->addr + i + 6 + (uint64_t)(int64_t)rel;
		}
		if (t > lo && t < hi)
			return true;
	}
	return false;
}

/* Appends to *V (*N) where the stubs beside F jump into its middle
 * (run-time addresses in (LO, HI)). Hand-written assembly enters a function
 * from small functions next to it: glibc's __mempcpy_avx_unaligned is a
 * mov, an add and a jump 3 bytes into __memcpy_avx_unaligned, past its
 * first instruction, which it puts in the line before it; without a block
 * there the instructions from there to the block's end ran uncounted
 * (bzip2: memcpy's entry block counted 402 times, run 1,047 times). */
static void neighbour_entries(const rtl_binary *bin, uint64_t bias, const rtl_function *f, uint64_t lo,
			      uint64_t hi, struct x86_foreign_cache *cache, uint64_t **v, size_t *n)
{
	const rtl_function *first = rtl_binary_function(bin, 0);
	size_t count = rtl_binary_function_count(bin), k = (size_t)(f - first);
	if (k >= count)
		return;
	for (int dir = -1; dir <= 1; dir += 2)
		for (size_t d = 1; d <= NEIGHBOURS; d++) {
			if (dir < 0 ? d > k : k + d >= count)
				break;
			const rtl_function *c = &first[dir < 0 ? k - d : k + d];
			if (dir < 0 ? c->addr + c->size + NEIGHBOUR_GAP < f->addr
				    : c->addr > f->addr + f->size + NEIGHBOUR_GAP)
				break;
			if (!c->size || c->size > STUB_SIZE || (c->addr < f->addr + f->size && c->addr + c->size > f->addr) ||
			    !may_branch_into(bin, c, lo - bias, hi - bias))
				continue;   /* not a stub, overlapping F (an alias's range), or no branch into F */
			struct branch_list *l = branches_of(bin, c, cache);
			if (l == &unreadable)
				continue;
			for (size_t j = rtl_lower_bound_u64(l->t, l->n, lo - bias + 1); j < l->n && l->t[j] + bias < hi; j++) {
				uint64_t *nv = realloc(*v, (*n + 1) * sizeof(**v));
				if (!nv)
					break;
				*v = nv;
				(*v)[(*n)++] = l->t[j] + bias;
			}
			if (!cache)
				free(l);
		}
}

uint64_t *x86_foreign_entries(const rtl_binary *bin, uint64_t bias, const rtl_function *f,
			      const struct x86_insn *insns, size_t ninsns, size_t *n, bool *known,
			      struct x86_foreign_cache *cache, bool all)
{
	const rtl_function *seen[MAX_FUNCS];
	size_t nseen = 0;
	uint64_t lo = f->addr + bias, hi = lo + f->size, *v = NULL;
	*n = 0;
	*known = true;
	for (size_t i = 0; i <= ninsns && *known; i++) {
		/* its jumps out, and what its last instruction falls into */
		const struct x86_insn *in = i < ninsns ? &insns[i] : NULL;
		bool falls = !in && ninsns && insns[ninsns - 1].kind != X86_JMP && insns[ninsns - 1].kind != X86_IJMP &&
			     insns[ninsns - 1].kind != X86_RET && insns[ninsns - 1].kind != X86_STOP;
		if (in ? !jumps(in) || in->kind == X86_CALL || (in->target >= lo && in->target < hi) : !falls)
			continue;
		const rtl_function *c = rtl_binary_find_function(bin, (in ? in->target : hi) - bias);
		bool dup = false;
		for (size_t k = 0; k < nseen && !dup; k++)
			dup = seen[k] == c;
		if (!c || c == f || dup)
			continue;   /* outside the binary's functions (the PLT's own jumps are indirect) */
		/* a named function that is not a part of F's is a tail call's
		 * callee (cold parts are local, unnamed where stripped): not read
		 * for blocks' sake alone (cover's implied blocks read them all) */
		bool kin = same_function(f, c);
		if (!all && c->name && *c->name && !kin)
			continue;
		struct branch_list *l = nseen < MAX_FUNCS && c->size <= (all || kin ? MAX_SIZE_COVER : MAX_SIZE)
					? branches_of(bin, c, cache) : &unreadable;
		*known = l != &unreadable;
		size_t j = *known ? rtl_lower_bound_u64(l->t, l->n, lo - bias + 1) : 0;
		for (; *known && j < l->n && l->t[j] + bias < hi; j++) {
			uint64_t t = l->t[j] + bias;
			uint64_t *nv = realloc(v, (*n + 1) * sizeof(*v));
			if (!nv) {
				*known = false;
				break;
			}
			v = nv;
			v[(*n)++] = t;
		}
		if (!cache && l != &unreadable)
			free(l);
		if (*known)
			seen[nseen++] = c;
	}
	if (*known)
		neighbour_entries(bin, bias, f, lo, hi, cache, &v, n);
	return v;
}
