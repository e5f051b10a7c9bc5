/* The patcher: Caliper's lazy instrumentation. Every function entry gets
 * an int3; at a function's first call (or ahead of it, in a warm-start
 * batch) the whole function is relocated into its module's window with the
 * probe plan inlined, its entry becomes a jump to the copy, and branches of
 * other copies that led to its original entry are re-pointed. A copy can
 * be made again when the plan changes (probes added and removed while the
 * program runs).
 *
 * It works on the address-space model (space/space.h) and reads warm
 * start's store (warm/warm.h). It never calls the engine: what the engine
 * must hear of goes up through struct patch_events or a return code, what
 * it must know of the session comes down in struct patch_env. */
#ifndef RETICLE_PATCH_H
#define RETICLE_PATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <reticle/binary.h>
#include <reticle/session.h>
#include "space/space.h"

struct probe_set;
struct ahead;
struct unw_templates;
struct x86_access;
struct x86_insn;
struct x86_analysis;

/* What the patcher tells the engine, and asks of the collectors' runtime
 * while it emits a copy. Every member is set. */
struct patch_events {
	/* Function K of M has a new copy, its entry leads there (first made,
	 * or made again): unwind information, the sampler, the debugger. */
	void (*relocated)(struct proc *p, struct module *m, size_t k);
	/* An armed entry at run-time ADDR of M trapped, before the patcher
	 * relocates it alone: warm start's batches due run first. */
	void (*first_call)(struct proc *p, struct module *m, uint64_t addr);
	/* The number of data access A of the instruction at run-time INSN,
	 * for memory tracing's records (0: none), chained AFTER another
	 * (relocate.h); an instruction whose accesses cannot be traced. */
	uint32_t (*memory_point)(struct proc *p, uint64_t insn, const struct x86_access *a, uint32_t after,
				 int64_t delta);
	void (*memory_untraced)(struct proc *p, uint64_t insn);
	/* A copy's jump table at COPY, BYTES long, of the program's at ORIG. */
	void (*memory_table)(struct proc *p, uint64_t copy, uint64_t orig, uint64_t bytes);
	/* FS's copy has a timer whose counter DESC holds its number. */
	void (*timer_placed)(struct proc *p, struct func_state *fs, uint64_t desc);
	/* A new point counted in the arc table: numbered, its words written. */
	int (*arc_site)(struct proc *p, struct point_rec *pr);
};

/* What the patcher needs of the session: one per session, set before its
 * first process and read through every process's state (fields may change
 * until a helper thread starts). */
struct patch_env {
	const struct probe_set *probes;   /* the collectors' plans */
	bool dynamic;                     /* copies may be made again (a 5-byte nop heads each) */
	bool twins;                       /* memory-tracing copies get untraced twins (memtrace --sample) */
	bool windows;                     /* memtrace --sample: its copies count their windows down */
	struct ahead *ahead;              /* copies made ahead on a helper thread, or NULL */
	struct rtl_session_stats *stats;  /* counted here: functions, traps, seconds, restored copies */
	const struct patch_events *ev;
	bool mem_chain;                   /* memtrace: accesses chained within blocks (MetaSim's analysis) */
	/* the CPUs reticle may use (a helper thread arms half a large module's
	 * entries there), or NULL: one CPU, or not known */
	const struct os_cpus *cpus;
	/* each binary's unwind tables as read once in the session
	 * (module_unwind.c), or NULL: read for every module */
	struct unw_templates *unw_templates;
};

/* A rel32 field in a copy that branches to a function's original entry,
 * re-pointed at the function's copy once it has one. */
struct branch_patch {
	uint64_t field;           /* run-time address of the rel32 */
	uint32_t next;            /* the function's next one: index+1, 0 at the end */
	uint16_t win;             /* the window holding the field */
};

