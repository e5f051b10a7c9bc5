/* Unwind information for the copies: a C++ exception, backtrace() or
 * pthread_cancel walking through a relocated frame needs an FDE for it.
 * After each relocation the engine builds one (src/unwind/build.c) in the
 * module's window and registers it with the target's own unwinder by an
 * inferior call of __register_frame_info(begin, object), the object living
 * in the window's writable area so that nothing is allocated in the target.
 * Processes without libgcc's unwinder (most C programs) keep a list of
 * pending functions, registered if it is loaded later (dlopen). */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include "elf/code_facts.h"
#include "engine/engine.h"
#include "isa/x86_64/writer.h"
#include "engine/symbol.h"
#include "os/linux/os.h"
#include "sample/sample.h"
#include "unwind/unwind.h"
#include "util/array.h"
#include "util/log.h"

enum { OBJECT_SIZE = 64 };   /* libgcc's struct object is 6 or 7 words */

void unwind_module_added(struct proc *p, struct module *m)
{
	uint64_t a;
	/* looked up in the file (all of its symbols) only where it may be: a
	 * library whose .dynsym has it (libgcc_s), or the executable, which
	 * may have libgcc's unwinder linked in (static, -static-libgcc) */
	if (!p->register_frame && !p->unwind_off &&
	    (m->is_main || rtl_binary_exports(m->bin, "__register_frame_info")) &&
	    !elf_symbol_lookup(m->path, "__register_frame_info", &a) && a)
		p->register_frame = a + m->bias;
}

/* Function FN of module MOD waits for registration. */
static void unwind_queue(struct proc *p, uint32_t mod, uint32_t fn)
{
	if (rtl_grow(&p->unw_pending, &p->capunw_pending, p->nunw_pending + 1, sizeof(*p->unw_pending)))
		return;
	p->unw_pending[p->nunw_pending].mod = mod;
	p->unw_pending[p->nunw_pending++].fn = fn;
}

void unwind_function_relocated(struct proc *p, struct module *m, size_t fn)
{
	if (!patch_module_unwind(p, m))
		return;   /* C code: nothing to register (see patch_module_unwind) */
	unwind_queue(p, (uint32_t)(m - p->mods), (uint32_t)fn);
}

static bool inside_unwinder(struct proc *p, pid_t tid);
static pid_t lock_owner(struct proc *p);

/* A stop of another thread while TID runs an inferior call. The call may
 * wait for libgcc's object lock, which only a thread inside the unwinder
 * can hold (_Unwind_Find_FDE calls functions for the first time, and a
 * signal may come): such a thread is served at once and runs on; the
 * functions it meets are not unwound through (they are the unwinder's
 * callees), so their registration can wait for the next flush. Any other
 * stop waits for the event loop, which registers before it resumes. */
static void other_stop(struct proc *p, const struct os_stop *st)
{
	uint64_t pc = st->pc;
	struct thread *t = proc_thread(p, st->tid);
	if (t && (st->kind == OS_BREAKPOINT || st->kind == OS_SIGNAL) &&
	    (lock_owner(p) == st->tid || inside_unwinder(p, st->tid))) {
		/* a first call, or its trace buffer full or its interval ended
		 * (memtrace, bbv: an int3 in a copy the session's loop would
		 * otherwise serve; a memtrace run waited 5 s for the lock) */
		if (st->kind == OS_BREAKPOINT && (pc || !os_get_pc(st->tid, &pc)) &&
		    ((p->mt && (memtrace_trap(p, st->tid) || memtrace_window_trap(p, st->tid))) ||
		     (p->bbv && bbv_trap(p, st->tid, pc)) || engine_breakpoint(p, st->tid, pc))) {
			int sig = t->pending_sig;
			t->pending_sig = 0;
			os_resume(st->tid, sig);
			return;
		}
		if (st->kind == OS_SIGNAL && st->sig != SIGTRAP && st->sig != SIGSEGV &&
		    st->sig != SIGBUS && st->sig != SIGILL && st->sig != SIGFPE) {
			os_resume(st->tid, st->sig);
			return;
		}
	}
	session_defer_stop(p->s, st);
}

