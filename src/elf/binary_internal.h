/* Internal state of an rtl_binary, shared by the files of src/elf/.
 *
 * The rtl_binary owns the file descriptor, the libelf handle (opened with
 * ELF_C_READ_MMAP, so elf_rawfile() is the whole image), the function array
 * and a string arena for synthesized names. Symbol names point into libelf's
 * string tables and so live as long as the handle. */
#ifndef RETICLE_ELF_BINARY_INTERNAL_H
#define RETICLE_ELF_BINARY_INTERNAL_H

#include <stdbool.h>
#include <gelf.h>
#include <libelf.h>
#include <elfutils/libdw.h>
#include <reticle/binary.h>
#include "ehframe.h"

/* A function candidate before merging: one per symbol, PLT entry or FDE. */
struct rtl_candidate {
	uint64_t addr, size;
	const char *name;   /* NULL when the source gives none */
	unsigned source;    /* one RTL_SRC_* bit */
	int rank;           /* name preference among aliases: lower wins */
};

struct rtl_cands {
	struct rtl_candidate *v;
	size_t n, cap;
};

/* The second buffer of the sorts of one discovery, shared by them: a fresh
 * page costs more than sorting what it holds (about 1.5 us to fault in on
 * the development VM; cc1's largest sort needs 4 MB). */
struct rtl_scratch {
	void *p;
	size_t size;
};
/* Room for SIZE bytes in S (grown, contents not kept), or NULL. */
void *rtl_scratch_get(struct rtl_scratch *s, size_t size);

/* An allocated section, for address lookups (sorted by addr in bin->secs). */
struct rtl_section {
	uint64_t addr, size, flags;
	int is_plt;                 /* .plt, .plt.sec, .plt.got or .iplt */
};

struct rtl_binary {
	char *path;
	int fd;
	Elf *elf;
	const unsigned char *image;  /* elf_rawfile() */
	size_t image_size;
	GElf_Ehdr ehdr;
	enum rtl_binary_kind kind;
	int is_static;
	int textrel;        /* the loader relocates the text (DT_TEXTREL) */
	const char *interp;         /* into image, NUL-checked */

	rtl_segment *segs;
	size_t nsegs;
	uint64_t relro_lo, relro_hi; /* PT_GNU_RELRO: read-only once relocated */
	struct rtl_section *secs;
	size_t nsecs;

	rtl_function *funcs;
	size_t capfuncs;
	uint64_t *cover;            /* cover[i]: furthest end among funcs[0..i] */
	uint32_t *page_first;       /* per 4 KiB page from funcs[0]: first record at or after it */
	size_t npages;
	size_t nfuncs;
	size_t nfdes;               /* valid FDEs seen (for tests and docs) */
	uint64_t sigtramps[8];      /* entries of FDEs with augmentation 'S' */
	size_t nsigtramps;
	int eh_plain;               /* fn_eh_plain's answer: -1 not asked yet */

	rtl_code_pointer *cptrs;
	size_t ncptrs;
	bool cptrs_borrowed;        /* in the facts blob (facts.c), not malloc'd */

	char **strings;             /* synthesized names, freed at close */
	size_t nstrings, capstrings;
	char *room;                 /* the rest of the last block of names */
	size_t room_left;

	Dwarf *dwarf;               /* lazily opened by rtl_binary_source_line */
	Elf *debug_elf;             /* the separate debug file (debugfile.c), or NULL */
	int debug_fd;
	const unsigned char *debug_image;
	size_t debug_image_size;
	int dwarf_tried;
	int debug_tried;            /* rtl_elf_open_debug_file looked, once */
	char *debug_path;           /* the debug file opened, or NULL */
	bool debug_consulted;       /* discovery looked for names in it (no .symtab) */
	bool has_symtab;            /* the file has a .symtab of its own (symbols.c) */
	/* discovery's results adopted from a facts blob (facts.c): names
	 * point into it, released at close */
	void *facts_owner;
	void (*facts_release)(void *owner);
	/* relative source names DWARF gives, resolved against their unit's
	 * comp_dir (srcline.c): open addressing keyed by libdw's pointer */
	struct rtl_src_path { const char *raw, *full; } *src_paths;
	size_t nsrc_paths, capsrc_paths;
};

int rtl_cands_push(struct rtl_cands *c, uint64_t addr, uint64_t size,
		   const char *name, unsigned source, int rank);
/* Keeps a malloc'd string until rtl_binary_close; returns it or NULL. */
const char *rtl_binary_keep_string(rtl_binary *bin, char *s);
/* LEN bytes for a synthesized name, kept until rtl_binary_close (blocks
 * of many names: a malloc each cost more than writing them), or NULL. */
char *rtl_binary_name_room(rtl_binary *bin, size_t len);

/* The allocated section containing link-time ADDR, or NULL. */
const struct rtl_section *rtl_elf_section_at(const rtl_binary *bin, uint64_t addr);
int rtl_elf_is_plt_name(const char *name);
/* Whether ELF's .dynsym names one of NAMES (or NAME@VERSION), undefined
 * (IMPORTED) or defined. */
