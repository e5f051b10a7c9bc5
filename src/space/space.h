/* The address-space model: the processes reticle follows, their modules
 * and threads, and the instrumentation state of every function, with the
 * lookups by address and the writes into a process's code that every part
 * needs. The engine, the patcher (patch/patch.h), warm start and the
 * collectors' engine side read it; it calls none of them.
 *
 * A struct proc is one process image (an address space between exec calls).
 * It owns its modules' function states, its shared memory (struct shm) and
 * its /proc/PID/mem descriptor. Binaries (rtl_binary) belong to the session's
 * cache and are shared by every proc that maps them. */
#ifndef RETICLE_SPACE_H
#define RETICLE_SPACE_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <reticle/binary.h>
#include <reticle/profile.h>
#include <reticle/session.h>
#include "runtime/thread_area.h"
#include "runtime/window.h"

struct patch_proc;
struct x86_sp_row;
struct memtrace;
struct bbv;
struct text_snapshot;
struct fn_memo;
struct unw_image;
struct fn_cache;
struct thread_times;

enum func_status {
	FS_NONE,       /* not armed: not instrumentable, or never seen */
	FS_ARMED,      /* int3 at the entry, waiting for the first call */
	FS_DONE,       /* relocated; the entry jumps to the copy */
	FS_SKIPPED,    /* the relocator refused it; original byte restored */
	FS_NOTIFY,     /* the dynamic loader's r_brk: int3 stays for dlopen news */
	FS_BUSY,       /* being relocated (its branch targets are instrumented first) */
	/* libc's ptrace: never relocated, its int3 kept, every call seen
	 * (session.c, ptrace_hook: a process asking to be traced is let go) */
	FS_HOOK,
};

/* One per function of a module (cc1: 45,698 of them, written at arming):
 * its fields by size, eight-byte ones first, so that no padding is left. */
struct func_state {
	const char *reason;       /* why skipped (static string) */
	uint64_t entry;           /* run-time address of the relocated copy */
	uint64_t entry_counter;   /* run-time counter address, 0 if none */
	uint64_t *map_from, *map_to; /* original -> relocated instruction addresses */
	/* the untraced twin after the copy (isa/x86_64/memtrace.h), or NULL:
	 * where it starts and its address of each map_from */
	uint64_t twin_start;
	uint64_t *twin_to;
	/* where the copy's snippets move %rsp (their offsets in the copy), for
	 * its unwind information */
	struct x86_sp_row *sp_rows;
	int64_t profile_id;       /* row id while a profile is written */
	uint64_t timer_desc;      /* the counter of its copy that holds its timer (below) */
	uint64_t left_head;       /* the copy's first 8 bytes before they became a jump out of it */
	uint64_t calls_seen;      /* its entry counter at the last sweep (cover: kept counting) */
	/* a function that branches into this one's interior (its .cold part
	 * rejoining it, say), index+1: listed for warm start when that one ran */
	uint32_t companion_of;
	uint32_t code_len;        /* bytes of the copy */
	uint32_t block0, nblocks; /* slice of proc->blocks */
	uint32_t call0, ncalls;   /* slice of proc->calls */
	uint32_t point0, npoints; /* slice of proc->points */
	uint32_t nmap;
	uint32_t nsp_rows;
	uint32_t patch_head;      /* branches in copies to re-point at the copy: index+1 */
	/* a PLT stub whose GOT slot was unbound when P had been resumed that
	 * many times, plus one (0: not seen unbound) */
	uint32_t plt_unbound;
	/* its timer: the offset of its words in a thread area (timers.c), 0 if
	 * none; timer_desc above is the counter that holds it */
	uint32_t timer;
	uint8_t status;
	uint8_t orig;             /* original byte under the int3 */
	bool queued;              /* in the warm-start batch being relocated */
	bool plt_watched;         /* a PLT stub in proc->plt_watch */
	bool swept;               /* its copy's increments are on P's sweep list (sweep.c) */
	bool sweep_listed;        /* on P's list of relocated functions (sweep_fns) */
	bool revert_tried;        /* cover: its copy considered for giving up (patch/revert.c) */
	bool reverted;            /* and given up: its entry is the original's again */
	bool calls_hot;           /* and called often enough between the last two */
	/* the run's context (engine/span.h): outside its scope (never armed),
	 * or a function whose first call is an edge of its span (armed until
	 * that call: never relocated ahead of it) */
	bool outside, edge;
};

