/* Whole-function relocation with inlined probes (Caliper's in-line strategy).
 *
 * x86_relocate() decodes a function, splits it into basic blocks, finds its
 * jump tables, computes flag liveness, asks for the function's probe plan
 * (probe/plan.h) and emits a copy for run-time address DEST with the
 * planned snippets inline. The caller owns the result and frees it with
 * x86_reloc_free(). */
#ifndef RETICLE_X86_RELOCATE_H
#define RETICLE_X86_RELOCATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "isa/x86_64/insn.h"
#include "isa/x86_64/writer.h"
#include "probe/plan.h"

struct x86_reloc_env {
	uint64_t addr;          /* run-time address of the function */
	size_t size;
	const uint8_t *code;    /* its SIZE bytes */
	/* Run-time addresses inside the function that data words point to
	 * (computed-goto tables): they become block leaders. */
	const uint64_t *interior;
	size_t ninterior;
	/* Reads target memory (jump tables); returns 0 or negative. */
	int (*read)(void *ctx, const uint64_t addr, void *buf, size_t len);
	/* Where a branch to ADDR outside the function should go: ADDR itself, or
	 * the relocated copy of another function's interior. */
	uint64_t (*redirect)(void *ctx, uint64_t addr);
	/* Whether ADDR is executable code of the function's own binary
	 * (jump-table entries may leave the function, for its .cold part);
	 * NULL means only the function's own bytes are. */
	bool (*is_code)(void *ctx, uint64_t addr);
	/* Whether ADDR lies in a function of the binary (where no jump table
	 * is: in old layouts .rodata shares the code's segment); NULL: is_code
	 * decides. */
	bool (*in_function)(void *ctx, uint64_t addr);
	/* Whether the LEN bytes at ADDR stay as they are while the program
	 * runs (read-only, or RELRO): a table of label addresses there may be
	 * copied. NULL means none is. */
	bool (*is_readonly)(void *ctx, uint64_t addr, size_t len);
	/* Whether the function at TARGET identifies its caller by the return
	 * address (dlopen, dlsym): a call to it pushes the original return
	 * address instead of the copy's (NULL: none does). */
	bool (*keeps_caller)(void *ctx, uint64_t target);
	/* Allocates an 8-byte counter reachable with rip+disp32; 0 when full. */
	uint64_t (*new_counter)(void *ctx);
	void *ctx;
	/* The function's probe plan from its cfg (run-time addresses; module
	 * and name unset): OUT is empty and the caller's. NULL: the plan is a
	 * counter at the entry and one at every block (with their rep
	 * iterations) as the two flags below say. */
	int (*plan)(void *ctx, const struct rtl_function_cfg *cfg, struct probe_plan *out);
	bool entry_counter;
	bool block_counters;
	bool atomic;            /* the process has threads: atomic increments */
	/* Every call pushes the original return address (runtimes that walk
	 * their own stacks: Go, V8; backtrace()): see x86_ret_patch. */
	bool original_returns;
	/* ... asked for by a library the program needs, not by the program
	 * (elf/needed.c): a call whose return point cannot take a 5-byte jump
	 * back (it would trap at every return: -O0's "call; nop; leave; ret")
	 * keeps its code-cache return address there. */
	bool original_returns_soft;
	/* Memory tracing (RTL_POINT_MEMORY): the number of the K-th data
	 * access A of the instruction at run-time INSN, for its records (0:
	 * no room, the access goes untraced); AFTER, when not 0, the access
	 * the emitter chains it to (it has no record: its address is DELTA
	 * from the address of the record that heads the chain, MetaSim's
	 * chaining); and an instruction whose accesses cannot be traced
	 * (x86_data_accesses: -1). */
	uint32_t (*mem_point)(void *ctx, uint64_t insn, unsigned k, const struct x86_access *a, uint32_t after,
			      int64_t delta);
	void (*mem_untraced)(void *ctx, uint64_t insn);
	/* A copy's own jump table, BYTES long at COPY, of the program's at
	 * ORIG: its loads are recorded at the program's table. */
	void (*mem_table)(void *ctx, uint64_t copy, uint64_t orig, uint64_t bytes);
	/* accesses through the same registers within a block are chained
	 * (x86_snip_memory_records) */
	bool mem_chain;
	bool fsgsbase;          /* rdfsbase works: %fs operands are traced */
	/* A copy whose plan only records memory accesses and counts down
	 * (memtrace --sample) gets an untraced twin (memtrace.h) */
	bool twin;
	/* memtrace's windows are counted (--sample): without, a plan's
	 * countdowns of records-only copies are left out */
	bool windows;
	/* the copy starts with a 5-byte nop, which a jump to the copy made
	 * to replace it overwrites (lazy_reinstrument) */
	bool entry_pad;
	/* counter increments are swept once fired (cover alone): the 9-byte
	 * ones are placed so that their first 8 bytes share a cache line */
	bool whole_lines;
	/* the function's timer, in a leaf, times a sample of its calls
	 * (x86_timer_start's SAMPLED) */
	bool sample_leaf_timers;
	/* where code outside enters the function (x86_foreign_entries): its
	 * blocks there are probed; FOREIGN_KNOWN false: none may be left out */
	const uint64_t *foreign;
	size_t nforeign;
	bool foreign_known;
	/* The function's identity for its signal slot (RTL_PRIM_SLOT_SET:
	 * probe_signal_id), 0 to store the copy's address instead. */
	uint32_t signal_id;
	/* The function's first NINSNS instructions, when the caller decoded
	 * them already (x86_decode_function): not decoded twice. */
	const struct x86_insn *insns;
	size_t ninsns;
};

