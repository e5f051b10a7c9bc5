/* Unwind information for relocated functions.
 *
 * A function relocated into the code cache (x86_relocate) has no FDE, so the
 * unwinder stops at it (backtrace) or calls std::terminate (a C++ throw).
 * unw_build() reads the original function's FDE and CIE from the module's
 * .eh_frame and emits a blob for libgcc's __register_frame(): a CIE, one FDE
 * over the relocated code whose CFA program is re-targeted through the
 * relocation map, a zero terminator, and, when the function has one, a
 * rewritten LSDA (.gcc_except_table format) the FDE points to.
 *
 * Everything here is pure: the caller hands in the section bytes and the
 * addresses they live at; nothing reads a process. Addresses are the ones the
 * relocator uses (run-time addresses in the target). The caller owns the
 * returned blob (free()). See docs/unwind.md. */
#ifndef RETICLE_UNWIND_H
#define RETICLE_UNWIND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct x86_sp_row;

struct unw_region {
	uint64_t addr;          /* run-time address of data[0] */
	const uint8_t *data;
	size_t size;
};

/* A sorted index of the FDEs (unw_image_index). */
struct unw_index_entry {
	uint64_t begin, end;
	size_t fde_off;
};

/* What unw_build needs from the module. Zero it, fill the regions (the
 * caller keeps their bytes alive), optionally index it. */
struct unw_image {
	struct unw_region eh_frame;      /* .eh_frame */
	struct unw_region except_table;  /* .gcc_except_table (size 0 when absent) */
	/* Added to absolute pointers (DW_EH_PE_absptr, udata*, sdata*): the load
	 * bias of the module when the bytes come from the file. */
	uint64_t bias;
	/* Bases of DW_EH_PE_textrel / datarel pointers (x86-64 gcc emits neither). */
	uint64_t text_base, data_base;
	/* Filled by unw_image_index(): without it every lookup walks the
	 * section. Freed by unw_image_free(). */
	const struct unw_index_entry *index;
	size_t nindex;
	/* Also by unw_image_index(): some FDE's CIE names a personality
	 * routine (C++, or C that unwinds through its frames: LuaJIT's VM) */
	bool personality;
	bool owned;   /* the region bytes are unw_image_load's copies */
};

/* The FDE that covers an address, as found in .eh_frame. */
struct unw_fde {
	uint64_t pc_begin, pc_end;   /* run-time range covered */
	uint64_t lsda;               /* LSDA address, 0 if none */
	size_t fde_off, cie_off;     /* offsets of the records in eh_frame.data */
};

/* Finds the FDE whose range contains PC. Returns 0, -ENOENT when none does,
 * or -RTL_ERR_BAD_INPUT on malformed .eh_frame. */
int unw_find_fde(const struct unw_image *img, uint64_t pc, struct unw_fde *out);

/* The relocation of one function: x86_reloc's map_from/map_to/nmap (original
 * instruction address -> relocated address, sorted), the original range and
 * the relocated range (r.w.base, r.w.len). */
struct unw_map {
	const uint64_t *from, *to;
	size_t n;
	uint64_t func_addr, func_size;
	uint64_t new_start, new_len;
	/* Where the copy's snippets move %rsp (isa/x86_64/writer.h: offsets in
	 * the copy, in order, and how far below), as the writer reported them
	 * (r.w.rows), or none. Each gets a CFA row while the CFA is
	 * %rsp-based, so that unwinding from a signal inside one stays exact. */
	const struct x86_sp_row *rows;
	size_t nrows;
};

/* Builds the blob that will live at DEST (within +-2GiB of the module and of
 * new_start for the compact pcrel encodings; absolute encodings otherwise).
 * On success *BLOB (malloc'd) holds *LEN bytes to be copied to DEST, and
 * __register_frame(DEST) makes the relocated code unwindable.
 * Returns 0; -ENOENT when no FDE covers func_addr (nothing to register);
 * -RTL_ERR_BAD_INPUT on malformed CFI or LSDA; -RTL_ERR_UNSUPPORTED on
 * constructs it does not rewrite (a landing pad outside the function,
 * a code alignment factor other than 1, an "eh" augmentation);
 * -ENOMEM. *REASON (may be NULL) says which. */
int unw_build(const struct unw_image *img, const struct unw_map *map, uint64_t dest,
	      uint8_t **blob, size_t *len, const char **reason);

/* The same for N functions in one blob (one CIE and FDE each, one
 * terminator, then the LSDAs), for one __register_frame call: libgcc
 * searches registered objects one after the other, so fewer is faster.
 * A function that fails is left out and STATUS[i] (may be NULL) gets its
 * error (-ENOENT: no FDE). Returns 0 (the blob may hold no FDE at all),
 * or -ENOMEM. */
int unw_build_many(const struct unw_image *img, const struct unw_map *maps, size_t n,
		   uint64_t dest, uint8_t **blob, size_t *len, int *status);

/* The landing pads of the function at FUNC_ADDR (its FDE's LSDA; run-time
 * addresses, sorted, *N of them, malloc'd into *PADS). Returns 0 (none
 * is 0 too), -ENOENT when no FDE covers FUNC_ADDR, -RTL_ERR_BAD_INPUT,
 * -RTL_ERR_UNSUPPORTED or -ENOMEM. */
int unw_landing_pads(const struct unw_image *img, uint64_t func_addr, uint64_t **pads, size_t *n);

/* Convenience for callers that have the file: reads .eh_frame and
 * .gcc_except_table from the ELF file PATH with libelf, at their link-time
 * addresses plus BIAS, and indexes them. Free with unw_image_free().
 * Returns 0, -errno or -RTL_ERR_BAD_ELF / -RTL_ERR_NOT_ELF. */
int unw_image_load(const char *path, uint64_t bias, struct unw_image *img);
/* Sorts the FDEs of IMG by address for fast lookups (one pass over the
 * section). Returns 0, -ENOMEM or -RTL_ERR_BAD_INPUT. */
int unw_image_index(struct unw_image *img);
/* Frees the index, and the region bytes when unw_image_load made them. */
void unw_image_free(struct unw_image *img);
/* IMG: FROM's tables as at load bias BIAS instead of FROM's (addresses and
 * index moved; the region bytes lent: FROM must outlive IMG). Returns 0 or
 * -ENOMEM. */
int unw_image_rebase(const struct unw_image *from, uint64_t bias, struct unw_image *img);

#endif