/* The copy addresses of FS's map_from among which run-time PC, in its
 * copy, lies: the twin's from the twin's start on. */
static inline const uint64_t *func_state_labels(const struct func_state *fs, uint64_t pc)
{
	return fs->twin_to && pc >= fs->twin_start ? fs->twin_to : fs->map_to;
}

struct block_rec {
	uint64_t addr;            /* run-time */
	uint32_t ninstrs;
	uint64_t counter;         /* run-time counter address, 0 if none */
	uint64_t rep_counter;     /* iterations of its rep instructions, 0 if none */
	uint32_t via[2];          /* no counter: the blocks (index + 1 in its function) one of
				   * which ran exactly when it did (x86_block's) */
};

struct point_rec {
	uint64_t addr;            /* run-time */
	uint64_t counter;         /* RTL_POINT_INDIRECT_TARGET: its two words (arcs.c) */
	uint8_t kind;             /* enum rtl_point_kind */
	uint32_t site;            /* RTL_POINT_INDIRECT_TARGET, RTL_PRIM_COUNT_BY: its number in the
				   * arc table */
	uint32_t id;              /* the snippet's own id, 0 when shared */
	uint8_t op;               /* RTL_PRIM_COUNT, or RTL_PRIM_COUNT_BY (two words: arcs.c) */
};

/* Whether PR's counter is two words of the arc table's (arcs.c). */
static inline bool point_in_arcs(const struct point_rec *pr)
{
	return pr->kind == RTL_POINT_INDIRECT_TARGET || pr->op == RTL_PRIM_COUNT_BY;
}

struct call_rec {
	uint64_t site, target;    /* run-time */
	uint32_t block;           /* index into proc->blocks */
};

struct x86_foreign_cache;

struct module {
	char *path;
	uint64_t bias;            /* run-time = link-time + bias */
	uint64_t lo, hi;          /* run-time extent of its loadable segments */
	rtl_binary *bin;          /* owned by the session cache */
	struct func_state *fs;    /* one per rtl_binary function */
	int win;                  /* window index in proc->shm, -1 if none */
	bool is_main;
	int64_t profile_id;       /* its row while a profile is written, -1 before */
	uint64_t go_deferreturn;  /* Go's runtime.deferreturn (run-time), 0 if none */
	bool go_deferreturn_known;
	bool unloaded;            /* dlclose'd: kept for the profile, never matched */
	bool return_tables;       /* fn_has_return_tables: its code pointers stay */
	/* why none of its functions is instrumented (a runtime's own code:
	 * Mono's ahead-of-time images), or NULL */
	const char *left_out;
	struct unw_image *unw;    /* its .eh_frame, loaded when first needed */
	bool unw_failed;
	/* warm start (patch/warm.c): link-time entries (with ages) of the
	 * functions that ran in earlier runs, as read from the cache */
	uint64_t *warm;
	size_t nwarm;
	bool warm_pending;        /* still to be relocated in a batch */
	/* the listed functions decoded (patch/decode_cache.c) and relocated
	 * (patch/copy_cache.c) in earlier runs: NULL without warm start */
	struct fn_cache *dcache, *ccache;
	struct x86_foreign_cache *foreign;   /* its functions' branches out, learnt (foreign.c) */
};

struct thread {
	pid_t tid;
	int pending_sig;          /* signal to deliver on the next resume */
	int area;                 /* its thread area (timers.c), -1 if none */
	/* detaching: stopped for good (its interrupt seen), and whether that
	 * stop was a group-stop (job control), which it stays in */
	bool held, group_stopped;
	/* past its exit event: it stops no more (a main thread that exits
	 * before the others stays a zombie, whose wait ends with the last) */
	bool exited;
	uint64_t gs_orig;         /* attached: its %gs base before reticle gave it an area */
};

/* A process's span (engine/span.h): where it stands, the counters
 * copied at its edges. */
struct span_snap;
struct proc_span {
	uint8_t state;            /* enum span_state */
	uint64_t from_ns;         /* when it started (the session's clock) */
	struct span_snap *from, *to;
};