/* The patcher's state of one process image. */
struct patch_proc {
	const struct patch_env *env;
	/* counter increments still in their single-thread form (writer.h) */
	struct { uint64_t addr; bool keep_flags; } *sites;
	size_t nsites, capsites;
	struct branch_patch *patches;
	size_t npatches, cappatches;
	/* original return addresses with an int3 (no room for a jump back into
	 * the copy there), sorted by AT: a trap there goes on at TO */
	/* RTL_PRIM_CALL's int3s in the copies, sorted by AT (run-time): the
	 * point (original run-time ADDR, KIND), the snippet's ID, the function */
	struct call_trap { uint64_t at, addr; uint32_t id, mod, fn; uint8_t kind; } *call_traps;
	size_t ncall_traps, capcall_traps;
	struct ret_trap { uint64_t at, to; uint32_t hits; } *ret_traps;
	size_t nret_traps, capret_traps;
	/* cover's one-shot int3s in the original code of functions whose
	 * copies were given up (revert.c), sorted by AT: the block's COUNTER
	 * (at an entry, maybe a second: the entry's and its first block's),
	 * the byte under the int3, whether a thread met it */
	struct probe_trap { uint64_t at, counter, counter2; uint32_t mod; uint8_t orig; bool fired; } *probe_traps;
	size_t nprobe_traps, capprobe_traps;
	bool probe_traps_unsorted;   /* traps added since (sorted at the next look) */
	/* int3s at the block starts of copies given up (revert.c): a thread
	 * still in such a copy (its pc, or a frame it returns to) meets one
	 * at its next block and goes on at the block's original address TO.
	 * Threads move so, by themselves, instead of being interrupted: an
	 * interrupt cut blocking writes short (CPython lost pipe data). */
	struct move_trap { uint64_t at, to; uint8_t orig; } *move_traps;
	size_t nmove_traps, capmove_traps;
	bool move_traps_unsorted;
	/* the point records of copies made again (lazy_reinstrument): what
	 * they counted still counts, in finish() and live views */
	struct retired_points {
		uint32_t mod, fn, point0, npoints;
		uint64_t entry;
		uint32_t code_len, nmap;
		uint64_t *map_from, *map_to;   /* as its func_state had them */
	} *retired;
	size_t nretired, capretired;
	/* PLT stubs that copies call while unbound: their slots are read
	 * again when a thread exits, so that calls through them are counted
	 * for the function the loader bound (lazy_bind_plt) */
	struct { uint32_t mod, fn; } *plt_watch;
	size_t nplt_watch, capplt_watch;
	/* entry jumps of a warm-start batch, written together at its end
	 * while the one thread is stopped */
	struct { uint64_t at; uint8_t insn[5]; } *entries;
	size_t nentries, capentries;
	bool defer_entries;
	bool in_batch;            /* a warm-start batch is being relocated */
};

/* P's state (P->patch), for the session's ENV; false without memory. */
bool patch_proc_init(struct proc *p, const struct patch_env *env);
/* A fork child C (its state fresh from patch_proc_init) gets a copy of
 * its parent P's. */
bool patch_proc_fork(const struct proc *p, struct proc *c);
/* P's state and its modules' function states freed. */
void patch_proc_free(struct proc *p);

/* Arming M, in two steps: which entries get an int3 (their indices in
 * IDX, room for every function; the count returned; the others get their
 * reason), then the int3s written (lazy_arm_write), or, where the text was
 * mapped from a copy armed the same way (warm/armed_text.c), only noted. */
size_t lazy_arm_plan(struct module *m, uint32_t *idx);
void lazy_arm_write(struct proc *p, struct module *m, const uint32_t *idx, size_t armed);
void lazy_arm_mapped(struct module *m, const uint32_t *idx, size_t armed);
/* Only the functions whose calls reticle must see (libc's ptrace), for a
 * session that does not instrument (sampling alone). */
void lazy_arm_hooks(struct proc *p, struct module *m);
/* r_brk (_dl_debug_state), which P->r_brk holds, gets its int3 of its own
 * (often a lone 'ret', too short to patch). */
