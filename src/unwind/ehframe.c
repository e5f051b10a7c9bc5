/* .eh_frame lookups for the builder: the FDE over an address (walking the
 * section or through a sorted index), and the sections loaded from a file.
 * The records themselves are read by src/elf/ehframe_read.c. */
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#include <gelf.h>
#include <libelf.h>
#include <reticle/error.h>
#include "unwind/internal.h"
#include "util/array.h"

/* ---- the FDEs the builder can use ---- */

/* The builder copies a CIE's fixed fields and augmentation into its own:
 * it must know every byte of them. */
static int usable_cie(const struct rtl_eh_cie *c, const char **why)
{
	if (c->version != 1 && c->version != 3)
		return *why = "CIE version other than 1 and 3", -RTL_ERR_UNSUPPORTED;
	if (c->aug[0] && c->aug[0] != 'z')
		return *why = "CIE augmentation without 'z'", -RTL_ERR_UNSUPPORTED;
	if (c->unknown_aug)
		return *why = "unknown CIE augmentation letter", -RTL_ERR_UNSUPPORTED;
	if ((c->lsda_enc != DW_EH_PE_omit && (c->lsda_enc & DW_EH_PE_indirect)) ||
	    (c->fde_enc & DW_EH_PE_indirect))
		return *why = "indirect FDE or LSDA pointer", -RTL_ERR_UNSUPPORTED;
	return 0;
}

/* The FDE record at OFF with its CIE. */
static int load_fde(const struct unw_image *img, size_t off, struct rtl_eh_fde *f,
		    struct rtl_eh_cie *c, const char **why)
{
	struct rtl_eh_frame eh = unw_frame(img);
	int err = rtl_eh_load_fde(&eh, off, f, c, why);
	return err ? err : usable_cie(c, why);
}

/* Calls VISIT on every FDE of the section under a usable CIE, until it
 * returns nonzero (that value is returned). */
struct usable_walk {
	int (*visit)(void *, const struct rtl_eh_fde *);
	void *ctx;
	bool personality;   /* a usable FDE's CIE names a personality routine */
};

static int visit_usable(void *p, const struct rtl_eh_fde *f, const struct rtl_eh_cie *c)
{
	struct usable_walk *w = p;
	const char *why;
	if (usable_cie(c, &why))
		return 0;
	w->personality |= c->pers_enc != DW_EH_PE_omit;
	return w->visit(w->ctx, f);
}

static int scan_as(const struct unw_image *img, int (*visit)(void *, const struct rtl_eh_fde *),
		   void *ctx, bool *personality, const char **why)
{
	struct rtl_eh_frame eh = unw_frame(img);
	struct usable_walk w = { visit, ctx, false };
	int ret = rtl_eh_foreach_fde(&eh, visit_usable, &w, why);
	if (personality)
		*personality = w.personality;
	return ret;
}

static int scan(const struct unw_image *img, int (*visit)(void *, const struct rtl_eh_fde *),
		void *ctx, const char **why)
{
	return scan_as(img, visit, ctx, NULL, why);
}

struct lookup {
	uint64_t pc;
	size_t off;
};

static int visit_lookup(void *ctx, const struct rtl_eh_fde *f)
{
	struct lookup *l = ctx;
	if (f->pc_begin && l->pc >= f->pc_begin && l->pc < f->pc_end) {
		l->off = f->fde_off;
		return 1;
	}
	return 0;
}