enum { CALL_SECONDS = 5 };   /* an inferior call still running then is abandoned */

/* Ends TID's part in an abandoned call: stops it if it runs, keeping a
 * signal met meanwhile for later delivery. */
static void stop_abandoned(struct proc *p, pid_t tid)
{
	struct os_stop st;
	if (os_interrupt(tid))
		return;
	while (!os_wait_tid(tid, &st)) {
		if (st.kind == OS_EXITED || st.kind == OS_SIGNALED || st.kind == OS_EVENT_EXIT) {
			session_defer_stop(p->s, &st);   /* its end is the loop's */
			return;
		}
		struct thread *t = proc_thread(p, tid);
		if (st.kind == OS_SIGNAL && t)
			t->pending_sig = st.sig;
		if (st.kind == OS_OTHER || st.kind == OS_GROUP_STOP || st.kind == OS_SIGNAL ||
		    st.kind == OS_BREAKPOINT)
			return;   /* stopped: its registers can be put back */
		os_resume(tid, 0);
	}
}

/* The counters as they were before a registration call: what reticle's
 * call into the target (__register_frame_info, and what it calls: its
 * object lock, pthread_mutex_lock) counts is not the program's work (a C++
 * program's fcount showed 112 calls of __register_frame_info that
 * callgrind does not see). With one thread, the process is stopped but for
 * the call: every window's counter area is kept, and after it each word
 * the call changed is put back, but for the object the call fills
 * (libgcc links its registrations by them; earlier ones it does not
 * change); the counters of the copies made during the call are cleared
 * (their words were not counters yet: timers' numbers and arc words are
 * there too, and stay). With threads, their copies count per thread and
 * the call's thread in the null area, whose slab is cleared after it
 * (unless threads beyond the areas' number count there too); counters
 * shared with running threads (locked increments) cannot be put back, and
 * are not. */
struct call_counts {
	uint64_t **saved;         /* each window's counter words, NULL: none kept */
	size_t *len, n;
};

static void counts_keep(struct proc *p, struct call_counts *cc)
{
	*cc = (struct call_counts){ 0 };
	p->ncall_fns = 0;
	if (p->multithreaded)
		return;
	cc->saved = calloc(p->shm.nwins ? p->shm.nwins : 1, sizeof(*cc->saved));
	cc->len = calloc(p->shm.nwins ? p->shm.nwins : 1, sizeof(*cc->len));
	if (!cc->saved || !cc->len)
		return;
	cc->n = p->shm.nwins;
	for (size_t i = 0; i < cc->n; i++) {
		const struct window *w = &p->shm.wins[i];
		size_t words = w->ctr_used / 8;
		if (words <= WINDOW_SCRATCH_SIZE / 8 || !(cc->saved[i] = malloc(words * 8)))
			continue;
		cc->len[i] = words;
		memcpy(cc->saved[i], window_local(w, w->addr + w->code_cap), words * 8);
	}
}

static void clear_counter(struct proc *p, uint64_t c)
{
	struct window *w = c ? proc_window_at(p, c, 8) : NULL;
	if (w)
		*(uint64_t *)window_local(w, c) = 0;
}

