/* rtl_binary: opening, header checks, segments and reads of the file image.
 * Discovery itself lives in symbols.c, plt.c, ehframe.c and functions.c. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <reticle/error.h>
#include "util/log.h"
#include "binary_internal.h"
#include "util/array.h"

/* Checks the identification and the header by hand, before libelf sees the
 * file, so that each kind of bad input gets its own error code. */
static int check_header(const unsigned char *p, size_t got, size_t size)
{
	if (got < sizeof(Elf64_Ehdr))
		size = got;  /* the file is shorter than a header */
	if (size < 4 || memcmp(p, ELFMAG, SELFMAG))
		return -RTL_ERR_NOT_ELF;
	if (size < EI_NIDENT)
		return -RTL_ERR_TRUNCATED;
	if (p[EI_CLASS] != ELFCLASS64 || p[EI_DATA] != ELFDATA2LSB)
		return -RTL_ERR_WRONG_ARCH;
	if (size < sizeof(Elf64_Ehdr))
		return -RTL_ERR_TRUNCATED;
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)p;
	if (eh->e_machine != EM_X86_64)
		return -RTL_ERR_WRONG_ARCH;
	if (eh->e_type != ET_EXEC && eh->e_type != ET_DYN)
		return -RTL_ERR_BAD_ELF;
	if (eh->e_phnum && eh->e_phentsize != sizeof(Elf64_Phdr))
		return -RTL_ERR_BAD_ELF;
	if (eh->e_shnum && eh->e_shentsize != sizeof(Elf64_Shdr))
		return -RTL_ERR_BAD_ELF;
	if (eh->e_phoff > size || (size - eh->e_phoff) / sizeof(Elf64_Phdr) < eh->e_phnum)
		return -RTL_ERR_TRUNCATED;
	if (eh->e_shoff > size || (size - eh->e_shoff) / sizeof(Elf64_Shdr) < eh->e_shnum)
		return -RTL_ERR_TRUNCATED;
	return 0;
}

/* Loadable segments must lie inside the file; a cut file fails here. */
static int load_segments(rtl_binary *bin)
{
	size_t n;
	int interp_seen = 0, dynamic_seen = 0;

	if (elf_getphdrnum(bin->elf, &n))
		return -RTL_ERR_BAD_ELF;
	bin->segs = calloc(n ? n : 1, sizeof(*bin->segs));
	if (!bin->segs)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;
		if (!gelf_getphdr(bin->elf, i, &ph))
			return -RTL_ERR_BAD_ELF;
		if (ph.p_type == PT_LOAD || ph.p_type == PT_INTERP) {
			if (ph.p_offset > bin->image_size || ph.p_filesz > bin->image_size - ph.p_offset)
				return -RTL_ERR_TRUNCATED;
		}
		if (ph.p_type == PT_DYNAMIC)
			dynamic_seen = 1;
		if (ph.p_type == PT_GNU_RELRO) {
			bin->relro_lo = ph.p_vaddr;
			bin->relro_hi = ph.p_vaddr + ph.p_memsz;
		}
		if (ph.p_type == PT_INTERP) {
			const char *s = (const char *)bin->image + ph.p_offset;
			interp_seen = 1;
			if (ph.p_filesz && memchr(s, 0, ph.p_filesz))
				bin->interp = s;
		}
		if (ph.p_type != PT_LOAD)
			continue;
		if (ph.p_filesz > ph.p_memsz || ph.p_vaddr + ph.p_memsz < ph.p_vaddr)
			return -RTL_ERR_BAD_ELF;
		bin->segs[bin->nsegs++] = (rtl_segment){ ph.p_vaddr, ph.p_memsz, ph.p_offset,
							 ph.p_filesz, ph.p_flags };
	}
	if (!bin->nsegs)
		return -RTL_ERR_BAD_ELF;
	bin->is_static = !interp_seen && !dynamic_seen;
	return 0;
}

