/* The engine: a session's processes followed through their events (fork,
 * exec, threads, signals, the loader's notifications), the patcher driven
 * (patch/patch.h), timers, memory tracing and basic-block vectors served,
 * profiles written. The model it works on is space/space.h. */
#ifndef RETICLE_ENGINE_H
#define RETICLE_ENGINE_H

#include "patch/patch.h"
#include "probe/plan.h"
#include "space/space.h"
#include "warm/warm.h"

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
/* Thread TID, at its exit event (its registers still its own), warned
 * of when it set its own %gs base (not at an exec: that resets it). */
void timers_check_gs(struct proc *p, pid_t tid);
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
/* P's timers now, summed over its threads (ended and running), the open
 * frames counted up to now: seconds of exclusive and inclusive time by
 * timer number in *EXCL and *INCL (*N of them; malloc'd, the caller frees
 * both). 0, or -ENOMEM. */
int timers_live(struct proc *p, double **excl, double **incl, size_t *n);
/* Maps LEN bytes of reticle's memfd FD at offset 0 into P's thread TID:
 * at ADDR exactly (FIXED), or where the kernel likes (*AT: where). */
int proc_map_memfd(struct proc *p, pid_t tid, int fd, uint64_t addr, size_t len, bool fixed, uint64_t *at);

/* session.c */
const struct probe_set *session_probes(const struct rtl_session *s);
/* Cover alone: probes removed once fired (sweep.c). */
bool session_sweeps(const struct rtl_session *s);
/* The binary of the file at PATH now (a file replaced under its path is
 * another binary), opened once per file. _seen: the one last opened from
 * PATH, without looking at the file (what a sample's map named, asked
 * once per stack frame when a profile is written). */
rtl_binary *session_binary(struct rtl_session *s, const char *path);
rtl_binary *session_binary_seen(struct rtl_session *s, const char *path);
void session_count_warm(struct rtl_session *s, size_t n);
/* Directory of the warm-start cache, NULL when warm start is off. */
const char *session_warm_dir(const struct rtl_session *s);
/* FN(ARG) on the session's disposer thread, in order, at the latest when
 * the session is destroyed (before its binaries are closed): the giving
 * back of what an ended process owned alone (proc_free) and the writing of
 * its modules' saved copies (warm_save), which its parent would otherwise
 * wait for. FN may read the session's binaries, nothing else of it. */
void session_dispose(struct rtl_session *s, void (*fn)(void *arg), void *arg);
/* Whether the session samples (perf_event): the sampler reads the
 * modules' paths from /proc/PID/maps. */
bool session_samples(const struct rtl_session *s);
/* The helper that writes armed text for the next run (warm/armed_text.c). */
struct armed_saver *session_armed_saver(struct rtl_session *s);
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
/* Whether TID's deferred stop is a ptrace event's (a clone, fork, exec,
 * exit or seccomp stop): inside a system call, where an inferior call
 * would read the call's own end as its result. */
bool session_in_event(const struct rtl_session *s, pid_t tid);

/* proc.c */
struct proc *proc_new(struct rtl_session *s, pid_t pid);
void proc_free(struct proc *p);
struct proc *proc_fork(struct proc *parent, pid_t child);
int proc_add_thread(struct proc *p, pid_t tid);
void proc_remove_thread(struct proc *p, pid_t tid);
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

/* warm.c: relocating what ran in earlier runs ahead of its first call */
void warm_load(struct proc *p, struct module *m);
/* An armed entry at run-time ADDR of M trapped: runs the batches due. */
void warm_trap(struct proc *p, struct module *m, uint64_t addr);
/* An attached process, every thread stopped: every module's batch now. */
void warm_attach(struct proc *p);
/* Records in the cache what ran in P (at its end). */
void warm_save(struct proc *p);

/* sigpc.c: a signal about to be delivered in a thread inside a copy
 * of a process with original return addresses: the handler sees the
 * original PC */
