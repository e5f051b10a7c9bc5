/* The emission of a copy, internal to src/isa/x86_64/: the emitter's
 * state (emit.c) and the snippets it places (snippets.c). */
#ifndef RETICLE_X86_EMIT_H
#define RETICLE_X86_EMIT_H

#include "isa/x86_64/cfg.h"
#include "isa/x86_64/writer.h"
#include "probe/plan.h"

/* ---- emission ---- */

struct fixup {
	size_t off;          /* offset of a rel32 field in the buffer */
	uint32_t insn;       /* target instruction index */
};

struct emitter {
	struct x86_analysis *a;
	struct x86_writer *w;
	struct x86_reloc *out;
	uint64_t *label;     /* instruction index -> relocated address */
	struct fixup *fix;
	size_t nfix, capfix;
	size_t *table_disp;  /* buffer offsets of disp32 fields that name tables */
	int32_t *table_disp_of;
	uint64_t *table_disp_end;
	size_t ntd;
	struct probe_plan plan;
	bool traces_memory;  /* the plan has RTL_POINT_MEMORY points */
	bool numbered_timers;   /* the entry pushes numbered timers' frames */
	/* the function reads its caller's flags before it sets them: it is
	 * entered with every register live (Go's asyncPreempt, called by a
	 * signal handler's injected call, saves them and gives them back at
	 * its return), so its entry and exit snippets keep them */
	bool flags_in;
	/* the traced copy and its untraced twin (pass 1: no records, no
	 * registrations twice), and their checks' rel32 fields */
	bool twin;
	unsigned pass;
	/* instructions whose label starts with a twin check: where calls
	 * return and where indirect jumps land, when the flags are dead */
	bool *switch_at;
	/* memtrace's countdowns (a plan of records and countdowns only): a
	 * block's counts those of the blocks it falls into, whose own the
	 * fall-through jumps over (one word's read-modify-write per block
	 * chains every block on it) */
	bool merge_counts;
	bool *clock_check;   /* per block: memtrace's clock is checked there */
	uint16_t *live_regs; /* per instruction, when the clock is checked: x86_cfg_live_regs */
	uint32_t (*via)[2];  /* per block, where probes are swept: x86_cfg_implied_blocks */
	struct twin_fix { size_t off; uint32_t insn; unsigned pass; } *checks;
	size_t nchecks, capchecks;
	/* memtrace's chain (MetaSim's static analysis): the recorded access
	 * that heads it, in block BLOCK, through registers BASE and INDEX
	 * unchanged since; the instruction of its last access; the number
	 * of that access */
	struct mem_chain {
		bool on;
		uint32_t block;
		size_t last;
		struct x86_mem head;
		int64_t shift;       /* the base register's moves since the head */
		uint32_t prev;
	} chain;
};

/* snippets.c: what the plan puts at each point (comments at the definitions) */
int x86_snip_counter(struct x86_writer *w, uint64_t counter, bool keep_flags, const struct x86_reloc_env *env,
		     struct x86_reloc *out);
/* A counter increment at buffer offset AT, switched to atomic if the process gets threads. */
int x86_snip_site(struct x86_reloc *out, size_t at, bool keep_flags);
int x86_snip_rep_count(struct emitter *e, size_t i, struct x86_reloc *out);
int x86_snip_point_id(struct x86_reloc *out, uint64_t addr, uint64_t ctr, enum rtl_point_kind kind,
		      enum rtl_primitive op, uint32_t id);
int x86_snip_point(struct x86_reloc *out, uint64_t addr, uint64_t ctr, enum rtl_point_kind kind);
int x86_snip_own(struct emitter *e, enum rtl_point_kind kind, uint64_t addr, struct x86_reloc *out);
int x86_snip_point_counter(struct emitter *e, uint64_t addr, enum rtl_point_kind kind, bool keep_flags,
			   struct x86_reloc *out);
int x86_snip_edge_counter(struct emitter *e, size_t i, enum rtl_point_kind kind, struct x86_reloc *out);
int x86_snip_call_probes(struct emitter *e, size_t i, const uint8_t *bytes, struct x86_reloc *out);
int x86_snip_exit_probes(struct emitter *e, size_t i, struct x86_reloc *out);
int x86_snip_memory_records(struct emitter *e, size_t i, const uint8_t *bytes, struct x86_reloc *out);
int x86_snip_block_counter(struct emitter *e, size_t b, struct x86_reloc *out);
/* Whether block B ends without a branch or call, into block B + 1. */
bool x86_falls_into_next(const struct x86_analysis *a, size_t b);

#endif