static int sec_cmp(const void *a, const void *b)
{
	const struct rtl_section *x = a, *y = b;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* Sections with file contents must lie inside the file too. The allocated
 * ones (but .tbss, which overlaps others) go in bin->secs for lookups. */
static int check_sections(rtl_binary *bin)
{
	size_t shnum, shstrndx;
	Elf_Scn *scn = NULL;

	if (elf_getshdrnum(bin->elf, &shnum) || elf_getshdrstrndx(bin->elf, &shstrndx))
		return -RTL_ERR_BAD_ELF;
	if (!(bin->secs = calloc(shnum ? shnum : 1, sizeof(*bin->secs))))
		return -ENOMEM;
	while ((scn = elf_nextscn(bin->elf, scn))) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh))
			return -RTL_ERR_BAD_ELF;
		if (sh.sh_type != SHT_NOBITS && sh.sh_type != SHT_NULL &&
		    (sh.sh_offset > bin->image_size || sh.sh_size > bin->image_size - sh.sh_offset))
			return -RTL_ERR_TRUNCATED;
		if (!(sh.sh_flags & SHF_ALLOC) || !sh.sh_size || bin->nsecs >= shnum ||
		    (sh.sh_type == SHT_NOBITS && (sh.sh_flags & SHF_TLS)))
			continue;
		const char *name = elf_strptr(bin->elf, shstrndx, sh.sh_name);
		bin->secs[bin->nsecs++] = (struct rtl_section){ sh.sh_addr, sh.sh_size, sh.sh_flags,
								 name && rtl_elf_is_plt_name(name) };
	}
	if (bin->nsecs > 1)
		qsort(bin->secs, bin->nsecs, sizeof(*bin->secs), sec_cmp);
	return 0;
}

/* What the dynamic section says about the binary's kind and its text. */
struct dyn_facts {
	int pie;        /* DF_1_PIE */
	int soname;     /* DT_SONAME */
	int textrel;    /* DT_TEXTREL or DF_TEXTREL: the loader writes into the
			 * text, which then differs from the file's bytes */
};