void sigpc_to_original(struct proc *p, const struct os_stop *stop);
/* engine/sigtrap.c: keeping the program's own SIGTRAP handler */
void sigtrap_remember(struct proc *p, pid_t tid);
/* The same, before any signal is delivered, while none is remembered and
 * the process has a SIGTRAP handler. */
void sigtrap_remember_once(struct proc *p, pid_t tid);
void sigtrap_repair(struct proc *p, pid_t tid);

/* unwind_register.c: registering unwind information for relocated code */
void unwind_module_added(struct proc *p, struct module *m);
void unwind_function_relocated(struct proc *p, struct module *m, size_t fn);
void unwind_flush(struct proc *p, pid_t tid);
/* Takes back every registration made in attached process P (thread TID
 * stopped), before its windows are unmapped: 0, or an error when one
 * stays (the windows must stay too). */
int unwind_detach(struct proc *p, pid_t tid);

/* patcher.c: the engine's side of the patcher */
extern const struct patch_events engine_patch_events;
/* The session's environment for the patcher (patch/patch.h), filled when
 * first asked: before the first process, after the session's options. */
const struct patch_env *session_patch_env(struct rtl_session *s);
/* A thread TID stopped at an int3 just before PC: an entry's, a return
 * trap's, the loader's r_brk (a module came or went). 1 when reticle
 * handled it (the thread may resume), 0 when the trap is the program's own. */
int engine_breakpoint(struct proc *p, pid_t tid, uint64_t pc);
/* The loader's r_brk read from its _r_debug and armed, once published. */
void dl_arm_r_brk(struct proc *p);

/* engine/sweep.c: probes removed once they have fired (cover alone) */
/* Removes the increments of P whose counters have left 0, and gives up
 * hot copies; whether it stopped short (to go on at the next call). */
bool sweep_proc(struct proc *p);
/* Function K of M has a copy (made again, too): the sweeps look at it. */
void sweep_relocated(struct proc *p, struct module *m, size_t k);
/* A fork CHILD of PARENT gets the increments removed in its windows back. */
void sweep_fork(struct proc *parent, struct proc *child);
/* Fork child C's frames in the original code of functions its parent gave
 * up go back to their copies (before patch_fork_unrevert). */
void sweep_fork_frames(struct proc *c);
/* Whether a sweep is due at NOW (ns; *LAST: the previous one's time). */
bool sweep_due(uint64_t *last, uint64_t now);

/* Every thread of P stopped for a look at its stack and registers
 * (Paradyn's stop at insertion), with how it is held; a thread that met
 * an event on the way keeps it for the loop. The caller frees *OUT
 * through session_unhold, which lets them run on, their open frames
 * starting TICKS later (the time reticle held them). */
enum hold_how { HOLD_STOPPED, HOLD_GROUP_STOP, HOLD_IN_EVENT, HOLD_GONE };
struct hold {
	pid_t tid;
	uint8_t how;              /* enum hold_how */
};
/* Stops every thread of P (*OUT: how each is held; their number is
 * returned). An interrupt cuts a blocking write short (it returns what it
 * wrote so far): holds are for changes that cannot wait for the threads
 * to move by themselves. */
size_t session_hold(struct rtl_session *s, struct proc *p, struct hold **out);
/* Whether P's threads can be held now: not while a vfork child runs in
 * its memory (the parent waits in the kernel, where no interrupt stops
 * it: a hold would wait for it for ever). */
bool session_can_hold(const struct proc *p);
void session_unhold(struct rtl_session *s, struct proc *p, struct hold *h, size_t n, uint64_t ticks);

/* Calls EACH(P, M, K, CTX) for every relocated function K of every loaded
 * module M of P, while it returns true; whether all did (session.c). */
bool each_relocated(struct proc *p, bool (*each)(struct proc *p, struct module *m, size_t k, void *ctx),
		    void *ctx);