bool rtl_elf_dynsym_has_any(Elf *elf, const char *const *names, size_t nnames, bool imported);
/* A pointer to LEN bytes at VADDR in the file image, or NULL. */
const unsigned char *rtl_binary_ptr(const rtl_binary *bin, uint64_t vaddr, size_t len);
/* The named section (first match), its data, or NULL. */
Elf_Scn *rtl_binary_find_section(const rtl_binary *bin, const char *name, GElf_Shdr *shdr);

/* Discovery passes, each appends candidates. */
int rtl_elf_collect_symbols(rtl_binary *bin, struct rtl_cands *c);
/* The GNU build-id of ELF (*LEN bytes), or NULL (identity.c). */
const unsigned char *rtl_elf_build_id(Elf *elf, size_t *len);
/* Opens BIN's separate debug file into bin->debug_elf: 0, or -1 when there
 * is none (debugfile.c). */
int rtl_elf_open_debug_file(rtl_binary *bin);
int rtl_elf_collect_plt(rtl_binary *bin, struct rtl_cands *c);
int rtl_elf_collect_fdes(rtl_binary *bin, struct rtl_cands *c);
/* .eh_frame parsing, apart from the binary so tests can feed it bytes:
 * calls FN for every readable FDE with its start, range and whether its
 * CIE has augmentation 'S'; stops at FN's first non-zero return. BASE is
 * the section's link-time address; B the textrel/datarel bases (bias 0). */
typedef int (*rtl_fde_fn)(void *ctx, uint64_t pc, uint64_t range, int signal);
int rtl_elf_parse_eh_frame(const unsigned char *sec, size_t size, uint64_t base,
			   const struct rtl_eh_bases *b, rtl_fde_fn fn, void *ctx);
int rtl_elf_collect_entries(rtl_binary *bin, struct rtl_cands *c);
/* The value the loader stores in the 8-byte word at WHERE: the RELATIVE
 * relocation's addend in a PIE or shared object, the word itself otherwise
 * (entries.c). */
uint64_t rtl_elf_word_at(rtl_binary *bin, uint64_t where);
/* Go's function table, .gopclntab (gopclntab.c). */
int rtl_elf_collect_gopclntab(rtl_binary *bin, struct rtl_cands *c);
/* Go's function table parsed apart from the binary, so tests can feed it
 * bytes: calls FN for every function with its entry, size and name (NULL
 * when it does not read); TEXT stands for a 1.18+ table's textStart when
 * that reads 0 (an unrelocated PIE). Returns 0, 1 when P is not a table
 * it reads (FN may have been called for some functions before the fault),
 * or FN's first non-zero return. */
typedef int (*rtl_go_func_fn)(void *ctx, uint64_t entry, uint64_t size, const char *name);
int rtl_elf_parse_gopclntab(const unsigned char *p, size_t n, uint64_t text, rtl_go_func_fn fn, void *ctx);
/* After a first build: code in executable sections that no function covers. */
int rtl_elf_collect_gaps(rtl_binary *bin, struct rtl_cands *c);
/* 1 if ADDR lies in .plt, .plt.sec, .plt.got or .iplt. */
int rtl_elf_in_plt(const rtl_binary *bin, uint64_t addr);
/* Bytes of nop/int3 padding (and zero bytes if ZEROS) at the start of P. */
size_t rtl_elf_skip_padding(const unsigned char *p, size_t n, int zeros);
/* Merges candidates into bin->funcs (replacing any earlier build); the
 * first SORTED candidates are known to be sorted. */
int rtl_elf_build_functions(rtl_binary *bin, struct rtl_cands *c, size_t sorted,
			    struct rtl_scratch *s);
/* Adds the gap candidates c->v[FIRST..] to bin->funcs as a second build
 * would, when it can without one: each gap (sized: the sweep did not split
 * them) starts past every function before it and ends before the next, so
 * no other record changes. Returns 0, 1 when a build is needed (nothing
 * changed but the order of the gap candidates), or -ENOMEM. */
int rtl_elf_add_gaps(rtl_binary *bin, struct rtl_cands *c, size_t first, struct rtl_scratch *s);
/* Gives unnamed functions their sub_<hex> name; once, after the last build. */
int rtl_elf_name_functions(rtl_binary *bin);
/* The lookup indexes of bin->funcs (cover, page index), made again. */
int rtl_elf_index_functions(rtl_binary *bin);
/* rtl_binary_find_function's answer for ADDR, given NEXT: the index of the
 * first record that starts after ADDR. */
const rtl_function *rtl_elf_function_before(const rtl_binary *bin, size_t next, uint64_t addr);
/* How many words the code pointers' scan may keep (DT_RELR bitmaps aside). */
size_t rtl_elf_code_pointer_bound(rtl_binary *bin);
/* Fills bin->cptrs from dynamic relocations (and data words for ET_EXEC),
 * its array grown from ROOM's block (taken: ROOM is left empty). */
int rtl_elf_collect_code_pointers(rtl_binary *bin, struct rtl_scratch *room, struct rtl_scratch *s);

/* Name ranks: lower is preferred. */
enum {
	RANK_SYMTAB_GLOBAL = 0, RANK_SYMTAB_WEAK = 1, RANK_SYMTAB_LOCAL = 2,
	RANK_DYNSYM = 3, RANK_PCLNTAB = 4, RANK_PLT = 5, RANK_ENTRY = 6, RANK_NONE = 9,
};

#endif
