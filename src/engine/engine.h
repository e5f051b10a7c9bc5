/* The engine's model of traced processes: address spaces, their modules and
 * threads, and the instrumentation state of every function.
 *
 * A struct proc is one process image (an address space between exec calls).
 * It owns its modules' function states, its shared memory (struct shm) and
 * its /proc/PID/mem descriptor. Binaries (rtl_binary) belong to the session's
 * cache and are shared by every proc that maps them. */
#ifndef RETICLE_ENGINE_H
#define RETICLE_ENGINE_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <reticle/binary.h>
#include <reticle/profile.h>
#include <reticle/session.h>
#include "probe/plan.h"
#include "runtime/thread_area.h"
#include "runtime/window.h"

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

struct func_state {
	uint8_t status;
	uint8_t orig;             /* original byte under the int3 */
	bool queued;              /* in the warm-start batch being relocated */
	/* a function that branches into this one's interior (its .cold part
	 * rejoining it, say), index+1: listed for warm start when that one ran */
	uint32_t companion_of;
	const char *reason;       /* why skipped (static string) */
	uint64_t entry;           /* run-time address of the relocated copy */
	uint32_t code_len;        /* bytes of the copy */
	uint64_t entry_counter;   /* run-time counter address, 0 if none */
	uint32_t block0, nblocks; /* slice of proc->blocks */
	uint32_t call0, ncalls;   /* slice of proc->calls */
	uint32_t point0, npoints; /* slice of proc->points */
	uint64_t *map_from, *map_to; /* original -> relocated instruction addresses */
	uint32_t nmap;
	int64_t profile_id;       /* row id while a profile is written */
	uint32_t patch_head;      /* branches in copies to re-point at the copy: index+1 */
	/* a PLT stub whose GOT slot was unbound when P had been resumed that
	 * many times, plus one (0: not seen unbound) */
	uint32_t plt_unbound;
	bool plt_watched;         /* a PLT stub in proc->plt_watch */
	/* its timer: the offset of its words in a thread area, and the
	 * counter of its copy that holds it (timers.c); 0 if none */
	uint32_t timer;
	uint64_t timer_desc;
	bool swept;               /* its copy's increments are on P's sweep list (sweep.c) */
};

/* A rel32 field in a copy that branches to a function's original entry,
 * re-pointed at the function's copy once it has one (patch/lazy.c). */
struct branch_patch {
	uint64_t field;           /* run-time address of the rel32 */
	uint32_t next;            /* the function's next one: index+1, 0 at the end */
	uint16_t win;             /* the window holding the field */
};

struct block_rec {
	uint64_t addr;            /* run-time */
	uint32_t ninstrs;
	uint64_t counter;         /* run-time counter address, 0 if none */
	uint64_t rep_counter;     /* iterations of its rep instructions, 0 if none */
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
};

struct thread {
	pid_t tid;
	int pending_sig;          /* signal to deliver on the next resume */
	int area;                 /* its thread area (timers.c), -1 if none */
	/* detaching: stopped for good (its interrupt seen), and whether that
	 * stop was a group-stop (job control), which it stays in */
	bool held, group_stopped;
	uint64_t gs_orig;         /* attached: its %gs base before reticle gave it an area */
};

/* The timers of a thread that has ended (timers.c). */
struct thread_times {
	pid_t tid;
	struct ta_timer *t;       /* by timer number */
	size_t n;
	struct ta_node *nodes;    /* its context tree: node K at [K - 1] */
	size_t nnodes;
	uint64_t first_id;        /* the context id of node 1 */
};

/* The contexts of an image, by timer (timers_contexts). */
struct contexts {
	struct context_rec {
		uint32_t timer;
		struct rtl_context_view v;
	} *r;
	size_t n;
};