/* engine/open_frames.c: rtl_session_reinstrument in process P (its
 * threads held while timers start on frames already open): how many
 * copies were made again, or -err. */
long reinstrument_running(struct proc *p, bool (*want)(const char *module, const char *name, uint64_t addr, void *ctx),
			  void *ctx);

/* Attaching (every thread of P stopped, moved into copies): the functions
 * on each thread's stack that have a timer of their own (calltime) get a
 * frame opened now, as if entered at the attach. */
void open_frames_attached(struct proc *p);

/* engine/calls.c: whether the int3 before PC is an RTL_PRIM_CALL snippet's
 * of P: then every collector's on_call has seen it (TID goes on at PC). */
bool call_trap(struct proc *p, pid_t tid, uint64_t pc);

/* engine/stackwalk.c: copies and stacks in the program's own addresses */
/* The map of a copy: original instruction FROM[i] starts at TO[i] (both
 * sorted), the copy's code [ENTRY, ENTRY + LEN) of function K of M. */
struct copy_map {
	const uint64_t *from, *to;
	size_t n;
	uint64_t entry;
	uint32_t len;
	struct module *m;
	size_t k;
};
/* The copy that holds PC: the function's current one, or one made before
 * it (lazy_reinstrument) that frames may still run in. */
bool copy_map_at(struct proc *p, uint64_t pc, struct copy_map *out);
/* The last label of C at or before PC (0 before the first). */
size_t copy_map_index(const struct copy_map *c, uint64_t pc);
/* The original instruction of the code at AT in a copy: where its code
 * starts (its snippets first), or, with *OWN_BYTES, its own bytes at the
 * end of that code (copied as they are). False inside snippet code. */
bool copy_original(struct proc *p, uint64_t at, uint64_t *orig, bool *own_bytes);
/* Stopped thread TID's call stack (unw_stack's FRAMES and CFAS, original
 * addresses), unwound with UNW's files: how many frames. */
struct unw_mods;
size_t stack_walk(struct proc *p, pid_t tid, struct unw_mods *unw, uint64_t *frames, uint64_t *cfas, size_t max);

/* engine/attach.c: a process that was running before reticle came */
/* Sets up P, every thread of it stopped (TID one of them): its modules
 * armed, original return addresses, each thread moved into a copy of the
 * function it is in. */
int attach_setup_image(struct proc *p, pid_t tid);
/* Steps stopped thread T through snippet code (never over a system call,
 * which may block) until it is where copy_original names an instruction
 * (*ORIG, *OWN), or out of the code cache (*ORIG 0). *RESTART: in a system
 * call the kernel restarts (the pc is 2 past the instruction). Whether it
 * got there. */
bool copy_settle(struct proc *p, struct thread *t, uint64_t *orig, bool *own, bool *restart);
/* Moves every thread of P (held stopped) out of the copies, to the same
 * original instruction: before its profile is written, so that a thread
 * in the middle of a timer snippet finishes it first. */
void attach_leave(struct proc *p);
/* Puts P back as it was, every thread held stopped, and detaches them:
 * copies left, patches undone, windows unmapped (unless *KEPT threads or
 * stack words still need them). */
int attach_detach(struct proc *p, size_t *kept);
/* A launched process still running when the program ended (a daemon it
 * started, a background job) let go: every int3 reticle put in its code
 * gets its byte back, the copies stay mapped (entries, return points and
 * code pointers lead into them), its threads (held) are detached. Whether
 * that is possible (*WHY: why not). */
bool release_possible(const struct proc *p, const char **why);
int release_launched(struct proc *p);

/* engine/dl.c: modules loaded by the dynamic loader */
int dl_notify(struct proc *p, pid_t tid);
/* Adds the objects on the loader's list now, if it is consistent. */
void dl_scan(struct proc *p, pid_t tid);
void dl_find_r_debug(struct proc *p, struct module *ldso);

