/* Loads a static Linux ELF into guest memory and builds the initial stack
 * (argc, argv, envp, auxv) as the kernel does. Also the registry of
 * descriptions built into libreticle. */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <reticle/error.h>
#include "sim/machine.h"

extern const struct rtl_sim_isa rtl_sim_isa_rv64, rtl_sim_isa_mips32;
static const struct rtl_sim_isa *const builtin[] = { &rtl_sim_isa_rv64, &rtl_sim_isa_mips32 };
static const char *const builtin_names[] = { "rv64", "mips32", NULL };

const char *const *rtl_sim_isas(void) { return builtin_names; }

const struct rtl_sim_isa *sim_isa_by_name(const char *name)
{
	for (size_t i = 0; i < sizeof(builtin) / sizeof(builtin[0]); i++)
		if (!strcmp(builtin[i]->name, name))
			return builtin[i];
	return NULL;
}

const struct rtl_sim_isa *sim_isa_by_machine(int machine, int elf_class)
{
	for (size_t i = 0; i < sizeof(builtin) / sizeof(builtin[0]); i++)
		if (builtin[i]->elf_machine == machine && builtin[i]->elf_class == elf_class)
			return builtin[i];
	return NULL;
}

 /* Makes [addr, addr + len) of guest memory accessible (read and write:
 * page permissions of the guest are not modelled, only presence). */
int sim_map(struct rtl_sim *m, uint64_t addr, uint64_t len)
{
	uint64_t start = addr & ~4095ull, end = (addr + len + 4095) & ~4095ull;
	if (end > m->mem_size || end < start)
		return -ENOMEM;
	return mprotect(m->mem + start, end - start, PROT_READ | PROT_WRITE) < 0 ? -errno : 0;
}

int sim_unmap(struct rtl_sim *m, uint64_t addr, uint64_t len)
{
	uint64_t start = addr & ~4095ull, end = (addr + len + 4095) & ~4095ull;
	if (end > m->mem_size || end < start || addr & 4095)
		return -EINVAL;
	madvise(m->mem + start, end - start, MADV_DONTNEED);
	return mprotect(m->mem + start, end - start, PROT_NONE) < 0 ? -errno : 0;
}

/* A register named "FILE[INDEX]" (or "FILE"): its address in the state. */
uint64_t *sim_reg_ptr(struct rtl_sim *m, const char *spec, unsigned *size)
{
	char name[32];
	unsigned idx = 0;
	const char *br = strchr(spec, '[');
	size_t n = br ? (size_t)(br - spec) : strlen(spec);

	if (n >= sizeof name)
		return NULL;
	memcpy(name, spec, n);
	name[n] = 0;
	if (br)
		idx = strtoul(br + 1, NULL, 0);
	for (unsigned i = 0; i < m->isa->nregs; i++) {
		const struct rtl_sim_regdesc *r = &m->isa->regs[i];
		if (strcmp(r->name, name) || idx >= r->count)
			continue;
		*size = r->size;
		return (uint64_t *)((uint8_t *)m->cpu + r->offset + (size_t)idx * r->size);
	}
	return NULL;
}

struct elfinfo { int cls, data, machine, type; uint64_t entry, phoff; unsigned phnum, phentsize; };

static int read_ehdr(const uint8_t *b, size_t n, struct elfinfo *e)
{
	if (n < 52 || memcmp(b, ELFMAG, SELFMAG))
		return -RTL_ERR_NOT_ELF;
	e->cls = b[EI_CLASS] == ELFCLASS64 ? 64 : 32;
	e->data = b[EI_DATA];
	if (e->data != ELFDATA2LSB)
		return -RTL_ERR_UNSUPPORTED;   /* big-endian guests: not yet */
	if (e->cls == 64) {
		const Elf64_Ehdr *h = (const void *)b;
		if (n < sizeof *h)
			return -RTL_ERR_TRUNCATED;
		e->machine = h->e_machine, e->type = h->e_type, e->entry = h->e_entry;
		e->phoff = h->e_phoff, e->phnum = h->e_phnum, e->phentsize = h->e_phentsize;
	} else {
		const Elf32_Ehdr *h = (const void *)b;
		e->machine = h->e_machine, e->type = h->e_type, e->entry = h->e_entry;
		e->phoff = h->e_phoff, e->phnum = h->e_phnum, e->phentsize = h->e_phentsize;
	}
	if (e->phoff + (uint64_t)e->phnum * e->phentsize > n)
		return -RTL_ERR_TRUNCATED;
	return 0;
}