struct proc {
	struct rtl_session *s;
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
	struct block_rec *blocks;
	size_t nblocks, capblocks;
	struct call_rec *calls;
	size_t ncalls, capcalls;
	struct point_rec *points;  /* counters at other points (branch edges) */
	size_t npoints, cappoints;
	/* counter increments still in their single-thread form (writer.h) */
	struct { uint64_t addr; bool keep_flags; } *sites;
	size_t nsites, capsites;
	bool multithreaded;       /* increments are atomic from now on */
	struct branch_patch *patches;
	size_t npatches, cappatches;
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
	 * walks its own stack (Go, V8) or calls backtrace() */
	bool original_returns;
	/* a vfork child let go at PTRACE_TRACEME: the instrumented text it
	 * shares with its parent, put back when the parent goes on (session.c) */
	struct text_snapshot *vfork_text;
	/* original return addresses with an int3 (no room for a jump back into
	 * the copy there), sorted by AT: a trap there goes on at TO */
	struct ret_trap { uint64_t at, to; } *ret_traps;
	size_t nret_traps, capret_traps;
	/* the point records of copies made again (lazy_reinstrument): what
	 * they counted still counts, in finish() and live views */
	struct retired_points { uint32_t mod, fn, point0, npoints; uint64_t entry; } *retired;
	size_t nretired, capretired;
	bool unwind_off;          /* a registration call failed: none made any more */
	/* PLT stubs that copies call while unbound: their slots are read
	 * again when a thread exits, so that calls through them are counted
	 * for the function the loader bound (lazy_bind_plt) */
	struct { uint32_t mod, fn; } *plt_watch;
	size_t nplt_watch, capplt_watch;
	bool in_call;             /* an inferior function call is running */
	uint64_t r_debug;         /* run-time address of the loader's _r_debug */
	uint64_t r_brk;
	bool trap_act_saved;      /* the program has received a SIGTRAP of its own */
	uint64_t trap_act[4];     /* its SIGTRAP disposition (kernel struct sigaction) */
	char *command;            /* its command line, for the profile */
	/* its place in the session's process tree (the profile's processes) */
	int64_t image, parent_image;
	unsigned exec_gen;        /* execs of this pid before this image (the sampler's key) */
	const char *kind;         /* "launch", "fork" or "exec" */
	uint64_t start_ns;        /* since the session started */
	bool ended;
	int status;               /* shell-style exit status once ended */
	bool warm_started;        /* the program reached its entry point */
	/* entry jumps of a warm-start batch, written together at its end
	 * (patch/lazy.c) while the one thread is stopped */
	struct { uint64_t at; uint8_t insn[5]; } *entries;
	size_t nentries, capentries;
	bool defer_entries;
	bool in_batch;            /* a warm-start batch is being relocated */
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
	struct sweep_site { uint64_t at, counter; uint8_t skip; } *sweep;
	size_t nsweep, capsweep;
	struct swept_site { uint64_t at; uint64_t old; } *swept_sites;
	size_t nswept, capswept;
	uint64_t sweep_removed;
	/* unwind blobs registered with the target's libgcc (unwind.c) */
	uint64_t *unw_objects;
	size_t nunw_objects, capunw_objects;
};

/* arcs.c: indirect call sites in their windows' arc tables */
struct arc_entry;
struct arcs {
	struct { struct arc_entry *v; size_t n; } *wins;   /* per window, by key */
	size_t nwins;
};
/* Numbers the new site PR in its window and writes its two words. */
int arcs_site_init(struct proc *p, struct point_rec *pr);
/* Writes every site's words again (a forked child's counters start at 0). */
void arcs_refresh(struct proc *p);
/* Reads every window's arc table. */
int arcs_collect(struct proc *p, struct arcs *out);
/* The (target, count) entries of site PR, in *FIRST: how many. */
size_t arcs_of_site(struct proc *p, const struct arcs *a, const struct point_rec *pr,
		    const struct arc_entry **first);
void arcs_free(struct arcs *a);

/* timers.c: thread areas and the function timers in them */
/* Maps the region of thread areas into a new image and gives thread TID
 * one (when the session's collectors time functions). */
int timers_setup_image(struct proc *p, pid_t tid);
/* A thread CHILD sharing P's memory (a thread, a vfork child): its area. */
void timers_new_thread(struct proc *p, pid_t child);
/* The region of a forked child C of P, whose thread forked as TID. */
int timers_fork(struct proc *p, struct proc *c, pid_t tid);
/* Thread TID is ending: its timers are kept, its area freed. */
void timers_thread_exit(struct proc *p, pid_t tid);
/* Thread TID was stopped TICKS for reticle's own work: its open frames
 * do not count them. */
