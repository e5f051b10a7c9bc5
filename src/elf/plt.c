/* PLT stubs: each stub is an indirect jump through a GOT slot, and the
 * dynamic relocation of that slot (JUMP_SLOT in .rela.plt, GLOB_DAT in
 * .rela.dyn for .plt.got, IRELATIVE for ifuncs in static binaries) names
 * the target. Decoding the jump instead of counting entries handles every
 * layout ld emits: lazy .plt (16-byte entries, "jmp *GOT(%rip)" first),
 * IBT .plt.sec ("endbr64; bnd jmp *GOT(%rip)"), .plt.got (8 or 16 bytes).
 * PLT0 gets a record of its own; the IBT lazy entries in .plt (endbr64,
 * push, jmp PLT0) are reached only through the GOT and get none. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <reticle/error.h>
#include "binary_internal.h"
#include "util/array.h"

struct slot {
	uint64_t got;
	const char *name;
};

struct slots {
	struct slot *v;
	size_t n, cap;
};

static int slot_push(struct slots *s, uint64_t got, const char *name)
{
	if (rtl_grow(&s->v, &s->cap, s->n + 1, sizeof(*s->v)))
		return -ENOMEM;
	s->v[s->n++] = (struct slot){ got, name };
	return 0;
}

static int slot_cmp(const void *a, const void *b)
{
	const struct slot *x = a, *y = b;
	return x->got < y->got ? -1 : x->got > y->got;
}

static const char *slot_find(const struct slots *s, uint64_t got)
{
	size_t lo = 0, hi = s->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (s->v[mid].got < got)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < s->n && s->v[lo].got == got ? s->v[lo].name : NULL;
}

static const char *reloc_name(rtl_binary *bin, Elf_Data *symd, size_t strndx,
			      const GElf_Rela *r)
{
	unsigned type = GELF_R_TYPE(r->r_info);
	char buf[64];

	if (type == R_X86_64_IRELATIVE) {
		/* objdump's spelling for an ifunc slot with no symbol */
		int len = snprintf(buf, sizeof(buf), "*ABS*+0x%llx", (unsigned long long)r->r_addend);
		char *name = rtl_binary_name_room(bin, (size_t)len + 1);
		return name ? memcpy(name, buf, (size_t)len + 1) : NULL;
	}
	if (type != R_X86_64_JUMP_SLOT && type != R_X86_64_GLOB_DAT)
		return NULL;
	GElf_Sym sym;
	if (!symd || !gelf_getsym(symd, (int)GELF_R_SYM(r->r_info), &sym))
		return NULL;
	const char *n = elf_strptr(bin->elf, strndx, sym.st_name);
	return n && *n ? n : NULL;
}

/* Every GOT slot that a dynamic relocation names. */
static int collect_slots(rtl_binary *bin, struct slots *s)
{
	Elf_Scn *scn = NULL;
	while ((scn = elf_nextscn(bin->elf, scn))) {
		GElf_Shdr sh, symsh;
		Elf_Data *d, *symd = NULL;
		size_t strndx = 0;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_RELA || !(sh.sh_flags & SHF_ALLOC))
			continue;
		if (!(d = elf_getdata(scn, NULL)) || !sh.sh_entsize)
			continue;
		Elf_Scn *syms = sh.sh_link ? elf_getscn(bin->elf, sh.sh_link) : NULL;
		if (syms && gelf_getshdr(syms, &symsh) && symsh.sh_type == SHT_DYNSYM) {
			symd = elf_getdata(syms, NULL);
			strndx = symsh.sh_link;
		}
		for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Rela r;
			if (!gelf_getrela(d, (int)i, &r))
				break;
			const char *name = reloc_name(bin, symd, strndx, &r);
			if (name && slot_push(s, r.r_offset, name))
				return -ENOMEM;
		}
	}
	if (s->n > 1)
		qsort(s->v, s->n, sizeof(*s->v), slot_cmp);
	return 0;
}

/* The GOT slot of "jmp *disp(%rip)" at an accepted place in the entry:
 * offset 0, or after "bnd" (f2) and/or "endbr64" (f3 0f 1e fa). */
static int stub_slot(const unsigned char *p, size_t len, uint64_t addr, uint64_t *slot)
{
	static const unsigned char endbr[4] = { 0xf3, 0x0f, 0x1e, 0xfa };
	size_t k = 0;

	if (len >= 4 && !memcmp(p, endbr, 4))
		k = 4;
	if (k < len && p[k] == 0xf2)
		k++;
	if (k + 6 > len || p[k] != 0xff || p[k + 1] != 0x25)
		return 0;
	int32_t disp;
	memcpy(&disp, p + k + 2, 4);
	*slot = addr + k + 6 + (int64_t)disp;
	return 1;
}

int rtl_elf_is_plt_name(const char *name)
{
	return !strcmp(name, ".plt") || !strcmp(name, ".plt.sec") ||
	       !strcmp(name, ".plt.got") || !strcmp(name, ".iplt");
}

/* How many entries resolve to a named GOT slot with stride ES. */
static size_t count_stubs(const unsigned char *p, const GElf_Shdr *sh, uint64_t es,
			  const struct slots *s)
{
	size_t n = 0;
	uint64_t slot;
	for (uint64_t off = 0; off + es <= sh->sh_size; off += es)
		n += stub_slot(p + off, es, sh->sh_addr + off, &slot) && slot_find(s, slot);
	return n;
}