static void get_phdr(const uint8_t *b, const struct elfinfo *e, unsigned i, Elf64_Phdr *p)
{
	const uint8_t *q = b + e->phoff + (size_t)i * e->phentsize;
	if (e->cls == 64) {
		memcpy(p, q, sizeof *p);
		return;
	}
	Elf32_Phdr h;   /* copied: a header offset need not be aligned */
	memcpy(&h, q, sizeof h);
	p->p_type = h.p_type, p->p_offset = h.p_offset, p->p_vaddr = h.p_vaddr;
	p->p_filesz = h.p_filesz, p->p_memsz = h.p_memsz, p->p_flags = h.p_flags;
}

static void add_sym(struct rtl_sim *m, uint64_t addr, uint64_t size, int type, const char *name)
{
	if (type != STT_FUNC || !addr)
		return;
	m->syms[m->nsyms].addr = addr;
	m->syms[m->nsyms].size = size;
	m->syms[m->nsyms++].name = strdup(name);
}

static void read_symbols32(struct rtl_sim *m, const uint8_t *b, size_t n)
{
	Elf32_Ehdr h;
	memcpy(&h, b, sizeof h);
	if (!h.e_shoff || h.e_shoff + (uint64_t)h.e_shnum * sizeof(Elf32_Shdr) > n)
		return;
	for (unsigned i = 0; i < h.e_shnum; i++) {
		Elf32_Shdr sh, strs;   /* copies: offsets in the file need not be aligned */
		memcpy(&sh, b + h.e_shoff + (size_t)i * sizeof sh, sizeof sh);
		if (sh.sh_type != SHT_SYMTAB || sh.sh_link >= h.e_shnum)
			continue;
		memcpy(&strs, b + h.e_shoff + (size_t)sh.sh_link * sizeof strs, sizeof strs);
		if ((uint64_t)sh.sh_offset + sh.sh_size > n || (uint64_t)strs.sh_offset + strs.sh_size > n)
			return;
		size_t cnt = sh.sh_size / sizeof(Elf32_Sym);
		m->syms = calloc(cnt + 1, sizeof *m->syms);
		for (size_t k = 0; k < cnt && m->syms; k++) {
			Elf32_Sym sy;
			memcpy(&sy, b + sh.sh_offset + k * sizeof sy, sizeof sy);
			if (sy.st_name < strs.sh_size && memchr(b + strs.sh_offset + sy.st_name, 0, strs.sh_size - sy.st_name))
				add_sym(m, sy.st_value, sy.st_size, ELF32_ST_TYPE(sy.st_info),
					(const char *)b + strs.sh_offset + sy.st_name);
		}
		return;
	}
}

static void read_symbols(struct rtl_sim *m, const uint8_t *b, size_t n, const struct elfinfo *e)
{
	if (e->cls != 64)
		return read_symbols32(m, b, n);
	Elf64_Ehdr h;
	memcpy(&h, b, sizeof h);
	if (!h.e_shoff || h.e_shoff > n || (uint64_t)h.e_shnum * sizeof(Elf64_Shdr) > n - h.e_shoff)
		return;
	for (unsigned i = 0; i < h.e_shnum; i++) {
		Elf64_Shdr sh, strs;   /* copies: offsets in the file need not be aligned */
		memcpy(&sh, b + h.e_shoff + (size_t)i * sizeof sh, sizeof sh);
		if (sh.sh_type != SHT_SYMTAB || sh.sh_link >= h.e_shnum)
			continue;
		memcpy(&strs, b + h.e_shoff + (size_t)sh.sh_link * sizeof strs, sizeof strs);
		if (sh.sh_offset > n || sh.sh_size > n - sh.sh_offset || strs.sh_offset > n || strs.sh_size > n - strs.sh_offset)
			return;
		size_t cnt = sh.sh_size / sizeof(Elf64_Sym);
		m->syms = calloc(cnt + 1, sizeof *m->syms);
		for (size_t k = 0; k < cnt && m->syms; k++) {
			Elf64_Sym sy;
			memcpy(&sy, b + sh.sh_offset + k * sizeof sy, sizeof sy);
			if (sy.st_name < strs.sh_size && memchr(b + strs.sh_offset + sy.st_name, 0, strs.sh_size - sy.st_name))
				add_sym(m, sy.st_value, sy.st_size, ELF64_ST_TYPE(sy.st_info),
					(const char *)b + strs.sh_offset + sy.st_name);
		}
		return;
	}
}