void timers_pause(struct proc *p, pid_t tid, uint64_t ticks);
/* Every thread's: the process image ends. */
void timers_harvest_all(struct proc *p);
/* A relocated copy with a timer: numbers it and writes the counter DESC. */
/* FS's copy has a timer whose number the counter DESC holds: the next
 * free one (those up to RTL_MAX_TIMER_ID are the plans' numbered ones). */
void timers_record(struct proc *p, struct func_state *fs, uint64_t desc);
/* The image's numbered timers (struct rtl_snippet's ids) that counted
 * calls, per thread, by id then thread (malloc'd; NULL without memory). */
struct rtl_timer_view *timers_numbered(struct proc *p, size_t *n);
/* The per-thread views of FS's timer (malloc'd, *N of them), or NULL. */
struct rtl_timer_view *timers_view(struct proc *p, const struct func_state *fs, size_t *n);
/* The contexts of every thread's tree that ran or holds one that did. */
int timers_contexts(struct proc *p, struct contexts *c);
/* FS's contexts among C, in *N: how many. */
const struct context_rec *timers_contexts_of(const struct contexts *c, const struct func_state *fs, size_t *n);
/* TSC ticks per second, measured over the session so far. */
double timers_tsc_hz(struct rtl_session *s);
/* Maps LEN bytes of reticle's memfd FD at offset 0 into P's thread TID:
 * at ADDR exactly (FIXED), or where the kernel likes (*AT: where). */
int proc_map_memfd(struct proc *p, pid_t tid, int fd, uint64_t addr, size_t len, bool fixed, uint64_t *at);

/* session.c */
const struct probe_set *session_probes(const struct rtl_session *s);
/* Cover alone: probes removed once fired (sweep.c). */
bool session_sweeps(const struct rtl_session *s);
rtl_binary *session_binary(struct rtl_session *s, const char *path);
void session_count_instrumented(struct rtl_session *s, bool ok);
void session_count_seconds(struct rtl_session *s, double seconds);
void session_count_trap(struct rtl_session *s);
void session_count_warm(struct rtl_session *s, size_t n);
void session_count_restored(struct rtl_session *s, bool same);
/* Directory of the warm-start cache, NULL when warm start is off. */
const char *session_warm_dir(const struct rtl_session *s);
/* The debugger (debug.c), NULL when none. */
struct debugger *session_debugger(struct rtl_session *s);
void session_set_debugger(struct rtl_session *s, struct debugger *d);
/* The process with thread (or pid) TID; the session's processes. */
struct proc *session_proc(struct rtl_session *s, pid_t tid);
size_t session_proc_count(const struct rtl_session *s);
struct proc *session_proc_at(struct rtl_session *s, size_t i);
/* Whether an image ending now ages the warm-start list LIST (a path): the
 * first of the run to save it does; the others of the same run (rustc's
 * processes that each load libLLVM) do not, else a function only one of
 * them runs would age out of the list every second run. */
bool session_warm_age_once(struct rtl_session *s, const char *list);
/* Bytes the warm-start cache may hold. */
uint64_t session_warm_max(const struct rtl_session *s);
struct os_stop;
/* A stop of another thread met while one thread runs an inferior call: the
 * event loop handles it next. */
void session_defer_stop(struct rtl_session *s, const struct os_stop *st);
/* Whether thread TID is stopped with its stop deferred (not resumed yet). */
bool session_stop_deferred(const struct rtl_session *s, pid_t tid);

/* proc.c */
struct proc *proc_new(struct rtl_session *s, pid_t pid);
void proc_free(struct proc *p);
struct proc *proc_fork(struct proc *parent, pid_t child);
struct thread *proc_thread(struct proc *p, pid_t tid);
int proc_add_thread(struct proc *p, pid_t tid);
void proc_remove_thread(struct proc *p, pid_t tid);
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
/* Adds the module at PATH mapped with BIAS, sets up its window, arms it. */
int proc_add_module(struct proc *p, pid_t tid, const char *path, uint64_t bias, bool is_main);
/* The executable of P (/proc/PID/exe, its path in EXE) from the session's
 * cache of binaries. */