struct proc {
	struct rtl_session *s;
	struct proc_span span;
	/* the patcher's own state (patch/patch.h) */
	struct patch_proc *patch;
	struct memtrace *mt;      /* memory tracing's state (memtrace.c), NULL if none */
	struct bbv *bbv;          /* basic-block vectors' state (bbv.c), NULL if none */
	pid_t pid;
	int mem;                  /* /proc/PID/mem */
	struct shm shm;
	uint64_t gadget;          /* 'syscall; int3' in the first window, 0 before */
	struct module *mods;
	size_t nmods;
	struct thread *threads;
	size_t nthreads;
	bool exiting;             /* its last thread is leaving (no sweeps: they would not pay) */
	struct block_rec *blocks;
	size_t nblocks, capblocks;
	struct call_rec *calls;
	size_t ncalls, capcalls;
	struct point_rec *points;  /* counters at other points (branch edges) */
	size_t npoints, cappoints;
	bool multithreaded;       /* increments are atomic from now on */
	/* and then each thread's own, in its area's slab (engine/timers.c):
	 * a counter's value is its word plus every area's slab word */
	bool thread_counters;
	bool gs_taken;            /* a thread was found with a %gs base of its own (warned) */
	/* every window's counters summed at once (proc_counters_freeze):
	 * proc_read_counter reads them there, NULL when not frozen */
	uint64_t **frozen;
	/* let go while it runs (release_launched): its copies and thread
	 * areas stay as they are, in use */
	bool runs_on;
	/* unwind information: relocated functions whose FDE is still to be
	 * registered with the target's __register_frame_info */
	struct { uint32_t mod, fn; } *unw_pending;
	size_t nunw_pending, capunw_pending;
	uint64_t register_frame;  /* __register_frame_info in the target, 0 if none yet */
	bool unwinder_relocated;  /* the loader has relocated its module */
	bool tls_ready;           /* libc has set up the thread pointer */
	/* libgcc's object_mutex, which registration takes: 0 not looked for
	 * yet, 1 not found (another unwinder, or one without the lock) */
	uint64_t unwind_lock;
	/* copies push original return addresses (patch/lazy.c): the program
	 * walks its own stack (Go, V8) or calls backtrace(); SOFT: only a
	 * library it needs does, and calls whose return points cannot take a
	 * jump keep code-cache return addresses (x86_reloc_env) */
	bool original_returns, original_returns_soft;
	/* a vfork child let go at PTRACE_TRACEME: the instrumented text it
	 * shares with its parent, put back when the parent goes on (session.c) */
	struct text_snapshot *vfork_text;
	bool unwind_off;          /* a registration call failed: none made any more */
	bool unwind_at_entry;     /* one jumped to 0 before the entry point: wait for it */
	bool in_call;             /* an inferior function call is running */
	/* functions relocated while it ran: their counts are its, not the
	 * program's (unwind_register.c) */
	struct { uint32_t mod, fn; } *call_fns;
	size_t ncall_fns, capcall_fns;
	uint64_t r_debug;         /* run-time address of the loader's _r_debug */
	uint64_t r_brk;
	bool trap_act_saved;      /* the program's SIGTRAP handler is known */
	uint64_t trap_act[4];     /* its SIGTRAP disposition (kernel struct sigaction) */
	uint64_t trap_looked_ns;  /* when a signal last had its SigCgt read (sigtrap.c) */
	char *command;            /* its command line, for the profile */
	/* its place in the session's process tree (the profile's processes) */
	int64_t image, parent_image;
	unsigned exec_gen;        /* execs of this pid before this image (the sampler's key) */
	const char *kind;         /* "launch", "fork" or "exec" */
	uint64_t start_ns;        /* since the session started */
	bool ended;
	int status;               /* shell-style exit status once ended */
	bool warm_started;        /* the program reached its entry point */
	uint32_t resumes;         /* times a thread was resumed (dates plt_unbound) */
	/* proc_function_at's answers by address (NULL until first used; reset
	 * when modules come or go) */
	struct fn_memo *memo;
	/* per-thread areas when a collector times functions (timers.c) */
	struct thread_region areas;
	size_t ntimers;           /* timers numbered so far (0 is the overflow one) */
	struct thread_times *times;   /* of threads that have ended */
	size_t ntimes, ntimes_cap;
	uint64_t ncontexts;       /* context ids given so far */
	/* TSC ticks per second for the profile being written: one rate for all
	 * its times, so that function_times and contexts agree (proc_write_profile) */
	double tsc_hz;
	/* reticle attached to it while it ran (attach.c): each write of
	 * reticle's into its text or data is logged with the bytes it
	 * replaced, so that detaching puts them all back */
	bool attached;
	/* attached: the words of the threads' stacks at the attach that lie in
	 * armed functions (sorted): where frames may resume, which no return-
	 * point jump may cover (patch_returns) */
	uint64_t *resume_words;
	size_t nresume_words, capresume_words;
	bool left;                /* attach_leave ran: STUCK threads could not leave the copies */
	size_t stuck;
	struct undo_rec { uint64_t addr; uint32_t len; uint8_t *old; } *undo;
	size_t nundo, capundo;
	/* probes that remove themselves (sweep.c): on when cover is the only
	 * collector; increments still to sweep (SKIP: the jump's, 0 for a
	 * nop), those swept (with the 8 bytes they had, which a fork child
	 * gets back), how many */
	bool sweeping;
	struct sweep_site { uint64_t at, counter, seen; uint32_t mod, fn; uint8_t len; } *sweep;
	size_t nsweep, capsweep;
	size_t sweep_next;        /* where a sweep cut short goes on */
	/* the functions relocated, in turn (module index, function): a sweep
	 * finds the increments of those from SWEEP_FNS_FOUND on, and looks at
	 * no other function (clang++ has 300,000: reading every one's state
	 * at each sweep was 70% of a run under cover) */
	struct sweep_fn { uint32_t mod, fn; } *sweep_fns;
	size_t nsweep_fns, capsweep_fns, sweep_fns_found;
	struct swept_site { uint64_t at; uint64_t old; } *swept_sites;
	size_t nswept, capswept;
	uint64_t sweep_removed;
	uint64_t copies_given_up;   /* for the original code (sweep.c) */
	/* unwind blobs registered with the target's libgcc (unwind.c) */
	uint64_t *unw_objects;
	size_t nunw_objects, capunw_objects;
};

