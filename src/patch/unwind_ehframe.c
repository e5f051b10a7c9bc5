/* .eh_frame reading: records, the FDE over an address (walking the section
 * or through a sorted index), and the sections loaded from a file. Every
 * read is bounds-checked: the bytes come from the target's files. Pointer
 * decoding follows libgcc's read_encoded_value (a raw zero stays null). */
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#include <gelf.h>
#include <libelf.h>
#include <reticle/error.h>
#include "patch/unwind_internal.h"

/* ---- .eh_frame records ---- */

struct entry {
	size_t body, end;    /* offsets: after the length field, past the record */
	uint64_t id;         /* 0 for a CIE, else the CIE pointer */
	size_t after_id;
};

/* Record at OFF: 1 at the terminator or the end, 0, or -1 when malformed. */
static int entry_at(const struct unw_region *eh, size_t off, struct entry *e)
{
	struct rd r;
	rd_init(&r, eh, off, eh->size);
	if (off + 4 > eh->size)
		return 1;
	uint64_t len = rd_u(&r, 4);
	bool is64 = len == 0xffffffffu;
	if (len == 0)
		return 1;
	if (is64)
		len = rd_u(&r, 8);
	e->body = (size_t)(r.p - r.start);
	if (r.bad || len > eh->size - e->body || len < (is64 ? 8u : 4u))
		return -1;
	e->end = e->body + (size_t)len;
	e->id = rd_u(&r, is64 ? 8 : 4);
	e->after_id = (size_t)(r.p - r.start);
	return 0;
}


static int parse_cie(const struct unw_image *img, size_t off, struct cie *c, const char **why)
{
	const struct unw_region *eh = &img->eh_frame;
	struct entry e;
	struct rd r;

	if (entry_at(eh, off, &e) || e.id != 0)
		return *why = "CIE pointer does not name a CIE", -RTL_ERR_BAD_INPUT;
	rd_init(&r, eh, e.after_id, e.end);
	memset(c, 0, sizeof(*c));
	c->fde_enc = DW_EH_PE_absptr;
	c->lsda_enc = c->pers_enc = DW_EH_PE_omit;
	c->version = (unsigned)rd_u(&r, 1);
	c->aug = (const char *)r.p;
	const uint8_t *nul = memchr(r.p, 0, (size_t)(r.end - r.p));
	if (!nul)
		return *why = "unterminated CIE augmentation", -RTL_ERR_BAD_INPUT;
	if (c->version != 1 && c->version != 3)
		return *why = "CIE version other than 1 and 3", -RTL_ERR_UNSUPPORTED;
	if (c->aug[0] && c->aug[0] != 'z')
		return *why = "CIE augmentation without 'z'", -RTL_ERR_UNSUPPORTED;
	r.p = nul + 1;
	c->fixed = r.p;
	c->caf = rd_uleb(&r);
	c->daf = rd_sleb(&r);
	if (c->version == 1)
		rd_u(&r, 1);
	else
		rd_uleb(&r);
	c->fixed_end = r.p;
	if (c->aug[0] == 'z') {
		uint64_t alen = rd_uleb(&r);
		if (alen > (uint64_t)(r.end - r.p))
			return *why = "CIE augmentation data past its end", -RTL_ERR_BAD_INPUT;
		const uint8_t *aend = r.p + alen;
		for (const char *a = c->aug + 1; *a; a++) {
			if (*a == 'L')
				c->lsda_enc = (unsigned)rd_u(&r, 1);
			else if (*a == 'R')
				c->fde_enc = (unsigned)rd_u(&r, 1);
			else if (*a == 'P') {
				c->pers_enc = (unsigned)rd_u(&r, 1);
				c->pers = rd_ptr(&r, c->pers_enc, img);
			} else if (*a != 'S' && *a != 'B' && *a != 'G')
				return *why = "unknown CIE augmentation letter", -RTL_ERR_UNSUPPORTED;
		}
		if (r.p > aend)
			return *why = "CIE augmentation data overruns", -RTL_ERR_BAD_INPUT;
		r.p = aend;
	}
	c->insns = r.p;
	c->insns_end = r.end;
	if (r.bad)
		return *why = "truncated CIE", -RTL_ERR_BAD_INPUT;
	if ((c->lsda_enc != DW_EH_PE_omit && (c->lsda_enc & DW_EH_PE_indirect)) ||
	    (c->fde_enc & DW_EH_PE_indirect))
		return *why = "indirect FDE or LSDA pointer", -RTL_ERR_UNSUPPORTED;
	return 0;
}