struct x86_block {
	uint64_t addr;          /* original run-time address */
	uint32_t ninstrs;
	uint64_t counter;       /* run-time address of its counter, 0 if none */
	/* Iterations of its plain rep instructions (valgrind counts every one as
	 * an instruction executed), 0 if it has none. */
	uint64_t rep_counter;
	/* Without a counter of its own where probes are swept (whole_lines):
	 * the blocks (index + 1 in the function; 0: none) one of which ran
	 * exactly when it did (x86_cfg_implied_blocks) */
	uint32_t via[2];
};

struct x86_call_site {
	uint64_t site, target;  /* original address of a direct call, its target */
	uint32_t block;         /* index of the block it ends */
};

/* A counter at a point other than the entry, a block or its rep
 * instructions (those have their fields above). */
struct x86_point_counter {
	uint64_t addr;          /* run-time address of the point */
	uint64_t counter;
	uint8_t kind;           /* enum rtl_point_kind */
	uint8_t op;             /* RTL_PRIM_COUNT, or RTL_PRIM_COUNT_BY (two words, as
				 * RTL_POINT_INDIRECT_TARGET's) */
	uint32_t id;            /* the snippet's own id, 0 when shared */
};

/* A counter increment that can be made atomic later (writer.h). */
struct x86_counter_site {
	uint32_t off;           /* offset in the copy */
	bool keep_flags;        /* the flags-live form (2-byte switch) */
};

/* A direct branch out of the copy (call, jmp, jcc): where its rel32 is, and
 * the original address it was meant for. The engine re-points it when that
 * address gets a copy of its own later. */
struct x86_ext_branch {
	uint32_t off;           /* offset of the rel32 field in the copy */
	uint64_t orig, dest;    /* original target; what the field holds */
};

/* Such a call returns into the original code: the engine puts a jump to
 * the copy's return point there. */
struct x86_ret_patch {
	uint64_t orig;          /* original return address */
	uint64_t copy;          /* where the copy continues */
};

enum { X86_MAX_ENTRY_TIMERS = 16 };

/* An RTL_PRIM_CALL snippet: an int3 at OFF in the copy, for the point
 * KIND at original run-time ADDR, snippet ID. */
struct x86_call_trap {
	uint32_t off;
	uint8_t kind;
	uint32_t id;
	uint64_t addr;
};

struct x86_reloc {
	struct x86_writer w;    /* the code, to be copied to w.base */
	struct x86_counter_site *sites;
	size_t nsites, capsites;
	uint64_t entry_counter;
	/* the counter that holds the function's timer (its offset in a
	 * thread area, runtime/thread_area.h: the engine writes it), 0 if none */
	uint64_t timer_desc;
	struct x86_block *blocks;
	size_t nblocks;
	struct x86_call_site *calls;
	size_t ncalls, capcalls;
	struct x86_point_counter *points;   /* sorted by address, then kind */
	size_t npoints, cappoints;
	struct x86_ext_branch *ext;
	size_t next, capext;
	struct x86_ret_patch *rets;
	size_t nrets, caprets;
	/* original instruction address -> relocated address, sorted by from */
	uint64_t *map_from, *map_to;
	size_t nmap;
	/* the untraced twin (env.twin), after the traced copy in the same
	 * code: where it starts, and its address of each instruction of
	 * map_from (NULL: no twin). A place of one copy and the same offset
	 * from the same instruction's label in the other are the same point
	 * where the thread can go on (labels start with the same twin check
	 * and countdown in both) */
	uint64_t twin_start;
	uint64_t *twin_to;
	size_t njump_tables;
	/* records memory accesses: its point numbers are the run's, so the
	 * copy is not saved for another run */
	bool traces_memory;
	/* has snippets with ids and predicates (addresses of the run's): not
	 * saved either */
	bool own_snippets;
	/* the numbered timers its entry starts unconditionally and whose
	 * latency nothing reads: those a frame already open may start at
	 * once (lazy_reinstrument) */
	uint32_t entry_timers[X86_MAX_ENTRY_TIMERS];
	uint8_t nentry_timers;
	struct x86_call_trap *traps;   /* RTL_PRIM_CALL's int3s */
	size_t ntraps, captraps;
};