int proc_exe(struct proc *p, char exe[PATH_MAX], rtl_binary **bin);
/* Adds the executable EXE (BIN) and, if it has one, the dynamic loader,
 * from P's auxiliary vector, and finds the loader's _r_debug. */
int proc_add_main_modules(struct proc *p, pid_t tid, const char *exe, rtl_binary *bin);
/* Sets up a fresh image stopped at its first instruction (launch, exec). */
int proc_setup_image(struct proc *p, pid_t tid);
/* The process gets a second thread: every counter increment becomes atomic. */
void proc_go_multithreaded(struct proc *p);
void proc_describe_pc(struct proc *p, uint64_t pc, char *buf, size_t len);
/* The value of the counter at run-time ADDR in one of P's windows (0 if none). */
uint64_t proc_read_counter(struct proc *p, uint64_t addr);
/* The window holding the LEN bytes at run-time ADDR (code or counters), or NULL. */
struct window *proc_window_at(struct proc *p, uint64_t addr, size_t len);
/* The relocated copy holding run-time PC: its function state (and *MP its
 * module), or NULL. */
struct func_state *proc_copy_at(struct proc *p, uint64_t pc, struct module **mp);
/* The point records of function FN of module MOD in copies made before its
 * current one: calls FN(rec, ctx) for each (engine/proc.c). */
void proc_each_retired_point(struct proc *p, size_t mod, size_t fn, void (*each)(const struct point_rec *pr, void *ctx),
			     void *ctx);
/* Writes LEN bytes at run-time ADDR of P's text or data (a patch of
 * reticle's), logging what they replace when P is attached. */
int proc_patch_write(struct proc *p, uint64_t addr, const void *buf, size_t len);
/* Writes BYTE at AT of P's code: through reticle's own mapping when AT is
 * in a window (the process maps windows read-only), else into its text;
 * LASTING as proc_patch_write (logged when attached), else a byte put
 * back for one single step, not logged. */
int proc_code_write(struct proc *p, uint64_t at, uint8_t byte, bool lasting);
/* One single step of stopped thread TID; a signal it met (in *SIG, 0 when
 * none) is kept for the thread's resumption, but for SIGTRAP (an int3 it
 * ran). */
int proc_singlestep(struct proc *p, pid_t tid, int *sig);
/* The same over the int3 at AT: ORIG, the byte under it, back for the
 * step, the int3 again after. */
int proc_step_over(struct proc *p, pid_t tid, uint64_t at, uint8_t orig, int *sig);
/* Runs a system call in thread TID (see os_inferior_syscall). */
int proc_syscall(struct proc *p, pid_t tid, long nr, uint64_t a0, uint64_t a1, uint64_t a2,
		 uint64_t a3, uint64_t a4, uint64_t a5, long *ret);

/* patch/lazy.c: arming entries and instrumenting on first call */
int lazy_arm_module(struct proc *p, struct module *m);
/* Only the functions whose calls reticle must see (libc's ptrace), for a
 * session that does not instrument (sampling alone). */
void lazy_arm_hooks(struct proc *p, struct module *m);
/* r_brk (_dl_debug_state) gets its int3 once the loader has published it. */
void lazy_arm_r_brk(struct proc *p);
/* A thread TID stopped at an int3 just before PC. Returns 1 if reticle
 * handled it (the thread may resume), 0 if the trap is the program's own. */
int lazy_breakpoint(struct proc *p, pid_t tid, uint64_t pc);
void func_state_release(struct func_state *f);
/* Whether ADDR is a function entry where reticle put an int3. */
bool lazy_is_entry_trap(struct proc *p, uint64_t addr);
/* Function K of M read, decoded and analysed (relocate.h's x86_analyze):
 * reads only the binaries and P's module list, so a helper thread may do
 * it ahead while relocation goes on (nothing adds modules meanwhile). */