void lazy_arm_r_brk(struct proc *p);

enum patch_trap {
	PATCH_TRAP_NOT_MINE,      /* the program's own int3 */
	PATCH_TRAP_HANDLED,       /* the thread may resume */
	PATCH_TRAP_LOADER,        /* the loader's r_brk: a module came or went */
};
/* A thread TID stopped at an int3 just before PC. */
enum patch_trap patch_breakpoint(struct proc *p, pid_t tid, uint64_t pc);
/* Whether ADDR is a function entry where reticle put an int3. */
bool lazy_is_entry_trap(struct proc *p, uint64_t addr);

/* Function K of M read, decoded and analysed (relocate.h's x86_analyze):
 * reads only the binaries and P's module list, so a helper thread may do
 * it ahead while relocation goes on (nothing adds modules meanwhile). */
struct lazy_decoded {
	uint8_t *code;
	struct x86_insn *insns;
	size_t ninsns;
	uint64_t *interior;       /* run-time code pointers into it */
	size_t ninterior;
	uint64_t *foreign;        /* where its .cold parts jump back (x86_foreign_entries) */
	size_t nforeign;
	bool foreign_known;
	struct x86_analysis *an;
	bool cached;              /* INSNS came from the decode cache */
	/* a copy saved by an earlier run (warm/copy_cache.c) or made ahead
	 * (MADE, malloc'd: warm/ahead.c): then nothing was decoded */
	const void *copy;
	size_t copy_len;
	void *made;
	int err;                  /* its bytes unreadable, or the analysis refused it */
	const char *reason;       /* why, then */
};
void lazy_decode(struct proc *p, struct module *m, size_t k, struct lazy_decoded *d);
/* The same, always decoded and analysed (D->an), never a saved copy. */
void lazy_analyze(struct proc *p, struct module *m, size_t k, struct lazy_decoded *d);
void lazy_decoded_free(struct lazy_decoded *d);
/* Relocates armed function K of M before its first call (its callees keep
 * their traps), from PRE when decoded already (NULL: decodes it); on
 * failure restores its entry and marks it skipped. */
int lazy_instrument_now(struct proc *p, struct module *m, size_t k, struct lazy_decoded *pre);
/* A batch of lazy_instrument_now (of about NFUNCS functions): its entry
 * jumps are written together at its end when P has one thread, stopped
 * (and P is not attached). */
void patch_batch_begin(struct proc *p, size_t nfuncs);
void patch_batch_end(struct proc *p);
/* Function K of M, relocated already, gets a copy made again as the plan
 * stands now: its entry and its old copy's first instruction lead there
 * (written as with threads running), calls in the old copy finish there,
 * and the old copy's point records stay (patch_each_retired_point). */
struct reinstrumented;
int lazy_reinstrument(struct proc *p, struct module *m, size_t k, struct reinstrumented *out);
/* What lazy_reinstrument made: the numbered timers the new copy's entry
 * starts unconditionally and whose latency nothing reads (x86_reloc's
 * entry_timers). */
struct reinstrumented {
	uint32_t timers[16];
	size_t ntimers;
};
/* The RTL_PRIM_CALL trap whose int3 is at AT, or NULL. */
const struct call_trap *patch_call_trap_at(const struct proc *p, uint64_t at);
/* The copy of a function made before its current one that holds PC, or
 * NULL. */
const struct retired_points *patch_retired_at(const struct proc *p, uint64_t pc);
/* The point records of function FN of module MOD in copies made before its
 * current one: calls EACH(rec, ctx) for each. */
void patch_each_retired_point(struct proc *p, size_t mod, size_t fn,
			      void (*each)(const struct point_rec *pr, void *ctx), void *ctx);
/* Whether any copy was made again (its old point records kept). */
bool patch_has_retired(const struct proc *p);
/* Whether P's program needs original return addresses (decided once its
 * executable is known: Go, V8, backtrace(); RETICLE_ORIGINAL_RETURNS=0|1
 * forces it). */
