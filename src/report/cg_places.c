/* Source places of executed instructions for the callgrind export (see
 * cg_places.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <reticle/binary.h>
#include "isa/x86_64/insn.h"
#include "report/cg_places.h"
#include "util/array.h"

static uint64_t hash_str(const char *s)
{
	uint64_t h = 14695981039346656037ull;

	while (*s)
		h = (h ^ (unsigned char)*s++) * 1099511628211ull;
	return h;
}

static int rehash(struct cg_places *p, size_t nslots)
{
	uint32_t *slots = calloc(nslots, sizeof(*slots));

	if (!slots)
		return -ENOMEM;
	for (size_t i = 0; i < p->nfiles; i++) {
		size_t k = hash_str(p->files[i]) & (nslots - 1);

		while (slots[k])
			k = (k + 1) & (nslots - 1);
		slots[k] = (uint32_t)i + 1;
	}
	free(p->slots);
	p->slots = slots;
	p->nslots = nslots;
	return 0;
}

/* The index of file NAME, added on first sight; -ENOMEM. */
static int64_t file_index(struct cg_places *p, const char *name)
{
	size_t k;

	if (p->nfiles * 2 >= p->nslots && rehash(p, p->nslots ? p->nslots * 2 : 64))
		return -ENOMEM;
	for (k = hash_str(name) & (p->nslots - 1); p->slots[k]; k = (k + 1) & (p->nslots - 1))
		if (!strcmp(p->files[p->slots[k] - 1], name))
			return p->slots[k] - 1;
	if (rtl_grow(&p->files, &p->capfiles, p->nfiles + 1, sizeof(*p->files)) ||
	    rtl_grow(&p->named, &p->capnamed, p->nfiles + 1, 1) || !(p->files[p->nfiles] = strdup(name)))
		return -ENOMEM;
	p->named[p->nfiles] = 0;
	p->slots[k] = (uint32_t)p->nfiles + 1;
	return (int64_t)p->nfiles++;
}

static int place(struct cg_places *p, rtl_binary *bin, uint64_t addr, struct cg_place *out)
{
	const char *file;
	int line;
	int64_t f;

	*out = (struct cg_place){ addr, 0, 0 };
	if (!p->nfiles && file_index(p, "???") < 0)
		return -ENOMEM;
	if (!bin || rtl_binary_source_line(bin, addr, &file, &line) || line <= 0)
		return 0;
	if ((f = file_index(p, file)) < 0)
		return -ENOMEM;
	out->file = (uint32_t)f;
	out->line = (uint32_t)line;
	p->known = 1;
	return 0;
}

int cgp_addr(struct cg_places *p, const char *module, uint64_t addr, struct cg_place *out)
{
	return place(p, rpt_sources_binary(&p->src, module), addr, out);
}

size_t cgp_decode(rtl_binary *bin, uint64_t addr, uint8_t code[15], struct x86_insn *in)
{
	/* up to 15 bytes, fewer at the end of a segment */
	for (size_t len = 15; len; len--)
		if (!rtl_binary_read(bin, addr, code, len))
			return x86_decode(code, len, addr, in) ? 0 : in->len;
	return 0;
}

size_t cgp_insn_len_rep(rtl_binary *bin, uint64_t addr, bool *rep)
{
	uint8_t code[15];
	struct x86_insn in;
	size_t len = cgp_decode(bin, addr, code, &in);

	*rep = len && in.rep;
	return len;
}

size_t cgp_insn_len(rtl_binary *bin, uint64_t addr)
{
	uint8_t code[15];
	struct x86_insn in;

	return cgp_decode(bin, addr, code, &in);
}

int cgp_block(struct cg_places *p, const char *module, uint64_t addr, uint32_t ninstrs,
	      size_t *first)
{
	rtl_binary *bin = rpt_sources_binary(&p->src, module);
	size_t start = p->n;
	uint64_t at = addr;
	int err;

	if (!bin || !rtl_binary_has_source_lines(bin))
		return 1;      /* no DWARF: no decoding either */
	if (rtl_grow(&p->v, &p->cap, p->n + ninstrs, sizeof(*p->v)))
		return -ENOMEM;
	for (uint32_t i = 0; i < ninstrs; i++) {
		size_t len = cgp_insn_len(bin, at);

		if (!len) {
			p->n = start;
			return 1;
		}
		if ((err = place(p, bin, at, &p->v[p->n])))
			return err;
		p->n++;
		at += len;
	}
	*first = start;
	return 0;
}

int cgp_branch_target(struct cg_places *p, const char *module, uint64_t site, uint64_t *target)
{
	rtl_binary *bin = rpt_sources_binary(&p->src, module);
	uint8_t code[15];
	struct x86_insn in;

	if (!bin || !cgp_decode(bin, site, code, &in) || (in.kind != X86_JCC && in.kind != X86_LOOP))
		return 1;
	*target = in.target;
	return 0;
}

int cgp_block_last(struct cg_places *p, const char *module, uint64_t addr, uint32_t ninstrs,
		   uint64_t last, uint64_t *site, struct x86_insn *in)
{
	rtl_binary *bin = rpt_sources_binary(&p->src, module);
	uint8_t code[15];
	uint64_t at = last ? last : addr;

	if (!bin || !ninstrs)
		return 1;
	for (uint32_t i = last ? ninstrs - 1 : 0; i < ninstrs; i++) {
		size_t len = cgp_decode(bin, at, code, in);
		if (!len)
			return 1;
		if (i + 1 < ninstrs)
			at += len;
	}
	*site = at;
	return 0;
}

int cgp_block_jump(struct cg_places *p, const char *module, uint64_t addr, uint32_t ninstrs,
		   uint64_t last, uint64_t *site, uint64_t *target)
{
	struct x86_insn in;

	if (cgp_block_last(p, module, addr, ninstrs, last, site, &in) || in.kind != X86_JMP)
		return 1;
	*target = in.target;
	return 0;
}

void cgp_free(struct cg_places *p)
{
	rpt_sources_free(&p->src);
	for (size_t i = 0; i < p->nfiles; i++)
		free(p->files[i]);
	free(p->files);
	free(p->named);
	free(p->slots);
	free(p->v);
	memset(p, 0, sizeof(*p));
}