static int map_segments(struct rtl_sim *m, const uint8_t *b, size_t n, const struct elfinfo *e)
{
	uint64_t end = 0;

	for (unsigned i = 0; i < e->phnum; i++) {
		Elf64_Phdr p;
		get_phdr(b, e, i, &p);
		if (p.p_type == PT_INTERP || p.p_type == PT_DYNAMIC) {
			snprintf(m->msg, sizeof m->msg, "%s is dynamically linked: only static programs can be simulated", m->path);
			return -RTL_ERR_UNSUPPORTED;
		}
		if (p.p_type == PT_PHDR)
			m->phdr = p.p_vaddr;
		if (p.p_type != PT_LOAD)
			continue;
		if (p.p_offset > n || p.p_filesz > n - p.p_offset || p.p_filesz > p.p_memsz ||
		    p.p_vaddr >= SIM_MMAP_BASE || p.p_memsz >= SIM_MMAP_BASE - p.p_vaddr) {
			snprintf(m->msg, sizeof m->msg, "%s: segment %u out of bounds", m->path, i);
			return -RTL_ERR_BAD_ELF;
		}
		if (sim_map(m, p.p_vaddr, p.p_memsz) < 0) {
			snprintf(m->msg, sizeof m->msg, "%s: cannot map segment %u", m->path, i);
			return -ENOMEM;
		}
		memcpy(m->mem + p.p_vaddr, b + p.p_offset, p.p_filesz);
		if (p.p_offset == 0 && !m->phdr)
			m->phdr = p.p_vaddr + e->phoff;
		if (p.p_vaddr + p.p_memsz > end)
			end = p.p_vaddr + p.p_memsz;
		m->segs = realloc(m->segs, sizeof(*m->segs) * (m->nsegs + 1));
		m->segs[m->nsegs++] = (struct seg){ p.p_vaddr, p.p_memsz, p.p_filesz, p.p_offset, p.p_flags };
	}
	m->brk_start = m->brk = (end + 4095) & ~4095ull;
	return 0;
}

/* Pushes the initial stack; word is 4 or 8 bytes. Returns the stack pointer. */
static uint64_t build_stack(struct rtl_sim *m, int word, int argc, char **argv, char **envp)
{
	uint64_t sp = SIM_STACK_TOP, random, execfn, *ptrs;
	int envc = 0;

	while (envp && envp[envc])
		envc++;
	ptrs = calloc(argc + envc + 2, sizeof *ptrs);
	for (int i = argc - 1; i >= 0; i--) {
		sp -= strlen(argv[i]) + 1;
		strcpy((char *)m->mem + sp, argv[i]);
		ptrs[i] = sp;
	}
	for (int i = envc - 1; i >= 0; i--) {
		sp -= strlen(envp[i]) + 1;
		strcpy((char *)m->mem + sp, envp[i]);
		ptrs[argc + i] = sp;
	}
	execfn = ptrs[0];
	sp &= ~15ull;
	sp -= 16;
	random = sp;
	for (int i = 0; i < 16; i++)
		m->mem[sp + i] = (uint8_t)(rand() ^ (i * 37));
	uint64_t auxv[][2] = {
		{ AT_PHDR, m->phdr }, { AT_PHENT, m->phent }, { AT_PHNUM, m->phnum }, { AT_PAGESZ, 4096 },
		{ AT_BASE, 0 }, { AT_FLAGS, 0 }, { AT_ENTRY, m->entry }, { AT_UID, getuid() },
		{ AT_EUID, geteuid() }, { AT_GID, getgid() }, { AT_EGID, getegid() }, { AT_SECURE, 0 },
		{ AT_HWCAP, 0 }, { AT_CLKTCK, 100 }, { AT_RANDOM, random }, { AT_EXECFN, execfn }, { AT_NULL, 0 },
	};
	int nwords = 1 + argc + 1 + envc + 1 + (int)(sizeof auxv / sizeof auxv[0]) * 2;
	sp -= (uint64_t)nwords * word;
	sp &= ~15ull;
	uint64_t q = sp;
#define PUT(v) do { uint64_t v_ = (v); memcpy(m->mem + q, &v_, word); q += word; } while (0)
	PUT(argc);
	for (int i = 0; i < argc; i++)
		PUT(ptrs[i]);
	PUT(0);
	for (int i = 0; i < envc; i++)
		PUT(ptrs[argc + i]);
	PUT(0);
	for (size_t i = 0; i < sizeof auxv / sizeof auxv[0]; i++) {
		PUT(auxv[i][0]);
		PUT(auxv[i][1]);
	}
#undef PUT
	free(ptrs);
	return sp;
}

/* For messages about a program of another machine. */
static const char *machine_name(int machine)
{
	switch (machine) {
	case EM_386: return "i386";
	case EM_X86_64: return "x86-64";
	case EM_AARCH64: return "AArch64";
	case EM_ARM: return "ARM";
	case EM_RISCV: return "RISC-V";
	case EM_MIPS: return "MIPS";
	case EM_PPC: return "PowerPC";
	case EM_PPC64: return "PowerPC64";
	case EM_S390: return "S/390";
	case EM_SPARCV9: return "SPARC V9";
	case EM_LOONGARCH: return "LoongArch";
	default: return "unknown machine";
	}
}