struct x86_insn;
struct x86_analysis;
struct lazy_decoded {
	uint8_t *code;
	struct x86_insn *insns;
	size_t ninsns;
	uint64_t *interior;       /* run-time code pointers into it */
	size_t ninterior;
	struct x86_analysis *an;
	bool cached;              /* INSNS came from the decode cache */
	/* a copy saved by an earlier run (patch/copy_cache.c) or made ahead
	 * (MADE, malloc'd: patch/ahead.c): then nothing was decoded */
	const void *copy;
	size_t copy_len;
	void *made;
	int err;                  /* its bytes unreadable, or the analysis refused it */
	const char *reason;       /* why, then */
};
void lazy_decode(struct proc *p, struct module *m, size_t k, struct lazy_decoded *d);
void lazy_decoded_free(struct lazy_decoded *d);
/* Relocates armed function K of M before its first call (its callees keep
 * their traps), from PRE when decoded already (NULL: decodes it); on
 * failure restores its entry and marks it skipped. */
int lazy_instrument_now(struct proc *p, struct module *m, size_t k, struct lazy_decoded *pre);
/* Function K of M, relocated already, gets a copy made again as the plan
 * stands now: its entry and its old copy's first instruction lead there
 * (written as with threads running), calls in the old copy finish there,
 * and the old copy's point records stay (proc_each_retired_point). */
int lazy_reinstrument(struct proc *p, struct module *m, size_t k);
/* Whether P's program needs original return addresses (decided once its
 * executable is known: Go, V8, backtrace(); RETICLE_ORIGINAL_RETURNS=0|1
 * forces it). */
bool lazy_wants_original_returns(const rtl_binary *exe);
/* Writes the entry jumps deferred while P->defer_entries was set. */
void lazy_flush_entries(struct proc *p);
/* Reads the slots of the PLT stubs in P's plt_watch (a thread is exiting:
 * the process's memory is still there). */
void lazy_bind_plt(struct proc *p);

/* patch/warm.c: relocating what ran in earlier runs ahead of its first call */
void warm_load(struct proc *p, struct module *m);
/* An armed entry at run-time ADDR of M trapped: runs the batches due. */
void warm_trap(struct proc *p, struct module *m, uint64_t addr);
/* An attached process, every thread stopped: every module's batch now. */
void warm_attach(struct proc *p);
/* Records in the cache what ran in P (at its end). */
void warm_save(struct proc *p);
/* PATH of M's file with SUFFIX in the warm-start cache (malloc'd), or NULL. */
char *warm_cache_path(const struct proc *p, const struct module *m, const char *suffix);
/* Writes the N PARTS to PATH through a temporary file renamed over it. */
void warm_write_file(const char *path, const void *const *parts, const size_t *lens, int n);

/* patch/cache_prune.c: the warm-start cache within its size */
/* PATH (or open FD) served this run: its time says so (once a day). */
void warm_touch(const char *path, int fd);
/* Removes the least recently used files of DIR while it holds more than MAX. */
void warm_prune(const char *dir, uint64_t max_bytes);

/* patch/prepare.c: what relocating needs of a binary alone, and copies
 * made for no process */
bool fn_in_exec_segment(const rtl_binary *bin, uint64_t addr, uint64_t len);
/* Code a jump-table entry may lead to: inside a known function. */
bool fn_is_function_code(const rtl_binary *bin, uint64_t addr);
/* The link-time extent of BIN's loadable segments, [*LO, *HI), *LO down to
 * its page. */
void fn_link_extent(const rtl_binary *bin, uint64_t *lo, uint64_t *hi);
/* Whether data words point inside F (rewritten when it is relocated: they
 * must hold their run-time values by then). */
bool fn_has_code_pointers(const rtl_binary *bin, const rtl_function *f);
/* Those words: the slice [*LO, *HI) of the binary's code pointers. */
void fn_code_pointer_slice(const rtl_binary *bin, const rtl_function *f, size_t *lo, size_t *hi);
/* Their targets, at run time for BIAS (malloc'd, *N of them), or NULL. */
uint64_t *fn_interior_pointers(const rtl_binary *bin, const rtl_function *f, uint64_t bias, size_t *n);
/* Whether F identifies its caller by the return address (dlopen, dlsym):
 * copies call it with the original return address. */