/* Parses the FDE record E (at OFF) with its CIE C. */
static int parse_fde(const struct unw_image *img, size_t off, const struct entry *e,
		     const struct cie *c, struct fde *f)
{
	struct rd r;
	rd_init(&r, &img->eh_frame, e->after_id, e->end);
	memset(f, 0, sizeof(*f));
	f->pub.fde_off = off;
	f->pub.cie_off = e->body - (size_t)e->id;
	f->pub.pc_begin = rd_ptr(&r, c->fde_enc, img);
	f->pub.pc_end = f->pub.pc_begin + rd_value(&r, c->fde_enc);
	if (c->aug[0] == 'z') {
		uint64_t alen = rd_uleb(&r);
		if (alen > (uint64_t)(r.end - r.p))
			return -RTL_ERR_BAD_INPUT;
		const uint8_t *aend = r.p + alen;
		if (c->lsda_enc != DW_EH_PE_omit)
			f->pub.lsda = rd_ptr(&r, c->lsda_enc, img);
		if (r.p > aend)
			return -RTL_ERR_BAD_INPUT;
		r.p = aend;
	}
	f->insns = r.p;
	f->insns_end = r.end;
	f->insns_off = (size_t)(r.p - r.start);
	return r.bad ? -RTL_ERR_BAD_INPUT : 0;
}

/* The FDE record at OFF with its CIE. */
static int load_fde(const struct unw_image *img, size_t off, struct fde *f, struct cie *c,
		    const char **why)
{
	struct entry e;
	int err;
	if (entry_at(&img->eh_frame, off, &e) || e.id == 0 || e.id > e.body)
		return *why = "malformed .eh_frame record", -RTL_ERR_BAD_INPUT;
	if ((err = parse_cie(img, e.body - (size_t)e.id, c, why)))
		return err;
	if ((err = parse_fde(img, off, &e, c, f)))
		return *why = "truncated FDE", err;
	return 0;
}

/* Calls VISIT on every FDE of the section whose CIE we read, until it
 * returns nonzero (that value is returned). FDEs under a CIE we cannot read
 * are skipped: their ranges are unknown. */
static int scan(const struct unw_image *img, int (*visit)(void *, const struct fde *, const struct cie *),
		void *ctx, const char **why)
{
	const struct unw_region *eh = &img->eh_frame;
	size_t off = 0, cie_off = (size_t)-1;
	bool cie_ok = false;
	struct entry e;
	struct fde f;
	struct cie c;
	int st, ret;

	while ((st = entry_at(eh, off, &e)) == 0) {
		if (e.id != 0) {
			if (e.id > e.body)
				return *why = "FDE's CIE pointer out of the section", -RTL_ERR_BAD_INPUT;
			size_t co = e.body - (size_t)e.id;
			if (co != cie_off) {
				const char *cie_why;
				cie_ok = parse_cie(img, co, &c, &cie_why) == 0;
				cie_off = co;
			}
			if (cie_ok && parse_fde(img, off, &e, &c, &f) == 0 &&
			    (ret = visit(ctx, &f, &c)))
				return ret;
		}
		off = e.end;
	}
	if (st < 0)
		return *why = "malformed .eh_frame record", -RTL_ERR_BAD_INPUT;
	return 0;
}

struct lookup {
	uint64_t pc;
	size_t off;
};

static int visit_lookup(void *ctx, const struct fde *f, const struct cie *c)
{
	struct lookup *l = ctx;
	if (f->pub.pc_begin && l->pc >= f->pub.pc_begin && l->pc < f->pub.pc_end) {
		l->off = f->pub.fde_off;
		return 1;
	}
	return 0;
}

/* Finds the FDE over PC, with its CIE: through the index when there is one. */
int unw_find_record(const struct unw_image *img, uint64_t pc, struct fde *f, struct cie *c,
		const char **why)
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

static int visit_collect(void *ctx, const struct fde *f, const struct cie *c)
{
	struct collect *k = ctx;
	if (!f->pub.pc_begin || f->pub.pc_end <= f->pub.pc_begin)
		return 0;
	if (k->n == k->cap) {
		size_t cap = k->cap ? k->cap * 2 : 256;
		struct unw_index_entry *nv = realloc(k->v, cap * sizeof(*nv));
		if (!nv)
			return -ENOMEM;
		k->v = nv;
		k->cap = cap;
	}
	k->v[k->n++] = (struct unw_index_entry){ f->pub.pc_begin, f->pub.pc_end, f->pub.fde_off };
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
	int err = scan(img, visit_collect, &k, &why);
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
	struct fde f;
	struct cie c;
	const char *why;
	int err = unw_find_record(img, pc, &f, &c, &why);
	if (!err)
		*out = f.pub;
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

void unw_image_free(struct unw_image *img)
{
	if (img->owned) {
		free((void *)img->eh_frame.data);
		free((void *)img->except_table.data);
	}
	free((void *)img->index);
	memset(img, 0, sizeof(*img));
}