/* CC's words put back but those in [OWN, OWN_END), the call's own. */
static void counts_put_back(struct proc *p, struct call_counts *cc, uint64_t own, uint64_t own_end)
{
	if (p->multithreaded) {
		if (p->thread_counters && !p->areas.null_used && p->areas.addr)
			thread_area_slab_clear(&p->areas, 0);
	} else if (cc->saved) {
		for (size_t i = 0; i < cc->n && i < p->shm.nwins; i++) {
			const struct window *w = &p->shm.wins[i];
			uint64_t base = w->addr + w->code_cap, *now = window_local(w, base);
			/* not the scratch words: an inferior system call's data */
			for (size_t k = WINDOW_SCRATCH_SIZE / 8; cc->saved[i] && k < cc->len[i]; k++)
				if (now[k] != cc->saved[i][k] && (base + 8 * k < own || base + 8 * k >= own_end))
					now[k] = cc->saved[i][k];
		}
		for (size_t i = 0; i < p->ncall_fns; i++) {
			const struct module *m = &p->mods[p->call_fns[i].mod];
			const struct func_state *fs = &m->fs[p->call_fns[i].fn];
			clear_counter(p, fs->entry_counter);
			for (uint32_t b = 0; b < fs->nblocks; b++) {
				clear_counter(p, p->blocks[fs->block0 + b].counter);
				clear_counter(p, p->blocks[fs->block0 + b].rep_counter);
			}
			for (uint32_t k = 0; k < fs->npoints; k++)
				if (!point_in_arcs(&p->points[fs->point0 + k]))
					clear_counter(p, p->points[fs->point0 + k].counter);
		}
	}
	for (size_t i = 0; i < cc->n; i++)
		free(cc->saved[i]);
	free(cc->saved);
	free(cc->len);
	p->ncall_fns = 0;
}

/* Calls FUNC(A0, A1) in stopped thread TID and waits for it to return to
 * the int3 after the first window's syscall gadget. Breakpoints met on the
 * way are reticle's own (functions seen for the first time) and handled as
 * usual; a signal is kept for later delivery. The outcome is bounded: a
 * fault in the call (-EFAULT), a trap that is not reticle's, or a call
 * still running after CALL_SECONDS (-ETIMEDOUT) abandon it, and the thread
 * gets its registers back as if it had never been made. A1_END: A1 is a
 * registration object that ends there, and the call counts for nothing
 * (call_counts), 0: counts as it does. */
static int proc_call(struct proc *p, pid_t tid, uint64_t func, uint64_t a0, uint64_t a1, uint64_t a1_end,
		     long *ret, uint64_t *fault_pc)
{
	struct os_saved_regs saved;
	uint64_t back = p->gadget + 2;
	uint64_t deadline = os_now_ns() + CALL_SECONDS * 1000000000ull;
	/* reticle's call is not the program's time: the timed functions it
	 * runs (__register_frame_info) see the null area, which takes no frame,
	 * instead of the thread's (they would count as its top frame's callees
	 * while the pause of the trap is taken out of that frame) */
	uint64_t null_area = p->areas.addr ? thread_area_addr(&p->areas, 0) : 0;
	const struct thread *caller = proc_thread(p, tid);
	if (caller && caller->exited)
		return -ESRCH;   /* killed: its exit stop met by an earlier step or call */
	uint64_t *counts = bbv_call_begin(p);
	int err = os_call_begin(tid, func, a0, a1, back, null_area, p->mem, &saved);
	if (err) {
		free(counts);
		return err;
	}
	/* a registration (A1 the object it fills, up to A1_END) counts for
	 * nothing; a deregistration changes the objects before its own in
	 * libgcc's list, and comes when the counting is done (a detach) */
	struct call_counts cc = { 0 };
	if (a1_end)
		counts_keep(p, &cc);
	p->in_call = true;
	bool running = false;
	for (;;) {
		struct os_stop st;
		uint64_t pc;
		if (!running && (err = os_resume(tid, 0)))
			break;
		running = true;
		if ((err = os_wait_until(&st, deadline))) {
			if (err == -ETIMEDOUT)
				stop_abandoned(p, tid);
			break;
		}
		if (st.tid != tid) {
			other_stop(p, &st);
			continue;
		}
		running = false;
		if (st.kind == OS_EXITED || st.kind == OS_SIGNALED || st.kind == OS_EVENT_EXIT) {
			/* its end is the loop's; an exit stop (killed by another
			 * thread's exit_group) too, not stepped past: a main
			 * thread's end comes only after the others' */
			session_defer_stop(p->s, &st);
			struct thread *gone = proc_thread(p, tid);
			if (gone)
				gone->exited = true;
			err = -ESRCH;
			break;
		}
		if (st.kind == OS_SIGNAL && st.fault) {
			os_get_pc(tid, fault_pc);
			err = -EFAULT;   /* resumed, it would fault again: give the call up */
			break;
		}
		if (st.kind == OS_SIGNAL) {
			struct thread *t = proc_thread(p, tid);
			if (t)
				t->pending_sig = st.sig;
			continue;
		}
		if (st.kind != OS_BREAKPOINT || os_get_pc(tid, &pc))
			continue;
		if (pc == back + 1)
			break;
		/* a full trace buffer, an interval's end: in the null area */
		if ((p->mt && memtrace_call_trap(p, pc)) || (p->bbv && bbv_call_trap(p)))
			continue;
		if (!engine_breakpoint(p, tid, pc)) {
			*fault_pc = pc - 1;
			err = -EFAULT;   /* a trap that is not reticle's: give up the call */
			break;
		}
	}
	p->in_call = false;
	if (a1_end)   /* before bbv's look: the call counted nothing then */
		counts_put_back(p, &cc, a1, a1_end);
	bbv_call_end(p, counts);
	if (err == -ESRCH)
		return err;
	int e2 = os_call_end(tid, &saved, ret);
	return err ? err : e2;
}