bool fn_keeps_caller(const rtl_function *f);
/* A position-free copy (isa/x86_64/persist.h) of function K of BIN with
 * the plans of PROBES, made from the binary alone: *BLOB malloc'd. */
int prepare_copy(const rtl_binary *bin, size_t k, const struct probe_set *probes, void **blob,
		 size_t *len);

/* patch/ahead.c: copies made ahead of first calls on a helper thread */
struct ahead;
struct os_cpus;
/* NULL when it cannot start; CPUS: where the helper may run (NULL: any);
 * PROBES: the session's. */
struct ahead *ahead_new(const struct os_cpus *cpus, const struct probe_set *probes);
/* Stops the helper; false when it could not be waited for: then it still
 * reads the binaries it was given, which must not be closed. */
bool ahead_free(struct ahead *pd);
/* Function K of BIN is likely to be called soon (a copy calls it). */
void ahead_want(struct ahead *pd, const rtl_binary *bin, size_t k);
/* All of BIN's functions, in address order, when there is nothing else to do. */
void ahead_sweep(struct ahead *pd, const rtl_binary *bin);
/* Function K of BIN's copy made ahead (prepare_copy's blob, *BLOB malloc'd). */
bool ahead_take(struct ahead *pd, const rtl_binary *bin, size_t k, void **blob, size_t *len);
/* session.c: the session's, started at launch; NULL with one CPU. Set
 * before any helper thread runs: read from any thread. */
struct ahead *session_ahead(const struct rtl_session *s);

/* patch/decode_cache.c: the warm-start list's functions, decoded */
void dcache_open(struct proc *p, struct module *m);
/* The instructions of F (of M, whose bytes are CODE), when the cache has
 * them (*OUT malloc'd, run-time addresses). Safe beside other threads. */
bool dcache_get(const struct module *m, const rtl_function *f, const uint8_t *code,
		struct x86_insn **out, size_t *n);
/* Keeps the N instructions of function K of M (its bytes CODE) for the next run. */
void dcache_keep(struct module *m, size_t k, const uint8_t *code, const struct x86_insn *insns,
		 size_t n);
/* Writes M's cache for the functions of LIST (link-time entries & MASK). */
void dcache_save(struct proc *p, struct module *m, const uint64_t *list, size_t nlist, uint64_t mask);
void dcache_free(struct module *m);

/* patch/copy_cache.c: the warm-start list's functions, relocated */
void ccache_open(struct proc *p, struct module *m);
/* F's saved copy (a blob for isa/x86_64/persist.h) when its bytes are
 * CODE, else NULL. Safe beside other threads. */
const void *ccache_find(const struct module *m, const rtl_function *f, const uint8_t *code, size_t *len);
/* Saves R, the copy of function K of M (its bytes CODE) just emitted with
 * single-thread counters [CTR_LO, CTR_HI), which branches to TARGETS
 * outside it, for the next run; false when it cannot. */
struct x86_reloc;
bool ccache_keep(struct module *m, size_t k, const uint8_t *code, const struct x86_reloc *r,
		 uint64_t ctr_lo, uint64_t ctr_hi, const uint64_t *targets, size_t ntargets);
/* Saves BLOB (malloc'd, taken over), a copy of function K of M made from
 * its bytes CODE (prepare_copy), for the next run. */
void ccache_keep_blob(struct module *m, size_t k, const uint8_t *code, void *blob, size_t len);
/* Writes M's file for the functions of LIST (link-time entries & MASK). */
void ccache_save(struct module *m, const uint64_t *list, size_t nlist, uint64_t mask);
void ccache_free(struct module *m);

/* engine/sigpc.c: a signal about to be delivered in a thread inside a copy
 * of a process with original return addresses: the handler sees the
 * original PC */
void sigpc_to_original(struct proc *p, const struct os_stop *stop);
/* patch/lazy.c: an int3 at original address AT that sends a thread coming
 * there to TO in a copy (kept for the process's life) */