static struct dyn_facts dyn_facts(rtl_binary *bin)
{
	struct dyn_facts f = { 0 };
	Elf_Scn *scn = NULL;
	while ((scn = elf_nextscn(bin->elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNAMIC || !(d = elf_getdata(scn, NULL)))
			continue;
		for (size_t i = 0; sh.sh_entsize && i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Dyn dyn;
			if (!gelf_getdyn(d, (int)i, &dyn) || dyn.d_tag == DT_NULL)
				break;
			f.pie |= dyn.d_tag == DT_FLAGS_1 && (dyn.d_un.d_val & DF_1_PIE);
			f.soname |= dyn.d_tag == DT_SONAME;
			f.textrel |= dyn.d_tag == DT_TEXTREL ||
				     (dyn.d_tag == DT_FLAGS && (dyn.d_un.d_val & DF_TEXTREL));
		}
	}
	return f;
}

/* ET_DYN is a PIE or a shared object: DF_1_PIE says so (binutils >= 2.31);
 * otherwise a PT_INTERP without a DT_SONAME is a PIE. libc.so.6 has an
 * interpreter and a soname: it is a shared object that can also run. */
static enum rtl_binary_kind kind_of(const rtl_binary *bin, struct dyn_facts f)
{
	if (bin->ehdr.e_type == ET_EXEC)
		return RTL_BIN_EXEC;
	if (f.pie)
		return RTL_BIN_PIE;
	return bin->interp && !f.soname ? RTL_BIN_PIE : RTL_BIN_SHARED;
}

static int open_image(rtl_binary *bin)
{
	struct stat st;

	if (fstat(bin->fd, &st))
		return -errno;
	if (!S_ISREG(st.st_mode))
		return S_ISDIR(st.st_mode) ? -EISDIR : -RTL_ERR_NOT_ELF;
	unsigned char hdr[sizeof(Elf64_Ehdr)];
	ssize_t got = pread(bin->fd, hdr, sizeof(hdr), 0);
	if (got < 0)
		return -errno;
	int err = check_header(hdr, (size_t)got, (size_t)st.st_size);
	if (err)
		return err;
	bin->elf = elf_begin(bin->fd, ELF_C_READ_MMAP, NULL);
	if (!bin->elf || elf_kind(bin->elf) != ELF_K_ELF)
		return -RTL_ERR_BAD_ELF;
	bin->image = (const unsigned char *)elf_rawfile(bin->elf, &bin->image_size);
	if (!bin->image || !gelf_getehdr(bin->elf, &bin->ehdr))
		return -RTL_ERR_BAD_ELF;
	if ((err = load_segments(bin)) || (err = check_sections(bin)))
		return err;
	struct dyn_facts facts = dyn_facts(bin);
	bin->kind = kind_of(bin, facts);
	bin->textrel = facts.textrel;
	return 0;
}

void *rtl_scratch_get(struct rtl_scratch *s, size_t size)
{
	if (size > s->size) {
		void *p = realloc(s->p, size);
		if (!p)
			return NULL;
		s->p = p;
		s->size = size;
	}
	return s->p;
}

int rtl_elf_discover(rtl_binary *bin)
{
	struct rtl_cands c = { 0 };
	struct rtl_scratch s = { 0 };
	int err;

	if ((err = rtl_elf_collect_symbols(bin, &c)) || (err = rtl_elf_collect_plt(bin, &c)) ||
	    (err = rtl_elf_collect_fdes(bin, &c)) || (err = rtl_elf_collect_gopclntab(bin, &c)) ||
	    (err = rtl_elf_collect_entries(bin, &c)))
		goto out;
	/* The scratch block for every sort at once, as large as the last (the
	 * code pointers') may need: growing it would copy what it holds. Its
	 * pages are touched only as the sorts use them. */
	size_t most = rtl_elf_code_pointer_bound(bin) * sizeof(rtl_code_pointer);
	(void)rtl_scratch_get(&s, most > c.n * sizeof(*c.v) ? most : c.n * sizeof(*c.v));
	if ((err = rtl_elf_build_functions(bin, &c, 0, &s)))
		goto out;
	/* The gaps the first build left uncovered: added in place, or else
	 * (split at call targets) by a second build. */
	size_t before = c.n;
	if ((err = rtl_elf_collect_gaps(bin, &c)))
		goto out;
	if (c.n != before && (err = rtl_elf_add_gaps(bin, &c, before, &s)) > 0)
		err = rtl_elf_build_functions(bin, &c, before, &s);
	if (err)
		goto out;
	if ((err = rtl_elf_name_functions(bin)))
		goto out;
	/* the candidates' pages, done with, hold the code pointers' words */
	struct rtl_scratch room = { c.v, c.cap * sizeof(*c.v) };
	c.v = NULL;
	err = rtl_elf_collect_code_pointers(bin, &room, &s);
	free(room.p);
out:
	free(c.v);
	free(s.p);
	return err;
}

static int open_binary(const char *path, int find_functions, rtl_binary **out)
{
	rtl_binary *bin;
	int err;

	*out = NULL;
	if (elf_version(EV_CURRENT) == EV_NONE)
		return -RTL_ERR_BAD_ELF;
	bin = calloc(1, sizeof(*bin));
	if (!bin)
		return -ENOMEM;
	bin->debug_fd = -1;
	bin->eh_plain = -1;
	bin->fd = open(path, O_RDONLY | O_CLOEXEC);
	bin->path = strdup(path);
	if (bin->fd < 0) {
		err = -errno;
		goto fail;
	}
	if (!bin->path) {
		err = -ENOMEM;
		goto fail;
	}
	if ((err = open_image(bin)) || (find_functions && (err = rtl_elf_discover(bin))))
		goto fail;
	*out = bin;
	return 0;
fail:
	rtl_binary_close(bin);
	return err;
}

int rtl_binary_open(const char *path, rtl_binary **out)
{
	return open_binary(path, 1, out);
}

int rtl_binary_open_image(const char *path, rtl_binary **out)
{
	return open_binary(path, 0, out);
}

void rtl_binary_close(rtl_binary *bin)
{
	if (!bin)
		return;
	if (bin->dwarf)
		dwarf_end(bin->dwarf);
	if (bin->debug_elf)
		elf_end(bin->debug_elf);
	if (bin->debug_fd >= 0)
		close(bin->debug_fd);
	free(bin->debug_path);
	if (bin->facts_release)
		bin->facts_release(bin->facts_owner);
	if (bin->elf)
		elf_end(bin->elf);
	if (bin->fd >= 0)
		close(bin->fd);
	for (size_t i = 0; i < bin->nstrings; i++)
		free(bin->strings[i]);
	free(bin->strings);
	free(bin->src_paths);
	free(bin->segs);
	free(bin->secs);
	free(bin->funcs);
	free(bin->cover);
	free(bin->page_first);
	if (!bin->cptrs_borrowed)
		free(bin->cptrs);
	free(bin->path);
	free(bin);
}

const char *rtl_binary_keep_string(rtl_binary *bin, char *s)
{
	if (!s)
		return NULL;
	if (rtl_grow(&bin->strings, &bin->capstrings, bin->nstrings + 1, sizeof(*bin->strings))) {
		free(s);
		return NULL;
	}
	bin->strings[bin->nstrings++] = s;
	return s;
}

char *rtl_binary_name_room(rtl_binary *bin, size_t len)
{
	enum { BLOCK = 16384 };
	if (len > bin->room_left) {
		size_t size = len > BLOCK ? len : BLOCK;
		char *block = (char *)rtl_binary_keep_string(bin, malloc(size));
		if (!block)
			return NULL;
		bin->room = block;
		bin->room_left = size;
	}
	char *p = bin->room;
	bin->room += len;
	bin->room_left -= len;
	return p;
}

const char *rtl_binary_path(const rtl_binary *bin) { return bin->path; }
enum rtl_binary_kind rtl_binary_kind(const rtl_binary *bin) { return bin->kind; }
int rtl_binary_is_static(const rtl_binary *bin) { return bin->is_static; }
int rtl_binary_has_textrel(const rtl_binary *bin) { return bin->textrel; }
uint64_t rtl_binary_entry(const rtl_binary *bin) { return bin->ehdr.e_entry; }
const char *rtl_binary_interp(const rtl_binary *bin) { return bin->interp; }
size_t rtl_binary_segment_count(const rtl_binary *bin) { return bin->nsegs; }

const rtl_segment *rtl_binary_segment(const rtl_binary *bin, size_t i)
{
	return i < bin->nsegs ? &bin->segs[i] : NULL;
}

static const rtl_segment *segment_of(const rtl_binary *bin, uint64_t vaddr, size_t len)
{
	for (size_t i = 0; i < bin->nsegs; i++) {
		const rtl_segment *s = &bin->segs[i];
		if (vaddr >= s->vaddr && vaddr - s->vaddr <= s->memsz && len <= s->memsz - (vaddr - s->vaddr))
			return s;
	}
	return NULL;
}

int rtl_binary_read(const rtl_binary *bin, uint64_t vaddr, void *buf, size_t len)
{
	const rtl_segment *s = segment_of(bin, vaddr, len);
	if (!s)
		return -RTL_ERR_BAD_ELF;
	uint64_t off = vaddr - s->vaddr;
	size_t from_file = off < s->filesz ? (size_t)(s->filesz - off) : 0;
	if (from_file > len)
		from_file = len;
	if (from_file)
		memcpy(buf, bin->image + s->offset + off, from_file);
	memset((char *)buf + from_file, 0, len - from_file);
	return 0;
}

int rtl_binary_is_readonly(const rtl_binary *bin, uint64_t vaddr, size_t len)
{
	if (vaddr >= bin->relro_lo && vaddr + len <= bin->relro_hi)
		return 1;
	const rtl_segment *s = segment_of(bin, vaddr, len);
	return s && !(s->flags & PF_W);
}

const unsigned char *rtl_binary_ptr(const rtl_binary *bin, uint64_t vaddr, size_t len)
{
	const rtl_segment *s = segment_of(bin, vaddr, len);
	if (!s || vaddr - s->vaddr > s->filesz || len > s->filesz - (vaddr - s->vaddr))
		return NULL;
	return bin->image + s->offset + (vaddr - s->vaddr);
}

const struct rtl_section *rtl_elf_section_at(const rtl_binary *bin, uint64_t addr)
{
	size_t lo = 0, hi = bin->nsecs;
	while (lo < hi) {  /* first section starting after ADDR */
		size_t mid = lo + (hi - lo) / 2;
		if (bin->secs[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo && addr - bin->secs[lo - 1].addr < bin->secs[lo - 1].size)
		return &bin->secs[lo - 1];
	return NULL;
}

Elf_Scn *rtl_binary_find_section(const rtl_binary *bin, const char *name, GElf_Shdr *shdr)
{
	size_t shstrndx;
	Elf_Scn *scn = NULL;

	if (elf_getshdrstrndx(bin->elf, &shstrndx))
		return NULL;
	while ((scn = elf_nextscn(bin->elf, scn))) {
		GElf_Shdr sh;
		const char *n;
		if (!gelf_getshdr(scn, &sh) || !(n = elf_strptr(bin->elf, shstrndx, sh.sh_name)))
			continue;
		if (!strcmp(n, name)) {
			if (shdr)
				*shdr = sh;
			return scn;
		}
	}
	return NULL;
}