/* engine/placement.c: reticle and a starting program on one CPU */
struct placement;
struct os_cpus;
/* Whether a launch may pin (then its program's sched_getaffinity calls
 * are to be watched: os_launch). */
bool placement_possible(void);
struct placement *placement_new(pid_t task);
/* A thread of the program is about to read an affinity: the pin goes. */
void placement_affinity_read(struct placement *pl);
/* A breakpoint of TID is being served (THREADED: its process has others). */
void placement_trap(struct placement *pl, pid_t tid, bool threaded);
/* CHILD was created (THREAD: in its parent's process). */
void placement_new_task(struct placement *pl, pid_t child, bool thread);
void placement_task_exit(struct placement *pl, pid_t tid);
/* The CPUs reticle may use (for helper threads), NULL when one. */
const struct os_cpus *placement_all_cpus(const struct placement *pl);
void placement_free(struct placement *pl);
struct placement *session_placement(const struct rtl_session *s);
/* "on" or "off": the launched program's address randomization (NULL:
 * attached). */
const char *session_aslr(const struct rtl_session *s);
/* The sampler (the sample collector), or NULL. */
struct sampler *session_sampler(const struct rtl_session *s);
/* SHIM's observer (the shim collector), or NULL. */
struct shim *session_shim(const struct rtl_session *s);
/* Copies may be made again while the program runs (rtl_session_opts'
 * dynamic_probes). */
bool session_dynamic(const struct rtl_session *s);
/* The TSC when the session started (its times count from then). */
uint64_t session_tsc0(const struct rtl_session *s);
/* The run's context (span.h), and the session's clock: ns since it began. */
struct span_def;
const struct span_def *session_span(const struct rtl_session *s);
uint64_t session_clock(const struct rtl_session *s);
/* A process image reached the span's start (or began inside it). */
void session_span_started(struct rtl_session *s);
/* N more functions of a loaded module are in the run's scope (span.c). */
void session_scope_matched(struct rtl_session *s, size_t n);
/* An armed entry trapped (patch_events' first_call): span edges, warm start. */
void engine_first_call(struct proc *p, struct module *m, uint64_t addr);
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
uint32_t memtrace_point(struct proc *p, uint64_t insn, const struct x86_access *a, uint32_t after, int64_t delta);
/* A copy's jump table at COPY, BYTES long, of the program's at ORIG: its
 * loads are recorded at the program's table (the same lines as natively). */
void memtrace_table(struct proc *p, uint64_t copy, uint64_t orig, uint64_t bytes);
void memtrace_untraced(struct proc *p, uint64_t insn);
/* Thread TID stopped at an int3: whether it is a trace snippet's, its
 * buffer full (then drained). */
bool memtrace_trap(struct proc *p, pid_t tid);
/* The same during reticle's own call in the target (the null area's). */
bool memtrace_call_trap(struct proc *p, uint64_t pc);
/* --sample periodic:ON:OFF: thread area AREA starts a traced window; the
 * countdown's int3 in thread TID ends a window (false: not one). */
void memtrace_thread_start(struct proc *p, unsigned area);
bool memtrace_window_trap(struct proc *p, pid_t tid);
/* The session's periodic sampling (ON 0: none). */
void session_memtrace_sample(const struct rtl_session *s, uint64_t *on, uint64_t *off, uint64_t *warm,
			     uint64_t *warm_lower);
bool session_memtrace_sampled(const struct rtl_session *s);
/* SimPoint-guided sampling: the traced intervals (sorted) and their
 * weights, N of them, of INTERVAL instructions (N 0: none). */
/* An image of the run began the traced windows of REACHED of the points
 * (memtrace --sample simpoint): the session keeps the most. */
void session_memtrace_reached(struct rtl_session *s, size_t reached);
void session_memtrace_points(const struct rtl_session *s, const uint64_t **point, const double **weight,
			     const uint32_t **cluster, size_t *n, uint64_t *interval);
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