int lazy_return_trap(struct proc *p, uint64_t at, uint64_t to);
bool lazy_has_return_trap(const struct proc *p, uint64_t at);
/* engine/sigtrap.c: keeping the program's own SIGTRAP handler */
void sigtrap_remember(struct proc *p, pid_t tid);
void sigtrap_repair(struct proc *p, pid_t tid);

/* engine/unwind.c: registering unwind information for relocated code */
void unwind_module_added(struct proc *p, struct module *m);
void unwind_function_relocated(struct proc *p, struct module *m, size_t fn);
void unwind_flush(struct proc *p, pid_t tid);
size_t unwind_landing_pads(struct proc *p, struct module *m, const rtl_function *f, uint64_t **pads);
/* Takes back every registration made in attached process P (thread TID
 * stopped), before its windows are unmapped: 0, or an error when one
 * stays (the windows must stay too). */
int unwind_detach(struct proc *p, pid_t tid);
void unwind_module_free(struct module *m);

/* engine/sweep.c: probes removed once they have fired (cover alone) */
/* Removes the increments of P whose counters have left 0. */
void sweep_proc(struct proc *p);
/* A fork CHILD of PARENT gets the increments removed in its windows back. */
void sweep_fork(struct proc *parent, struct proc *child);
/* Whether a sweep is due at NOW (ns; *LAST: the previous one's time). */
bool sweep_due(uint64_t *last, uint64_t now);

/* engine/attach.c: a process that was running before reticle came */
/* Sets up P, every thread of it stopped (TID one of them): its modules
 * armed, original return addresses, each thread moved into a copy of the
 * function it is in. */
int attach_setup_image(struct proc *p, pid_t tid);
/* Moves every thread of P (held stopped) out of the copies, to the same
 * original instruction: before its profile is written, so that a thread
 * in the middle of a timer snippet finishes it first. */
void attach_leave(struct proc *p);
/* Puts P back as it was, every thread held stopped, and detaches them:
 * copies left, patches undone, windows unmapped (unless *KEPT threads or
 * stack words still need them). */
int attach_detach(struct proc *p, size_t *kept);

/* engine/dl.c: modules loaded by the dynamic loader */
int dl_notify(struct proc *p, pid_t tid);
/* Adds the objects on the loader's list now, if it is consistent. */
void dl_scan(struct proc *p, pid_t tid);
void dl_find_r_debug(struct proc *p, struct module *ldso);

/* engine/placement.c: reticle and a starting program on one CPU */
struct placement;
struct os_cpus;
struct placement *placement_new(pid_t task);
/* A breakpoint of TID is being served (THREADED: its process has others). */
void placement_trap(struct placement *pl, pid_t tid, bool threaded);
/* CHILD was created (THREAD: in its parent's process). */
void placement_new_task(struct placement *pl, pid_t child, bool thread);
void placement_task_exit(struct placement *pl, pid_t tid);
/* The CPUs reticle may use (for helper threads), NULL when one. */
const struct os_cpus *placement_all_cpus(const struct placement *pl);
void placement_free(struct placement *pl);
struct placement *session_placement(const struct rtl_session *s);
/* The sampler (the sample collector), or NULL. */
struct sampler *session_sampler(const struct rtl_session *s);
/* SHIM's observer (the shim collector), or NULL. */
struct shim *session_shim(const struct rtl_session *s);
/* Copies may be made again while the program runs (rtl_session_opts'
 * dynamic_probes). */
bool session_dynamic(const struct rtl_session *s);
/* The TSC when the session started (its times count from then). */
uint64_t session_tsc0(const struct rtl_session *s);
/* Whether any collector instruments functions (sample alone does not). */
bool session_instruments(const struct rtl_session *s);

/* The profile row of function FS (of M, F), added with its state
 * (finish.c); WHY_NOT says why it was not relocated. */
int finish_function_row(struct proc *p, struct module *m, const rtl_function *f, struct func_state *fs,
			rtl_profile *prof, const char *why_not);
/* The image's sampled stacks into PROF (samples.c); the observer's
 * samples of its threads' signals (shim), or with PROF NULL, forgotten. */