bool lazy_wants_original_returns(const rtl_binary *exe);
/* The imports that mark a binary as walking its own stack (backtrace,
 * _Unwind_Backtrace): a program whose libraries import them wants original
 * return addresses too (the engine looks, elf/needed.c). */
const char *const *lazy_stack_walkers(size_t *n);
/* Reads the slots of the PLT stubs in P's plt_watch (a thread is exiting:
 * the process's memory is still there). */
void lazy_bind_plt(struct proc *p);
/* The process gets a second thread: every counter increment becomes the
 * thread's own (P->thread_counters) or atomic. */
void patch_go_multithreaded(struct proc *p);
/* The same for the one increment whose first byte reticle reaches at
 * SITE, run-time address AT (a copy being placed, or in its window). */
void patch_switch_site(struct proc *p, uint8_t *site, uint64_t at, bool keep_flags);
/* An int3 at original address AT that sends a thread coming there to TO
 * in a copy (kept for the process's life). */
int lazy_return_trap(struct proc *p, uint64_t at, uint64_t to);
bool lazy_has_return_trap(const struct proc *p, uint64_t at);

/* Every data word known (from relocations) to hold an interior address of
 * F of M points at F's copy (FROM/TO: its map, N entries): a NEW_COPY's
 * words are written as they are; the others only where they hold the
 * address they go from (the original's, or the copy's). Not in a non-PIE
 * executable, whose code pointers are guessed from data values. */
enum code_pointers_to { POINTERS_TO_NEW_COPY, POINTERS_TO_COPY, POINTERS_TO_ORIGINAL };
void patch_code_pointers(struct proc *p, struct module *m, const rtl_function *f, const uint64_t *from,
			 const uint64_t *to, size_t n, enum code_pointers_to where);

/* revert.c (cover alone): whether function K of M may go back to its
 * original code, and that done, with the functions its original code
 * jumps into the middle of: their unfired blocks get one-shot int3s, the
 * data words into their copies and their entries their original values
 * (with threads running); the copies stay for frames in them. Tried once.
 * How many functions went back, or an error. */
bool patch_may_revert(const struct proc *p, const struct module *m, size_t k);
int patch_revert(struct proc *p, struct module *m, size_t k);
/* A probe trap at AT met by TID: its counter set, its byte back. */
enum patch_trap patch_probe_trap(struct proc *p, pid_t tid, uint64_t at);
bool patch_is_probe_trap(struct proc *p, uint64_t at);
/* A move trap at AT (a block of a copy given up) met by TID: it goes on
 * in the original code. */
enum patch_trap patch_move_trap(struct proc *p, pid_t tid, uint64_t at);
/* A fork child C (stopped) runs its functions' copies again: its counters
 * start at 0, its copies lose their move traps. */
void patch_fork_unrevert(struct proc *c);
/* The probe traps not met get their bytes back (the process is let go);
 * how many could not. */
size_t patch_release_probe_traps(struct proc *p);
/* The move traps get their bytes back (the process is let go). */
void patch_release_move_traps(struct proc *p);

/* module_unwind.c: M's unwind information (.eh_frame, its LSDAs), loaded
 * when first needed; NULL when M has none worth registering (C code). */
struct unw_image *patch_module_unwind(struct proc *p, struct module *m);
void patch_module_unwind_free(struct module *m);
/* The session's store of each binary's tables, read once (at link-time
 * addresses) and lent to every module of it. */
struct unw_templates *patch_unw_templates_new(void);
void patch_unw_templates_free(struct unw_templates *t);
/* The landing pads of F in M (run-time addresses, sorted; *PADS malloc'd):
 * with original return addresses, an exception caught in a frame of a
 * copy lands in F's original code there (resume points). */
size_t patch_landing_pads(struct proc *p, struct module *m, const rtl_function *f, uint64_t **pads);

#endif
