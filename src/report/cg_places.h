/* Internal to src/report/: source places (file, line) of the instructions
 * of executed blocks, for the callgrind export's per-line costs. Blocks
 * are decoded from the module's file bytes (the project's x86 decoder) and
 * each instruction placed by its DWARF line table (rtl_binary_source_line,
 * inlined code included: its own file and line). */
#ifndef RETICLE_REPORT_CG_PLACES_H
#define RETICLE_REPORT_CG_PLACES_H

#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>
#include "report/report_priv.h"

struct x86_insn;

struct cg_place {
	uint64_t addr;
	uint32_t file;        /* index in files[]; 0: unknown ("???") */
	uint32_t line;        /* 0: unknown */
};

struct cg_places {
	struct rpt_sources src;
	char **files;         /* files[0] is "???" */
	unsigned char *named; /* per file: its name was written (compression) */
	size_t nfiles, capfiles, capnamed;
	uint32_t *slots;      /* hash of files: index + 1, 0 for empty */
	size_t nslots;
	struct cg_place *v;   /* instructions of the blocks, in the order placed */
	size_t n, cap;
	int known;            /* some instruction has a line */
};

/* Appends the places of the NINSTRS instructions of the block at link-time
 * ADDR in MODULE; *FIRST is the index of the first. Returns 0, 1 when the
 * block cannot be decoded (nothing appended) or -ENOMEM. */
int cgp_block(struct cg_places *p, const char *module, uint64_t addr, uint32_t ninstrs,
	      size_t *first);
/* The place of the instruction at ADDR in MODULE (file 0, line 0 when
 * unknown); -ENOMEM or 0. */
int cgp_addr(struct cg_places *p, const char *module, uint64_t addr, struct cg_place *out);
void cgp_free(struct cg_places *p);
/* The length of the instruction at link-time ADDR of BIN's file, or 0 when
 * it cannot be read or decoded. */
size_t cgp_insn_len(struct rtl_binary *bin, uint64_t addr);
/* The same, and *REP: a rep string instruction (its iterations count as
 * instructions executed). */
size_t cgp_insn_len_rep(struct rtl_binary *bin, uint64_t addr, bool *rep);
/* The same, with the bytes read (CODE) and the instruction decoded (IN). */
size_t cgp_decode(struct rtl_binary *bin, uint64_t addr, uint8_t code[15], struct x86_insn *in);

/* Jumps, for jump= and jcnd= lines: the target of the conditional branch
 * at link-time SITE of MODULE; the site and target of the direct jump
 * that ends the block at ADDR (NINSTRS instructions; LAST, the address of
 * the last, when known from cgp_block, else 0: the block is decoded to
 * find it). 0, or 1 when there is no such instruction or it cannot be
 * read. */
int cgp_branch_target(struct cg_places *p, const char *module, uint64_t site, uint64_t *target);
int cgp_block_jump(struct cg_places *p, const char *module, uint64_t addr, uint32_t ninstrs,
		   uint64_t last, uint64_t *site, uint64_t *target);
/* The last instruction of that block, decoded, and its address: 0 or 1. */
int cgp_block_last(struct cg_places *p, const char *module, uint64_t addr, uint32_t ninstrs,
		   uint64_t last, uint64_t *site, struct x86_insn *in);

#endif