/* Registers the pending functions of module M (indexes FNS) with one blob
 * and one inferior call. */
static int register_batch(struct proc *p, pid_t tid, struct module *m, const uint32_t *fns, size_t n,
			  uint64_t *fault_pc)
{
	struct window *w = &p->shm.wins[m->win];
	/* two FDEs for a copy with a twin: the twin's rows are its own */
	struct unw_map *maps = calloc(2 * n, sizeof(*maps));
	struct x86_sp_row **twin_rows = calloc(n, sizeof(*twin_rows));
	size_t k = 0;
	int err = 0;
	if (!maps || !twin_rows) {
		free(maps);
		free(twin_rows);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n && !err; i++) {
		struct func_state *fs = &m->fs[fns[i]];
		const rtl_function *f = rtl_binary_function(m->bin, fns[i]);
		if (fs->status != FS_DONE || !fs->nmap)
			continue;
		uint32_t len = fs->twin_to ? (uint32_t)(fs->twin_start - fs->entry) : fs->code_len;
		maps[k++] = (struct unw_map){ fs->map_from, fs->map_to, fs->nmap, f->addr + m->bias,
					      f->size, fs->entry, len, fs->sp_rows, fs->nsp_rows };
		if (!fs->twin_to)
			continue;
		size_t r = 0, first = 0;
		while (first < fs->nsp_rows && fs->sp_rows[first].off < len)
			first++;
		if (fs->nsp_rows > first && !(twin_rows[i] = malloc((fs->nsp_rows - first) * sizeof(**twin_rows))))
			err = -ENOMEM;
		for (size_t j = first; j < fs->nsp_rows && !err; j++)
			twin_rows[i][r++] = (struct x86_sp_row){ fs->sp_rows[j].off - len, fs->sp_rows[j].below };
		maps[k++] = (struct unw_map){ fs->map_from, fs->twin_to, fs->nmap, f->addr + m->bias, f->size,
					      fs->twin_start, fs->code_len - len, twin_rows[i], r };
	}
	uint8_t *blob = NULL;
	size_t len = 0;
	uint64_t dest = w->addr + ((w->code_used + 7) & ~(size_t)7);
	if (!err && k)
		err = unw_build_many(m->unw, maps, k, dest, &blob, &len, NULL);
	for (size_t i = 0; i < n; i++)
		free(twin_rows[i]);
	free(twin_rows);
	free(maps);
	if (err || len <= 4) {   /* nothing but a terminator: no FDE to register */
		free(blob);
		return err;
	}
	uint64_t at = window_alloc_code(w, len, 8);
	uint64_t obj = window_alloc_counter(w);
	for (int i = 1; obj && i < OBJECT_SIZE / 8; i++)
		if (!window_alloc_counter(w))
			obj = 0;
	if (at != dest || !obj) {
		free(blob);
		return -ENOSPC;
	}
	memcpy(window_local(w, at), blob, len);
	free(blob);
	long ret;
	err = proc_call(p, tid, p->register_frame, at, obj, obj + OBJECT_SIZE, &ret, fault_pc);
	/* kept for a detach, which takes them back before the windows go */
	if (!err && p->attached && !rtl_grow(&p->unw_objects, &p->capunw_objects, p->nunw_objects + 1,
					     sizeof(*p->unw_objects)))
		p->unw_objects[p->nunw_objects++] = at;
	return err;
}