static int read_whole(const char *path, uint8_t **buf, size_t *n)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		int dir = S_ISDIR(st.st_mode);
		close(fd);
		return dir ? -EISDIR : -ENOEXEC;   /* a device, a pipe: not a program file */
	}
	*n = st.st_size;
	*buf = malloc(*n + 1);
	if (!*buf || pread(fd, *buf, *n, 0) != (ssize_t)*n) {
		free(*buf);
		close(fd);
		return -EIO;
	}
	close(fd);
	return 0;
}

int sim_load(struct rtl_sim *m, const char *isa, const char *path, int argc, char **argv, char **envp)
{
	struct elfinfo e;
	uint8_t *b = NULL;
	size_t n = 0;
	int err;

	m->path = strdup(path);
	if ((err = read_whole(path, &b, &n)) < 0) {
		snprintf(m->msg, sizeof m->msg, "%s: %s", path, err == -EISDIR ? "is a directory, not a program" :
			 err == -ENOEXEC ? "not a regular file, not a program" : strerror(-err));
		return err;
	}
	if ((err = read_ehdr(b, n, &e)) < 0) {
		snprintf(m->msg, sizeof m->msg, "%s: %s", path, rtl_strerror(err));
		goto out;
	}
	if (isa && (strchr(isa, '/') || strstr(isa, ".nml"))) {
		if ((err = sim_isa_from_file(isa, &m->isa, m->msg, sizeof m->msg)) < 0)
			goto out;
	} else {
		m->isa = isa ? sim_isa_by_name(isa) : sim_isa_by_machine(e.machine, e.cls);
	}
	if (!m->isa) {
		if (isa)
			snprintf(m->msg, sizeof m->msg, "no description named '%s' (built in: rv64, mips32; or a"
				 " description FILE.nml)", isa);
		else
			snprintf(m->msg, sizeof m->msg, "%s: ELF machine %d (%s, %d-bit) has no description (built in:"
				 " rv64, mips32)", path, e.machine, machine_name(e.machine), e.cls);
		err = -RTL_ERR_WRONG_ARCH;
		goto out;
	}
	if (m->isa->elf_machine != e.machine || m->isa->elf_class != e.cls) {
		snprintf(m->msg, sizeof m->msg, "%s: ELF machine %d (%s, %d-bit) is not %s", path, e.machine,
			 machine_name(e.machine), e.cls, m->isa->name);
		err = -RTL_ERR_WRONG_ARCH;
		goto out;
	}
	for (unsigned i = 0; i < e.phnum; i++) {
		Elf64_Phdr p;
		get_phdr(b, &e, i, &p);
		if (p.p_type == PT_INTERP) {
			snprintf(m->msg, sizeof m->msg, "%s is dynamically linked: only static programs can be simulated", path);
			err = -RTL_ERR_UNSUPPORTED;
			goto out;
		}
	}
	if (e.type != ET_EXEC) {
		snprintf(m->msg, sizeof m->msg, "%s: not a static executable (ELF type %d)", path, e.type);
		err = -RTL_ERR_UNSUPPORTED;
		goto out;
	}
	m->mem_size = 1ull << SIM_MEM_BITS;
	/* a slack page after the reservation: an access at its last bytes stays mapped */
	/* inaccessible until the loader, brk or mmap map a range: a guest access
	 * elsewhere faults, as on Linux (run.c turns the fault into SIGSEGV) */
	m->mem = mmap(NULL, m->mem_size + SIM_MEM_SLACK, PROT_NONE,
		      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (m->mem == MAP_FAILED) {
		m->mem = NULL;
		err = -errno;
		snprintf(m->msg, sizeof m->msg, "cannot reserve guest memory: %s", strerror(errno));
		goto out;
	}
	m->cpu = calloc(1, m->isa->state_size);
	m->cpu->mem = m->mem;
	m->cpu->mem_mask = m->mem_size - 1;
	m->cpu->machine = m;
	m->entry = e.entry;
	m->phnum = e.phnum;
	m->phent = e.phentsize;
	m->mmap_next = SIM_MMAP_BASE;
	if ((err = map_segments(m, b, n, &e)) < 0)
		goto out;
	read_symbols(m, b, n, &e);
	unsigned size;
	uint64_t *sp = sim_reg_ptr(m, m->isa->stack_pointer, &size);
	if (!sp) {
		snprintf(m->msg, sizeof m->msg, "description %s names no stack pointer register", m->isa->name);
		err = -RTL_ERR_BAD_INPUT;
		goto out;
	}
	if ((err = sim_map(m, SIM_STACK_TOP - SIM_STACK_SIZE, SIM_STACK_SIZE)) < 0) {
		snprintf(m->msg, sizeof m->msg, "cannot map the stack: %s", strerror(-err));
		goto out;
	}
	uint64_t v = build_stack(m, e.cls / 8, argc, argv, envp);
	memcpy(sp, &v, size);
	m->cpu->pc = e.entry;
	err = 0;
out:
	free(b);
	return err;
}
