/* Discovery's results as one blob and back (facts.h). The blob holds what
 * rtl_elf_discover leaves in a binary: the functions (entry, size, name,
 * sources), the code pointers into them, the FDE count and the signal
 * trampolines. The lookup indexes are made again on adoption (one pass);
 * names and code pointers stay in the blob, the functions are copied
 * (their check fields are written later). Same machine, same build of reticle: native layout. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "binary_internal.h"
#include "facts.h"

static const char magic[8] = "RTLFCTS1";
static const char *const unchecked = "not checked yet";

enum { FACTS_DEBUG = 1 };   /* names were looked for in a debug file */

struct facts_head {
	char magic[8];
	uint32_t nfuncs, ncptrs;
	uint32_t nsigtramps, flags;
	uint64_t nfdes;
	uint64_t names_len;
};

struct facts_func {
	uint64_t addr, size;
	uint32_t name;      /* offset + 1 into the names, 0 for none */
	uint32_t sources;
};

static size_t round8(size_t n) { return (n + 7) & ~(size_t)7; }

static size_t blob_size(size_t nfuncs, size_t ncptrs, size_t nsig, size_t names)
{
	return sizeof(struct facts_head) + nfuncs * sizeof(struct facts_func) +
	       ncptrs * sizeof(rtl_code_pointer) + nsig * sizeof(uint64_t) + round8(names);
}

int rtl_elf_facts_pack(const rtl_binary *bin, void **blob, size_t *len)
{
	size_t names = 1;   /* a NUL first: no name is at offset 0 */
	for (size_t i = 0; i < bin->nfuncs; i++) {
		const rtl_function *f = &bin->funcs[i];
		if (f->instrumentable || !f->reason || strcmp(f->reason, unchecked))
			return -ENOTSUP;   /* checked already: not discovery's state */
		if (f->name)
			names += strlen(f->name) + 1;
	}
	if (bin->nfuncs > UINT32_MAX || bin->ncptrs > UINT32_MAX || names > UINT32_MAX)
		return -ENOTSUP;
	size_t n = blob_size(bin->nfuncs, bin->ncptrs, bin->nsigtramps, names);
	uint8_t *b = calloc(1, n);
	if (!b)
		return -ENOMEM;
	struct facts_head *h = (struct facts_head *)b;
	memcpy(h->magic, magic, sizeof(magic));
	h->nfuncs = (uint32_t)bin->nfuncs;
	h->ncptrs = (uint32_t)bin->ncptrs;
	h->nsigtramps = (uint32_t)bin->nsigtramps;
	h->flags = bin->debug_consulted ? FACTS_DEBUG : 0;
	h->nfdes = bin->nfdes;
	h->names_len = round8(names);
	struct facts_func *ff = (struct facts_func *)(h + 1);
	rtl_code_pointer *cp = (rtl_code_pointer *)(ff + bin->nfuncs);
	uint64_t *sig = (uint64_t *)(cp + bin->ncptrs);
	char *nm = (char *)(sig + bin->nsigtramps);
	size_t at = 1;
	for (size_t i = 0; i < bin->nfuncs; i++) {
		const rtl_function *f = &bin->funcs[i];
		ff[i] = (struct facts_func){ f->addr, f->size, 0, f->sources };
		if (f->name) {
			size_t l = strlen(f->name) + 1;
			memcpy(nm + at, f->name, l);
			ff[i].name = (uint32_t)at + 1;
			at += l;
		}
	}
	if (bin->ncptrs)
		memcpy(cp, bin->cptrs, bin->ncptrs * sizeof(*cp));
	memcpy(sig, bin->sigtramps, bin->nsigtramps * sizeof(*sig));
	*blob = b;
	*len = n;
	return 0;
}

int rtl_elf_facts_adopt(rtl_binary *bin, const void *blob, size_t len, void *owner,
			void (*release)(void *owner))
{
	const struct facts_head *h = blob;
	if (len < sizeof(*h) || memcmp(h->magic, magic, sizeof(magic)) ||
	    h->nsigtramps > sizeof(bin->sigtramps) / sizeof(bin->sigtramps[0]) ||
	    h->names_len == 0 || h->names_len > len ||
	    len != blob_size(h->nfuncs, h->ncptrs, h->nsigtramps, h->names_len))
		return -EINVAL;
	const struct facts_func *ff = (const struct facts_func *)(h + 1);
	const rtl_code_pointer *cp = (const rtl_code_pointer *)(ff + h->nfuncs);
	const uint64_t *sig = (const uint64_t *)(cp + h->ncptrs);
	const char *nm = (const char *)(sig + h->nsigtramps);
	if (nm[h->names_len - 1])
		return -EINVAL;   /* every name ends inside the blob */
	rtl_function *funcs = malloc((h->nfuncs ? h->nfuncs : 1) * sizeof(*funcs));
	if (!funcs)
		return -ENOMEM;
	for (size_t i = 0; i < h->nfuncs; i++) {
		if (ff[i].name > h->names_len || (i && ff[i].addr < ff[i - 1].addr)) {
			free(funcs);
			return -EINVAL;
		}
		funcs[i] = (rtl_function){
			.name = ff[i].name ? nm + ff[i].name - 1 : NULL,
			.addr = ff[i].addr,
			.size = ff[i].size,
			.sources = ff[i].sources,
			.reason = unchecked,
		};
	}
	free(bin->funcs);
	if (!bin->cptrs_borrowed)
		free(bin->cptrs);
	bin->funcs = funcs;
	bin->nfuncs = bin->capfuncs = h->nfuncs;
	/* read only from here on: they stay in the blob (cc1 has 200,000) */
	bin->cptrs = h->ncptrs ? (rtl_code_pointer *)cp : NULL;
	bin->cptrs_borrowed = true;
	bin->ncptrs = h->ncptrs;
	bin->nfdes = h->nfdes;
	bin->nsigtramps = h->nsigtramps;
	memcpy(bin->sigtramps, sig, h->nsigtramps * sizeof(*sig));
	bin->debug_consulted = h->flags & FACTS_DEBUG;
	int err = rtl_elf_index_functions(bin);
	if (err) {   /* as it was before: discovery may run on BIN */
		free(bin->funcs);
		bin->funcs = NULL;
		bin->nfuncs = bin->capfuncs = 0;
		bin->cptrs = NULL;
		bin->ncptrs = 0;
		bin->cptrs_borrowed = false;
		bin->nfdes = bin->nsigtramps = 0;
		bin->debug_consulted = false;
		return err;
	}
	bin->facts_owner = owner;
	bin->facts_release = release;
	return 0;
}