/* "target@plt", at most 511 characters (longer C++ names are cut). */
static const char *plt_name(rtl_binary *bin, const char *target)
{
	enum { MAX = 511 };
	size_t len = strnlen(target, MAX), all = len + 4 < MAX ? len + 4 : MAX;
	char *name = rtl_binary_name_room(bin, all + 1);
	if (!name)
		return NULL;
	memcpy(name, target, len);
	memcpy(name + len, "@plt", all - len);
	name[all] = 0;
	return name;
}

/* Entries are 16 bytes (lazy .plt, .plt.sec, IBT .plt.got) or 8 bytes
 * (.plt.got, the ifunc .plt of a static executable); sh_entsize is often
 * 0, so take the stride under which more entries decode as stubs. */
static int scan_section(rtl_binary *bin, const char *name, const GElf_Shdr *sh,
			const struct slots *s, struct rtl_cands *c)
{
	const unsigned char *p = rtl_binary_ptr(bin, sh->sh_addr, sh->sh_size);
	if (!p)
		return 0;
	uint64_t es = count_stubs(p, sh, 8, s) > count_stubs(p, sh, 16, s) ? 8 : 16;
	for (uint64_t off = 0; off + es <= sh->sh_size; off += es) {
		uint64_t a = sh->sh_addr + off, slot;
		const char *target;
		int err = 0;
		if (stub_slot(p + off, es, a, &slot) && (target = slot_find(s, slot))) {
			err = rtl_cands_push(c, a, es, plt_name(bin, target), RTL_SRC_PLT, RANK_PLT);
		} else if (off == 0 && !strcmp(name, ".plt") && p[0] == 0xff && p[1] == 0x35) {
			err = rtl_cands_push(c, a, es, "PLT0", RTL_SRC_PLT, RANK_PLT);
		}
		if (err)
			return err;
	}
	return 0;
}

int rtl_elf_collect_plt(rtl_binary *bin, struct rtl_cands *c)
{
	struct slots s = { 0 };
	size_t shstrndx;
	Elf_Scn *scn = NULL;
	int err;

	if (elf_getshdrstrndx(bin->elf, &shstrndx))
		return 0;
	if ((err = collect_slots(bin, &s)))
		goto out;
	while ((scn = elf_nextscn(bin->elf, scn))) {
		GElf_Shdr sh;
		const char *name;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS || !(sh.sh_flags & SHF_EXECINSTR))
			continue;
		if (!(name = elf_strptr(bin->elf, shstrndx, sh.sh_name)) || !rtl_elf_is_plt_name(name))
			continue;
		if ((err = scan_section(bin, name, &sh, &s, c)))
			goto out;
	}
out:
	free(s.v);
	return err;
}

uint64_t rtl_binary_plt_slot(const rtl_binary *bin, const rtl_function *f)
{
	uint64_t slot;
	const unsigned char *p = (f->sources & RTL_SRC_PLT) ? rtl_binary_ptr(bin, f->addr, f->size) : NULL;
	return p && stub_slot(p, f->size, f->addr, &slot) ? slot : 0;
}

/* Used by the instrumentability check: is ADDR inside a PLT section? */
int rtl_elf_in_plt(const rtl_binary *bin, uint64_t addr)
{
	const struct rtl_section *sec = rtl_elf_section_at(bin, addr);
	return sec && sec->is_plt;
}

/* Whether the binary takes NAME from another object: an undefined symbol
 * of its dynamic symbol table (version suffixes aside), called through the
 * PLT or through a GOT slot alike (-z now, -fno-plt). */
bool rtl_elf_dynsym_has_any(Elf *elf, const char *const *names, size_t nnames, bool imported)
{
	Elf_Scn *scn = NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNSYM || !sh.sh_entsize ||
		    !(d = elf_getdata(scn, NULL)))
			continue;
		/* a name not in its strings is in no symbol: a search of the bytes
		 * instead of a look at every symbol (cc1 exports all of its own,
		 * for plugins: 1.3 ms a question) */
		Elf_Scn *strs = elf_getscn(elf, sh.sh_link);
		Elf_Data *sd = strs ? elf_getdata(strs, NULL) : NULL;
		bool any = !sd || !sd->d_buf;
		for (size_t k = 0; k < nnames && !any; k++)
			any = memmem(sd->d_buf, sd->d_size, names[k], strlen(names[k])) != NULL;
		for (size_t i = 1; any && i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym sym;
			if (!gelf_getsym(d, (int)i, &sym) || (sym.st_shndx == SHN_UNDEF) != imported)
				continue;
			const char *n = elf_strptr(elf, sh.sh_link, sym.st_name);
			for (size_t k = 0; n && k < nnames; k++) {
				size_t len = strlen(names[k]);
				if (!strncmp(n, names[k], len) && (n[len] == '\0' || n[len] == '@'))
					return true;
			}
		}
	}
	return false;
}

/* Whether .dynsym names NAME (or NAME@VERSION) undefined (IMPORTED) or
 * defined. */
static int dynsym_has(const rtl_binary *bin, const char *name, bool imported)
{
	return rtl_elf_dynsym_has_any(bin->elf, &name, 1, imported);
}

int rtl_binary_imports(const rtl_binary *bin, const char *name)
{
	return dynsym_has(bin, name, true);
}

int rtl_binary_exports(const rtl_binary *bin, const char *name)
{
	return dynsym_has(bin, name, false);
}