/* Whether a word near the top of TID's stack (16 KiB) is an address in
 * the unwinder's module or its copies: a return address of the unwinder's,
 * or a stale word, which count alike (inside_unwinder's fallback). */
static bool unwinder_word_on_stack(struct proc *p, const struct module *m, pid_t tid)
{
	uint64_t sp, words[2048];
	if (os_get_sp(tid, &sp))
		return true;
	size_t n = sizeof(words) / 8;
	while (n && os_mem_read(p->mem, sp, words, n * 8))
		n /= 2;   /* near the top of the stack mapping */
	/* the unwinder's frames return into its text or, once relocated,
	 * into its copies (rustup: _Unwind_Backtrace's copy called
	 * _Unwind_Find_FDE's, which held the object lock at its callee's first
	 * call; the registration then waited 5 s for a lock its own thread had) */
	uint64_t clo = 0, chi = 0;
	if (m->win >= 0) {
		const struct window *w = &p->shm.wins[m->win];
		clo = w->addr;
		chi = w->addr + w->code_used;
	}
	for (size_t i = 0; i < n; i++)
		if ((words[i] >= m->lo && words[i] < m->hi) || (words[i] >= clo && words[i] < chi))
			return true;
	return false;
}

/* Whether TID is inside the unwinder, where it may hold the unwinder's
 * lock (a function called for the first time from _Unwind_Find_FDE):
 * one of its callers (frame 1 on,
 * walked by the call-frame information, copies read as their originals)
 * is in the unwinder's module. Not frame 0: a thread at the first call of
 * _Unwind_RaiseException has not entered it yet. Only live frames: a scan
 * of the stack's words also met stale ones (earlier registration calls
 * went through libgcc, and frames made later keep their words), and a
 * thread served at once for them ran its new copies unregistered while
 * another thread registered: _Unwind_RaiseException's copy could not
 * unwind itself and libgcc aborted. Where the walk stops at once, the
 * words decide. */
static bool inside_unwinder(struct proc *p, pid_t tid)
{
	enum { MAX_FRAMES = 256 };
	struct module *m = proc_module_at(p, p->register_frame);
	if (!m)
		return true;
	uint64_t frames[MAX_FRAMES];
	struct unw_mods *unw = unw_mods_new();
	size_t n = unw ? stack_walk(p, tid, unw, frames, NULL, MAX_FRAMES) : 0;
	if (unw)
		unw_mods_free(unw);
	if (n < 2)
		return unwinder_word_on_stack(p, m, tid);
	for (size_t i = 1; i < n; i++)
		if (frames[i] >= m->lo && frames[i] < m->hi)
			return true;
	return false;
}

/* Whether the loader has relocated the unwinder's module: it maps a
 * dlopen'd object and tells r_brk (RT_CONSISTENT) before it relocates it,
 * and a call into it then jumps through its unrelocated GOT. The loader
 * fills the PLT's GOT slots last, in the order of their addresses: the
 * highest one no longer holding its link-time value (an address in the
 * module's link-time extent; a shared object's bias is never 0) tells that
 * it is done. Not a .plt.got stub's slot: that one is in .got, filled
 * with the other relocations, before the PLT's (libgcc_s under a dlopen
 * with RTLD_NOW, as java's launcher does for libjvm). */