int samples_write(struct proc *p, rtl_profile *prof);
/* TREE (an image the engine did not follow: an attached process's
 * child) into PROF as P's; TREE is freed. */
struct sample_tree;
int samples_write_tree(struct proc *p, rtl_profile *prof, struct sample_tree *tree);
int shim_write(struct proc *p, rtl_profile *prof);

/* engine/bbv.c: basic-block vectors. A thread's countdown starts (area
 * AREA); a countdown's int3 at PC ends an interval (false: not one);
 * the image's meta into PROF. */
void bbv_thread_start(struct proc *p, unsigned area);
bool bbv_trap(struct proc *p, pid_t tid, uint64_t pc);
/* Around reticle's own call in the target: its instructions left out;
 * and whether a trap during it was the null area's countdown. */
uint64_t *bbv_call_begin(struct proc *p);
void bbv_call_end(struct proc *p, uint64_t *before);
bool bbv_call_trap(struct proc *p);
int bbv_write(struct proc *p, rtl_profile *prof);
void bbv_free(struct proc *p);
/* The bbv collector's interval (0: none) and the file of image PID's
 * vectors (malloc'd; NULL: none). */
uint64_t session_bbv_interval(const struct rtl_session *s);
/* memtrace --trace: the file of image PID's stream (malloc'd; NULL: none). */
char *session_memtrace_path(const struct rtl_session *s, pid_t pid);
char *session_bbv_path(const struct rtl_session *s, pid_t pid);

/* engine/memtrace.c: memory tracing's consumer. The number of data access
 * A of the instruction at run-time INSN, for its records (0: none); an
 * instruction whose accesses cannot be traced. */
struct x86_access;
uint32_t memtrace_point(struct proc *p, uint64_t insn, const struct x86_access *a);
void memtrace_untraced(struct proc *p, uint64_t insn);
/* Thread TID stopped at an int3: whether it is a trace snippet's, its
 * buffer full (then drained). */
bool memtrace_trap(struct proc *p, pid_t tid);
/* The same during reticle's own call in the target (the null area's). */
bool memtrace_call_trap(struct proc *p);
/* --sample periodic:ON:OFF: thread area AREA starts a traced window; the
 * countdown's int3 in thread TID ends a window (false: not one). */
void memtrace_thread_start(struct proc *p, unsigned area);
bool memtrace_window_trap(struct proc *p, pid_t tid);
/* The session's periodic sampling (ON 0: none). */
void session_memtrace_sample(const struct rtl_session *s, uint64_t *on, uint64_t *off);
bool session_memtrace_sampled(const struct rtl_session *s);
/* SimPoint-guided sampling: the traced intervals (sorted) and their
 * weights, N of them, of INTERVAL instructions (N 0: none). */
void session_memtrace_points(const struct rtl_session *s, const uint64_t **point, const double **weight,
			     size_t *n, uint64_t *interval);
/* A signal is about to be delivered to thread TID: if it stopped inside
 * a trace snippet, it leaves it first (x86_memtrace_locate), since the
 * handler's snippets reuse the words it saved rax and rcx in. */
void memtrace_signal(struct proc *p, pid_t tid);
/* The records in thread area AREA into the bank and the counts. */
void memtrace_drain(struct proc *p, unsigned area);
/* The image's results into PROF (metrics per instruction, meta). */
int memtrace_write(struct proc *p, rtl_profile *prof);
void memtrace_free(struct proc *p);
/* Child C of P runs P's copies: their records' numbers are P's. */
int memtrace_fork(struct proc *p, struct proc *c);
/* The session's cache configurations (memtrace), N of them. */
struct rtl_cache_config;
const struct rtl_cache_config *session_caches(const struct rtl_session *s, size_t *n);

/* engine/finish.c: writes a process image into the session's profile, and
 * the session's own facts (meta) once at its end */
int proc_write_profile(struct proc *p, rtl_profile *prof, uint64_t end_ns);
int session_write_meta(const struct rtl_session *s, rtl_profile *prof, pid_t pid,
		       const char *command, int status);

#endif
