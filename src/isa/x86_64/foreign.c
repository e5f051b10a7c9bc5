/* Where code outside a function enters it other than at its entry, as far
 * as the functions it jumps into show: a function jumps (it does not call)
 * into its .cold parts, unnamed in stripped binaries, and they jump back
 * into its body; a .cold part is entered by its parent's jumps. The
 * dominators of x86_cfg_implied_blocks are rooted there too. */
#include <stdlib.h>
#include "isa/x86_64/relocate.h"

enum { MAX_FUNCS = 16, MAX_SIZE = 64 << 10 };

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

uint64_t *x86_foreign_entries(const rtl_binary *bin, uint64_t bias, const rtl_function *f,
			      const struct x86_insn *insns, size_t ninsns, size_t *n, bool *known)
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
		*known = nseen < MAX_FUNCS && c->size && c->size <= MAX_SIZE &&
			 x86_branches_into(bin, bias, c, lo, hi, &v, n);
		if (*known)
			seen[nseen++] = c;
	}
	return v;
}