/* space.c: lookups and writes */
struct thread *proc_thread(struct proc *p, pid_t tid);
struct module *proc_module_at(struct proc *p, uint64_t addr);
/* The function holding run-time ADDR and its module (*MP), or NULL. The
 * relocator asks the same addresses several times: answers are kept, so
 * this is for the thread that changes P (not helper threads). */
const rtl_function *proc_function_at(struct proc *p, uint64_t addr, struct module **mp);
/* Modules came or went: proc_function_at's kept answers are void. */
void proc_forget_functions(struct proc *p);
/* Whether M is the dynamic loader (the module holding _r_debug). */
bool proc_is_loader(const struct proc *p, const struct module *m);
/* The state of the function whose entry is run-time ADDR (and its module
 * and record, when asked), or NULL when no function starts there. */
struct func_state *proc_entry_at(struct proc *p, uint64_t addr, struct module **m,
				 const rtl_function **f);
void proc_describe_pc(struct proc *p, uint64_t pc, char *buf, size_t len);
/* The value of the counter at run-time ADDR in one of P's windows (0 if none). */
uint64_t proc_read_counter(struct proc *p, uint64_t addr);
/* Reads of many counters while threads count in slabs: each window's
 * words and slabs summed once (a pread per area and window, not per
 * counter), which proc_read_counter then reads until the thaw. */
void proc_counters_freeze(struct proc *p);
void proc_counters_thaw(struct proc *p);
/* Window W's first N counter words (of its counter area), as
 * proc_read_counter reads each, into OUT. */
void proc_read_counters(struct proc *p, const struct window *w, size_t n, uint64_t *out);
/* The window holding the LEN bytes at run-time ADDR (code or counters), or NULL. */
struct window *proc_window_at(struct proc *p, uint64_t addr, size_t len);
/* The relocated copy holding run-time PC: its function state (and *MP its
 * module), or NULL. */
struct func_state *proc_copy_at(struct proc *p, uint64_t pc, struct module **mp);
/* Writes LEN bytes at run-time ADDR of P's text or data (a patch of
 * reticle's), logging what they replace when P is attached. */
int proc_patch_write(struct proc *p, uint64_t addr, const void *buf, size_t len);
/* Writes BYTE at AT of P's code: through reticle's own mapping when AT is
 * in a window (the process maps windows read-only), else into its text;
 * LASTING as proc_patch_write (logged when attached), else a byte put
 * back for one single step, not logged. */
int proc_code_write(struct proc *p, uint64_t at, uint8_t byte, bool lasting);
/* F's maps freed (a function state that goes). */
void func_state_release(struct func_state *f);

#endif