static bool unwinder_relocated(struct proc *p)
{
	if (p->unwinder_relocated)
		return true;
	struct module *m = proc_module_at(p, p->register_frame);
	if (!m)
		return false;
	uint64_t lo, hi, slot = 0;
	fn_link_extent(m->bin, &lo, &hi);
	for (size_t i = 0; i < rtl_binary_function_count(m->bin); i++) {
		const rtl_function *f = rtl_binary_function(m->bin, i);
		uint64_t s = f->sources & RTL_SRC_PLT ? rtl_binary_plt_slot(m->bin, f) : 0;
		if (s > slot)
			slot = s;
	}
	uint64_t word;
	if (!slot || !m->bias)
		return p->unwinder_relocated = true;   /* nothing to tell by: trust it */
	if (os_mem_read(p->mem, slot + m->bias, &word, 8))
		return false;
	return p->unwinder_relocated = word < lo || word >= hi;
}

/* Whether libc has set up TLS: registration locks a mutex, which reads
 * the thread pointer. A static program relocates functions long before
 * (__libc_start_main sets it after applying its IRELATIVE relocations); a
 * call then faults in pthread_mutex_lock with the lock taken, and the
 * program's own frame_dummy waits for it forever. */
static bool tls_ready(struct proc *p, pid_t tid)
{
	uint64_t base;
	if (!p->tls_ready && !os_get_tls_base(tid, &base) && base)
		p->tls_ready = true;
	return p->tls_ready;
}

/* libgcc's object_mutex (GCC 12 and before; later ones register without
 * it): __register_frame_info_table_bases locks it first thing, 'lea
 * rdi,[rip+object_mutex]; call pthread_mutex_lock'. Found once, from the
 * bytes of the target's own libgcc. */
static uint64_t unwind_lock(struct proc *p)
{
	if (p->unwind_lock)
		return p->unwind_lock;
	p->unwind_lock = 1;
	struct module *m = proc_module_at(p, p->register_frame);
	uint64_t at;
	uint8_t b[96];
	if (!m || elf_symbol_lookup(m->path, "__register_frame_info_table_bases", &at) || !at ||
	    os_mem_read(p->mem, at + m->bias, b, sizeof(b)))
		return 1;
	for (size_t i = 0; i + 12 <= sizeof(b); i++)
		if (b[i] == 0x48 && b[i + 1] == 0x8d && b[i + 2] == 0x3d && b[i + 7] == 0xe8) {
			int32_t disp;
			memcpy(&disp, b + i + 3, 4);
			uint64_t lock = at + m->bias + i + 7 + (int64_t)disp;
			if (lock >= m->lo && lock < m->hi)
				p->unwind_lock = lock;
			break;
		}
	return p->unwind_lock;
}

/* The thread holding the object lock (glibc's mutex: lock word, count,
 * owner tid), 0 when it is free, -1 when that cannot be told. */
static pid_t lock_owner(struct proc *p)
{
	uint64_t lock = unwind_lock(p);
	int32_t word[3];
	if (lock == 1 || os_mem_read(p->mem, lock, word, sizeof(word)))
		return -1;
	return word[0] ? (word[2] > 0 ? word[2] : -1) : 0;
}

/* Whether a registration now would wait for the object lock forever: its
 * holder (a thread inside _Unwind_Find_FDE, stopped at a first call) is
 * TID itself or a thread whose stop waits for the event loop. A running
 * holder lets it go soon (and is served at once if it stops meanwhile).
 * Where the lock is not known: a return address into the unwinder near the
 * top of TID's stack. */
static bool registration_would_wait(struct proc *p, pid_t tid)
{
	if (unwind_lock(p) == 1)
		return inside_unwinder(p, tid);
	pid_t owner = lock_owner(p);
	/* no owner in a held lock: a running thread between the lock word
	 * and the owner word (glibc stores them apart); the stack decides */
	bool wait = owner < 0 ? inside_unwinder(p, tid)
		    : owner == tid || (owner > 0 && session_stop_deferred(p->s, owner));
	if (wait)
		rtl_debug("tid %d: %zu registrations wait: unwinder lock held by tid %d", (int)tid,
			  p->nunw_pending, (int)owner);
	return wait;
}