int x86_relocate(const struct x86_reloc_env *env, uint64_t dest, struct x86_reloc *out,
		 const char **reason);
/* x86_relocate in two halves. The analysis (decoding, jump tables,
 * computed gotos, blocks, flag liveness) reads only ENV's addr, size, code,
 * insns, interior, read, is_code, in_function and is_readonly, so another thread may run
 * it while the emitting one goes on; it keeps pointers to ENV's code, insns
 * and interior, which must outlive it. x86_emit takes an ENV with the same
 * ones and the rest (redirect, counters, ...); DEST as for x86_relocate. */
struct x86_analysis;
int x86_analyze(const struct x86_reloc_env *env, struct x86_analysis **out, const char **reason);
int x86_emit(struct x86_analysis *a, const struct x86_reloc_env *env, uint64_t dest,
	     struct x86_reloc *out, const char **reason);
void x86_analysis_free(struct x86_analysis *a);
void x86_reloc_free(struct x86_reloc *r);
/* Decodes the function at ADDR (SIZE bytes of CODE) into *OUT (malloc'd,
 * freed by the caller), *N instructions; stops at the first undecodable one
 * and returns its error (what was decoded is still returned). */
int x86_decode_function(const uint8_t *code, size_t size, uint64_t addr, struct x86_insn **out,
			size_t *n);
/* Direct branch and call targets among INSNS that lie outside the
 * function [ADDR, ADDR+SIZE). Returns how many were stored (at most MAX). */
/* Appends to *V (*N) the targets strictly inside (LO, HI) of C's direct
 * branches (C of BIN at run-time BIAS, decoded from the file, up to bytes
 * that do not decode): false when not all of C was read and decoded, or
 * memory ran out. */
bool x86_branches_into(const rtl_binary *bin, uint64_t bias, const rtl_function *c, uint64_t lo, uint64_t hi,
		       uint64_t **v, size_t *n);
/* A copy's 'call T' with the original return address (the return address
 * pushed, then 'jmp T rel32'): X86_ORIGINAL_CALL_LEN bytes at B, run-time
 * ADDR, made 'call T' (returning into the copy) and a short jump past the
 * rest, where no thread can be inside them. False, nothing changed, when B
 * holds no such sequence or T is out of reach. */
enum { X86_ORIGINAL_CALL_LEN = 25 };
bool x86_original_call_to_plain(uint8_t b[X86_ORIGINAL_CALL_LEN], uint64_t addr);
struct x86_foreign_cache;
/* Run-time addresses inside F (not its entry) where functions F jumps into
 * jump back (foreign.c): malloc'd, *N of them; *KNOWN false when some such
 * function could not be read (too many, too large: ALL reads larger ones,
 * as cover's implied blocks need). */
uint64_t *x86_foreign_entries(const rtl_binary *bin, uint64_t bias, const rtl_function *f,
			      const struct x86_insn *insns, size_t ninsns, size_t *n, bool *known,
			      struct x86_foreign_cache *cache, bool all);
/* What x86_foreign_entries learns of a binary's functions, kept (NULL:
 * nothing kept). Threads may share one. */
struct x86_foreign_cache *x86_foreign_cache_new(size_t nfunctions);
void x86_foreign_cache_free(struct x86_foreign_cache *c);
size_t x86_external_targets(const struct x86_insn *insns, size_t n, uint64_t addr, size_t size,
			    uint64_t *out, size_t max);
/* Where A's function, at run-time [ADDR, ADDR+SIZE), may go outside itself
 * by a direct branch or call or a jump-table entry: how many were stored
 * (at most MAX); *MORE when there were more. (A's env need not be alive.) */
size_t x86_cfg_targets_outside(const struct x86_analysis *a, uint64_t addr, uint64_t size, uint64_t *out,
			       size_t max, bool *more);
/* Whether A's copy dispatches through a table of offsets from a label:
 * a register may then hold the label's copy across blocks. */
bool x86_cfg_has_offset_tables(const struct x86_analysis *a);
/* Relocated address of original ADDR (an instruction start), or 0: in R,
 * or in a map kept from one (FROM sorted, N entries). */
uint64_t x86_map_lookup(const uint64_t *from, const uint64_t *to, size_t n, uint64_t addr);
uint64_t x86_reloc_lookup(const struct x86_reloc *r, uint64_t addr);

#endif
