/* Binary analyzer: what an ELF file holds, read from disk with libelf.
 *
 * An rtl_binary is created by rtl_binary_open() and owned by the caller, who
 * frees it with rtl_binary_close(); every pointer it hands out (names,
 * function records) lives as long as the rtl_binary. Addresses are link-time
 * virtual addresses: add the load bias of the mapped module to get run-time
 * addresses. */
#ifndef RETICLE_BINARY_H
#define RETICLE_BINARY_H

#include <reticle/api.h>

#include <stddef.h>
#include <stdint.h>

typedef struct rtl_binary rtl_binary;

/* Where a function was found (a bit set: one function may come from several). */
enum rtl_func_source {
	RTL_SRC_SYMTAB = 1 << 0,
	RTL_SRC_DYNSYM = 1 << 1,
	RTL_SRC_PLT = 1 << 2,
	RTL_SRC_EH_FRAME = 1 << 3,
	RTL_SRC_ENTRY = 1 << 4,     /* ELF entry, DT_INIT/DT_FINI, init/fini arrays */
	RTL_SRC_GAP = 1 << 5,       /* code between known functions (no symbol, no FDE) */
	RTL_SRC_DEBUG = 1 << 6,     /* .symtab of the separate debug file (with RTL_SRC_SYMTAB) */
	RTL_SRC_GOPCLNTAB = 1 << 7, /* Go's function table (.gopclntab) */
};

typedef struct rtl_function {
	const char *name;     /* symbol name; "name@plt" for PLT stubs; "sub_<hex addr>" when unnamed */
	uint64_t addr;        /* link-time address of the entry */
	uint64_t size;        /* bytes; from the symbol, the FDE, or the distance to the next function */
	unsigned sources;     /* enum rtl_func_source bits */
	int instrumentable;   /* 1 if the relocator accepts it */
	const char *reason;   /* why not, when instrumentable is 0 (static string) */
} rtl_function;

enum rtl_binary_kind { RTL_BIN_EXEC, RTL_BIN_PIE, RTL_BIN_SHARED };

/* Opens PATH. Returns 0, -errno (e.g. -ENOENT), -RTL_ERR_NOT_ELF,
 * -RTL_ERR_WRONG_ARCH (not ELFCLASS64 x86-64), -RTL_ERR_TRUNCATED or
 * -RTL_ERR_BAD_ELF. Function discovery runs here; the instrumentability
 * check runs lazily (see rtl_binary_check_functions). */
RTL_API int rtl_binary_open(const char *path, rtl_binary **out);
/* As rtl_binary_open, without function discovery (no functions, no code
 * pointers): for reading bytes and source lines cheaply, as reports do. */
RTL_API int rtl_binary_open_image(const char *path, rtl_binary **out);
RTL_API void rtl_binary_close(rtl_binary *bin);

RTL_API const char *rtl_binary_path(const rtl_binary *bin);
RTL_API enum rtl_binary_kind rtl_binary_kind(const rtl_binary *bin);
RTL_API int rtl_binary_is_static(const rtl_binary *bin);   /* no PT_INTERP and no PT_DYNAMIC */
/* The loader writes into its text (DT_TEXTREL): the file's bytes are not
 * the loaded text's. */
RTL_API int rtl_binary_has_textrel(const rtl_binary *bin);
RTL_API uint64_t rtl_binary_entry(const rtl_binary *bin);
RTL_API const char *rtl_binary_interp(const rtl_binary *bin);  /* PT_INTERP path or NULL */

/* A file-name-safe key for the binary's contents: "b-" and its GNU build-id
 * in hex, or "f-" and a hash of the file's device, inode, size, modification
 * time and path when it has none. Returns 0, or -1 when BUF is too short
 * (or the file cannot be looked at). */
RTL_API int rtl_binary_identity(const rtl_binary *bin, char *buf, size_t len);

/* Functions sorted by address, no duplicates (one record per entry address). */
RTL_API size_t rtl_binary_function_count(const rtl_binary *bin);
RTL_API const rtl_function *rtl_binary_function(const rtl_binary *bin, size_t i);
/* The function whose [addr, addr+size) contains ADDR, or NULL. */
RTL_API const rtl_function *rtl_binary_find_function(const rtl_binary *bin, uint64_t addr);

/* Runs the relocator's check over every function and fills instrumentable/reason. */
RTL_API void rtl_binary_check_functions(rtl_binary *bin);

/* Copies LEN bytes at link-time address VADDR from the file image (PT_LOAD
 * segments; bytes past p_filesz read as zero). Returns 0 or -RTL_ERR_BAD_ELF
 * if the range is not inside one loadable segment. */
RTL_API int rtl_binary_read(const rtl_binary *bin, uint64_t vaddr, void *buf, size_t len);
/* Whether the LEN bytes at VADDR are read-only while the program runs: in a
 * loadable segment without PF_W, or in PT_GNU_RELRO. */
RTL_API int rtl_binary_is_readonly(const rtl_binary *bin, uint64_t vaddr, size_t len);
/* Link-time address of the GOT slot PLT stub F jumps through, or 0 when F is
 * not a PLT stub of that form (PLT0, lazy IBT entries). */
RTL_API uint64_t rtl_binary_plt_slot(const rtl_binary *bin, const rtl_function *f);
/* Whether the binary imports NAME (an undefined dynamic symbol, any version). */
RTL_API int rtl_binary_imports(const rtl_binary *bin, const char *name);
/* Whether the binary defines NAME in its dynamic symbols (any version). */
RTL_API int rtl_binary_exports(const rtl_binary *bin, const char *name);
/* Whether the binary holds Go code: it has Go's function table
 * (.gopclntab) or build information (.go.buildinfo), stripped or not. */