/* Finds the FDE over PC, with its CIE: through the index when there is one. */
int unw_find_record(const struct unw_image *img, uint64_t pc, struct rtl_eh_fde *f,
		    struct rtl_eh_cie *c, const char **why)
{
	struct lookup l = { pc, 0 };
	if (img->index) {
		size_t lo = 0, hi = img->nindex;
		while (lo < hi) {   /* first entry that begins after PC */
			size_t mid = (lo + hi) / 2;
			if (img->index[mid].begin <= pc)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (lo == 0 || pc >= img->index[lo - 1].end)
			return *why = "no FDE covers the function", -ENOENT;
		return load_fde(img, img->index[lo - 1].fde_off, f, c, why);
	}
	int ret = scan(img, visit_lookup, &l, why);
	if (ret < 0)
		return ret;
	if (ret == 0)
		return *why = "no FDE covers the function", -ENOENT;
	return load_fde(img, l.off, f, c, why);
}

struct collect {
	struct unw_index_entry *v;
	size_t n, cap;
};

static int visit_collect(void *ctx, const struct rtl_eh_fde *f)
{
	struct collect *k = ctx;
	if (!f->pc_begin || f->pc_end <= f->pc_begin)
		return 0;
	if (rtl_grow(&k->v, &k->cap, k->n + 1, sizeof(*k->v)))
		return -ENOMEM;
	k->v[k->n++] = (struct unw_index_entry){ f->pc_begin, f->pc_end, f->fde_off };
	return 0;
}

static int by_begin(const void *a, const void *b)
{
	const struct unw_index_entry *x = a, *y = b;
	return x->begin < y->begin ? -1 : x->begin > y->begin;
}

int unw_image_index(struct unw_image *img)
{
	struct collect k = { 0 };
	const char *why;
	int err = scan_as(img, visit_collect, &k, &img->personality, &why);
	if (err) {
		free(k.v);
		return err;
	}
	qsort(k.v, k.n, sizeof(*k.v), by_begin);
	free((void *)img->index);
	img->index = k.v;
	img->nindex = k.n;
	return 0;
}

int unw_find_fde(const struct unw_image *img, uint64_t pc, struct unw_fde *out)
{
	struct rtl_eh_fde f;
	struct rtl_eh_cie c;
	const char *why;
	int err = unw_find_record(img, pc, &f, &c, &why);
	if (!err)
		*out = (struct unw_fde){ f.pc_begin, f.pc_end, f.lsda, f.fde_off, f.cie_off };
	return err;
}

/* ---- loading the sections from a file ---- */

static int load_section(Elf *e, Elf_Scn *scn, const GElf_Shdr *sh, uint64_t bias,
			struct unw_region *reg)
{
	Elf_Data *d = elf_getdata(scn, NULL);
	if (!d || sh->sh_type == SHT_NOBITS || d->d_size == 0)
		return 0;
	uint8_t *copy = malloc(d->d_size);
	if (!copy)
		return -ENOMEM;
	memcpy(copy, d->d_buf, d->d_size);
	reg->data = copy;
	reg->size = d->d_size;
	reg->addr = sh->sh_addr + bias;
	return 0;
}

int unw_image_load(const char *path, uint64_t bias, struct unw_image *img)
{
	memset(img, 0, sizeof(*img));
	img->bias = bias;
	img->owned = true;
	if (elf_version(EV_CURRENT) == EV_NONE)
		return -RTL_ERR_BAD_ELF;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	Elf *e = elf_begin(fd, ELF_C_READ, NULL);
	size_t shstr;
	int err = 0;
	if (!e || elf_kind(e) != ELF_K_ELF)
		err = -RTL_ERR_NOT_ELF;
	else if (elf_getshdrstrndx(e, &shstr))
		err = -RTL_ERR_BAD_ELF;
	for (Elf_Scn *scn = NULL; !err && (scn = elf_nextscn(e, scn));) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh))
			continue;
		const char *name = elf_strptr(e, shstr, sh.sh_name);
		if (name && !strcmp(name, ".eh_frame"))
			err = load_section(e, scn, &sh, bias, &img->eh_frame);
		else if (name && !strcmp(name, ".gcc_except_table"))
			err = load_section(e, scn, &sh, bias, &img->except_table);
	}
	if (e)
		elf_end(e);
	close(fd);
	if (!err && !img->eh_frame.size)
		err = -RTL_ERR_BAD_ELF;
	if (!err)
		err = unw_image_index(img);
	if (err)
		unw_image_free(img);
	return err;
}

int unw_image_rebase(const struct unw_image *from, uint64_t bias, struct unw_image *img)
{
	uint64_t d = bias - from->bias;
	struct unw_index_entry *ix = NULL;
	if (from->nindex && !(ix = malloc(from->nindex * sizeof(*ix))))
		return -ENOMEM;
	for (size_t i = 0; i < from->nindex; i++)
		ix[i] = (struct unw_index_entry){ from->index[i].begin + d, from->index[i].end + d,
						  from->index[i].fde_off };
	*img = *from;
	img->bias = bias;
	img->eh_frame.addr += d;
	img->except_table.addr += d;
	if (img->text_base)
		img->text_base += d;
	if (img->data_base)
		img->data_base += d;
	img->index = ix;
	img->owned = false;
	return 0;
}

void unw_image_free(struct unw_image *img)
{
	if (img->owned) {
		free((void *)img->eh_frame.data);
		free((void *)img->except_table.data);
	}
	free((void *)img->index);
	memset(img, 0, sizeof(*img));
}