/* The registration call failed in a way that would fail again: no more
 * calls in this process (exceptions through copies may then terminate). */
static void give_up(struct proc *p, int err, uint64_t fault_pc)
{
	char where[256] = "";
	if (fault_pc)
		proc_describe_pc(p, fault_pc, where, sizeof(where));
	rtl_warn("unwind information for relocated code not registered (%s%s%s): exceptions and "
		 "backtraces through instrumented functions may fail in process %d", strerror(-err),
		 *where ? " at " : "", where, (int)p->pid);
	p->register_frame = 0;
	p->unwind_off = true;
}

int unwind_detach(struct proc *p, pid_t tid)
{
	if (!p->nunw_objects)
		return 0;
	struct module *m = p->register_frame ? proc_module_at(p, p->register_frame) : NULL;
	uint64_t dereg = 0;
	if (!m || elf_symbol_lookup(m->path, "__deregister_frame_info", &dereg) || !dereg)
		return -ENOENT;
	while (p->nunw_objects) {
		uint64_t fault_pc = 0;
		long ret;
		int err = proc_call(p, tid, dereg + m->bias, p->unw_objects[p->nunw_objects - 1], 0, 0, &ret,
				    &fault_pc);
		if (err || !ret)
			return err ? err : -ENOENT;   /* libgcc did not know it: keep the window */
		p->nunw_objects--;
	}
	return 0;
}

void unwind_flush(struct proc *p, pid_t tid)
{
	if (!p->register_frame || p->in_call || !p->gadget || !p->nunw_pending)
		return;
	if (!unwinder_relocated(p) || !tls_ready(p, tid) || (p->unwind_at_entry && !p->warm_started))
		return;
	if (registration_would_wait(p, tid))
		return;
	/* take the list: functions relocated during the calls below (met on
	 * the way through the unwinder) queue up for the next flush */
	struct { uint32_t mod, fn; } *list = (void *)p->unw_pending;
	size_t n_list = p->nunw_pending;
	p->unw_pending = NULL;
	p->nunw_pending = p->capunw_pending = 0;
	uint32_t *fns = malloc(n_list * sizeof(*fns));
	while (fns && n_list) {
		uint32_t mod = list[n_list - 1].mod;
		size_t n = 0;
		for (size_t i = 0; i < n_list;) {
			if (list[i].mod == mod) {
				fns[n++] = list[i].fn;
				list[i] = list[--n_list];
			} else {
				i++;
			}
		}
		struct module *m = &p->mods[mod];
		if (m->win < 0 || !patch_module_unwind(p, m))
			continue;
		uint64_t fault_pc = 0;
		int err = register_batch(p, tid, m, fns, n, &fault_pc);
		if (err == -ESRCH)
			break;
		if (err == -EFAULT && !fault_pc && !p->warm_started && !p->unwind_at_entry) {
			/* a call through a pointer not yet set: AddressSanitizer's
			 * pthread_mutex_lock before its initializer (preinit_array)
			 * has found the real one. Again at the entry point. */
			rtl_debug("pid %d: unwind registration jumped to 0: again at the entry point", (int)p->pid);
			p->unwind_at_entry = true;
			for (size_t i = 0; i < n; i++)
				unwind_queue(p, mod, fns[i]);
			for (size_t i = 0; i < n_list; i++)
				unwind_queue(p, list[i].mod, list[i].fn);
			break;
		}
		if (err == -EFAULT || err == -ETIMEDOUT) {
			give_up(p, err, fault_pc);
			break;
		}
		if (err)
			rtl_warn("unwind information not registered: %s", strerror(-err));
	}
	free(fns);
	free(list);
}