RTL_API int rtl_binary_is_go(const rtl_binary *bin);

/* Loadable segments, for mapping link-time to run-time addresses. */
typedef struct rtl_segment {
	uint64_t vaddr, memsz, offset, filesz;
	unsigned flags;  /* PF_R | PF_W | PF_X */
} rtl_segment;
RTL_API size_t rtl_binary_segment_count(const rtl_binary *bin);
RTL_API const rtl_segment *rtl_binary_segment(const rtl_binary *bin, size_t i);

/* Link-time addresses of words that the dynamic loader fills with
 * base + addend (R_X86_64_RELATIVE, and R_X86_64_64 against a section
 * symbol): where ADDEND lands inside a function past its entry, the word is a
 * code pointer into that function (computed-goto tables, for example). Sorted
 * by addend. */
typedef struct rtl_code_pointer {
	uint64_t where;   /* link-time address of the 8-byte word */
	uint64_t target;  /* link-time address it points to */
} rtl_code_pointer;
RTL_API size_t rtl_binary_code_pointer_count(const rtl_binary *bin);
RTL_API const rtl_code_pointer *rtl_binary_code_pointer(const rtl_binary *bin, size_t i);

/* Number of valid .eh_frame FDEs seen (before merging with symbols). */
RTL_API size_t rtl_binary_fde_count(const rtl_binary *bin);

/* Source location of the instruction at link-time ADDR from DWARF line
 * tables (the binary's own, else its separate debug file's): returns 0 and
 * sets *file (the path DWARF gives, living as long as BIN) and *line, or
 * -ENOENT. DWARF is opened on the first call; without any, every call
 * costs a test. */
RTL_API int rtl_binary_source_line(rtl_binary *bin, uint64_t addr, const char **file, int *line);
/* Whether BIN has DWARF to place code with (opens it as the above does). */
RTL_API int rtl_binary_has_source_lines(rtl_binary *bin);

/* The address range of one row of a DWARF line table: [addr, end) is code
 * of FILE's LINE (FILE lives as long as the binary). */
typedef struct rtl_source_range {
	uint64_t addr, end;
	const char *file;
	int line;
	/* rows of other lines start at ADDR too (empty ranges before this one) */
	int shared_start;
} rtl_source_range;
/* Calls FN for every range of every line table of BIN (every compile unit;
 * rows with line 0, empty ranges and sequences at address 0, which the
 * linker left for discarded code, are skipped), each compile unit's rows
 * by address (libdw's order, not the table's). Returns 0,
 * -ENOENT without DWARF, or FN's first non-zero value. */
RTL_API int rtl_binary_foreach_source_range(rtl_binary *bin,
				    int (*fn)(const rtl_source_range *r, void *user), void *user);
/* A function or a label of the source, where its name is written
 * (DW_AT_decl_file, decl_line) and the address of its code. */
typedef struct rtl_source_name {
	uint64_t addr;
	uint64_t size;        /* a function's bytes from ADDR (0 when unknown) */
	const char *name;     /* a function's linkage (symbol) name, or its name;
			       * NULL for a label */
	const char *file;
	int line;
	int is_label;         /* a goto label (DW_TAG_label), else a function */
} rtl_source_name;
/* Calls FN for every function DWARF describes with code, and for the
 * labels inside it. Returns 0, -ENOENT without DWARF, or FN's first
 * non-zero value. */
RTL_API int rtl_binary_foreach_source_name(rtl_binary *bin,
				   int (*fn)(const rtl_source_name *n, void *user), void *user);

/* Code of an inlined call (DW_TAG_inlined_subroutine): [addr, end) holds
 * code of NAME (its linkage name, else its name; lives as long as the
 * binary), DEPTH calls inside the function it was inlined into (1: into
 * the function itself; 2: into code inlined there...). Ranges of one
 * depth do not overlap; a deeper one lies inside a shallower one. */
typedef struct rtl_inline_range {
	uint64_t addr, end;
	const char *name;
	int depth;
} rtl_inline_range;
/* Calls FN for every range of every inlined call DWARF describes (in the
 * functions dwarf_getfuncs finds in each unit). Returns 0, -ENOENT without
 * DWARF, or FN's first non-zero value. */
RTL_API int rtl_binary_foreach_inline_range(rtl_binary *bin,
				    int (*fn)(const rtl_inline_range *r, void *user), void *user);

/* A symbol of the binary's own .symtab (or, without one, its .dynsym), as
 * the file lists it: defined, neither a FILE nor a SECTION symbol. */
typedef struct rtl_symbol {
	const char *name;     /* lives as long as the binary */
	uint64_t addr, size;
	uint8_t type, bind;   /* STT_*, STB_* */
	size_t index;         /* in its table */
} rtl_symbol;
/* Calls FN for each, in table order. Returns 0, -ENOENT when the file has
 * neither table, or FN's first non-zero value. */
RTL_API int rtl_binary_foreach_symbol(rtl_binary *bin, int (*fn)(const rtl_symbol *s, void *user), void *user);

/* NAME demangled as c++filt prints it by default (C++, Rust and the other
 * schemes libiberty knows; a "@plt" or "@@VERSION" suffix kept), in a
 * string the caller frees; NULL when NAME is not mangled (sub_<hex>, C
 * names) or memory runs out. */
RTL_API char *rtl_demangle(const char *name);

#endif
