/* Process images: modules, threads, windows, inferior system calls. */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <reticle/error.h>
#include "elf/code_facts.h"
#include "elf/needed.h"
#include "engine/engine.h"
#include "engine/span.h"
#include "runtime/arc_table.h"
#include "sample/sample.h"
#include "os/linux/os.h"
#include "util/array.h"
#include "util/log.h"
#include "warm/warm.h"
#include "isa/x86_64/relocate.h"
#include "isa/x86_64/writer.h"

enum { PAGE = 4096 };

struct proc *proc_new(struct rtl_session *s, pid_t pid)
{
	struct proc *p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->s = s;
	p->pid = pid;
	p->sweeping = session_sweeps(s);
	p->shm.fd = -1;
	p->areas.fd = -1;
	p->mem = os_mem_open(pid);
	if (p->mem < 0 || !patch_proc_init(p, session_patch_env(s)) || shm_init(&p->shm) ||
	    proc_add_thread(p, pid)) {
		proc_free(p);
		return NULL;
	}
	span_proc_start(p, -1, false);
	return p;
}

/* What an ended process owned alone and takes milliseconds to give back
 * (its function states, its code cache windows): freed on the session's
 * disposer thread. */
struct leftovers {
	struct shm shm;
	size_t nmods;
	struct {
		struct func_state *fs;
		size_t n;
	} mods[];
};

static void free_states(struct func_state *fs, size_t n)
{
	for (size_t k = 0; fs && k < n; k++)
		func_state_release(&fs[k]);
	free(fs);
}

static void leftovers_free(void *arg)
{
	struct leftovers *l = arg;
	for (size_t i = 0; i < l->nmods; i++)
		free_states(l->mods[i].fs, l->mods[i].n);
	shm_free(&l->shm);
	free(l);
}

void proc_free(struct proc *p)
{
	if (!p)
		return;
	struct leftovers *l = p->s ? calloc(1, sizeof(*l) + p->nmods * sizeof(l->mods[0])) : NULL;
	shim_write(p, NULL);   /* the observer lets go of its areas first */
	memtrace_free(p);
	proc_counters_thaw(p);
	span_proc_free(p);
	bbv_free(p);
	for (size_t i = 0; i < p->nmods; i++) {
		struct module *m = &p->mods[i];
		size_t n = m->bin ? rtl_binary_function_count(m->bin) : 0;
		if (l) {
			l->mods[l->nmods].fs = m->fs;
			l->mods[l->nmods++].n = n;
		} else {
			free_states(m->fs, n);
		}
		free(m->path);
		free(m->warm);
		dcache_free(m);
		ccache_free(m);
		x86_foreign_cache_free(m->foreign);
		patch_module_unwind_free(m);
	}
	free(p->mods);
	patch_proc_free(p);
	free(p->unw_pending);
	free(p->call_fns);
	free(p->memo);
	free(p->threads);
	free(p->blocks);
	free(p->calls);
	free(p->points);
	free(p->command);
	if (l) {
		l->shm = p->shm;
		memset(&p->shm, 0, sizeof(p->shm));
	} else {
		shm_free(&p->shm);
	}
	thread_region_free(&p->areas);
	for (size_t i = 0; i < p->ntimes; i++) {
		free(p->times[i].t);
		free(p->times[i].nodes);
	}
	free(p->times);
	for (size_t i = 0; i < p->nundo; i++)
		free(p->undo[i].old);
	free(p->undo);
	free(p->unw_objects);
	free(p->resume_words);
	free(p->sweep);
	free(p->sweep_fns);
	free(p->swept_sites);
	if (p->mem >= 0)
		close(p->mem);
	if (l)
		session_dispose(p->s, leftovers_free, l);
	free(p);
}

int proc_add_thread(struct proc *p, pid_t tid)
{
	if (proc_thread(p, tid))
		return 0;
	struct thread *nt = realloc(p->threads, (p->nthreads + 1) * sizeof(*nt));
	if (!nt)
		return -ENOMEM;
	p->threads = nt;
	p->threads[p->nthreads++] = (struct thread){ .tid = tid, .area = -1 };
	return 0;
}

void proc_remove_thread(struct proc *p, pid_t tid)
{
	timers_thread_exit(p, tid);
	for (size_t i = 0; i < p->nthreads; i++)
		if (p->threads[i].tid == tid) {
			p->threads[i] = p->threads[--p->nthreads];
			return;
		}
}

int proc_singlestep(struct proc *p, pid_t tid, int *sig)
{
	struct thread *t = proc_thread(p, tid);
	*sig = 0;
	if (t && t->exited)
		return -ESRCH;
	int err = os_singlestep(tid, sig);
	if (t && err == -ESRCH)
		t->exited = true;   /* at its exit stop or past it */
	if (t && *sig && *sig != SIGTRAP && !t->pending_sig)
		t->pending_sig = *sig;
	return err;
}

int proc_step_over(struct proc *p, pid_t tid, uint64_t at, uint8_t orig, int *sig)
{
	proc_code_write(p, at, orig, false);
	int err = proc_singlestep(p, tid, sig);
	proc_code_write(p, at, 0xcc, false);
	return err;
}

int proc_syscall(struct proc *p, pid_t tid, long nr, uint64_t a0, uint64_t a1, uint64_t a2,
		 uint64_t a3, uint64_t a4, uint64_t a5, long *ret)
{
	const uint64_t args[6] = { a0, a1, a2, a3, a4, a5 };
	int sig = 0;
	struct thread *t = proc_thread(p, tid);
	if (t && t->exited)
		return -ESRCH;   /* its exit stop was met by an earlier step or call */
	int err = os_inferior_syscall(tid, p->mem, p->gadget, nr, args, ret, &sig);
	if (t && err == -ESRCH)
		t->exited = true;
	if (sig && t)
		t->pending_sig = sig;
	return err;
}

/* Writes STR where the target can read it: the scratch area of the first
 * window once there is one, else below the stopped thread's red zone. */
static int put_string(struct proc *p, pid_t tid, const char *str, bool use_stack, uint64_t *addr)
{
	if (p->gadget && !use_stack) {
		struct window *w = &p->shm.wins[0];
		*addr = w->addr + 64;
		memcpy(window_local(w, *addr), str, strlen(str) + 1);
		return 0;
	}
	uint64_t sp;
	int err = os_get_sp(tid, &sp);
	if (err)
		return err;
	*addr = (sp - 2048) & ~(uint64_t)15;
	return os_mem_write(p->mem, *addr, str, strlen(str) + 1);
}

/* Maps window W of P's memfd at its address in the target. FIXED replaces
 * whatever is there (a forked child's inherited windows, still backed by the
 * parent's memfd: the path then goes on the stack, not in a window). */
/* Opens reticle's memfd FD in P's thread TID (through /proc/RETICLE/fd;
 * ON_STACK: the path goes below the stack, not in a window): *TFD, the
 * target's descriptor, which the caller closes after mapping it. */
static int open_memfd(struct proc *p, pid_t tid, int fd, bool on_stack, long *tfd)
{
	char path[64];
	uint64_t str;
	int err;
	snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)getpid(), fd);
	if ((err = put_string(p, tid, path, on_stack, &str)) ||
	    (err = proc_syscall(p, tid, SYS_open, str, O_RDWR | O_CLOEXEC, 0, 0, 0, 0, tfd)))
		return err;
	return *tfd < 0 ? (int)*tfd : 0;
}

static int proc_map_window(struct proc *p, pid_t tid, const struct window *w, bool fixed)
{
	long fd, r1 = -1, r2 = -1, ignored;
	int flags = MAP_SHARED | (fixed ? MAP_FIXED : MAP_FIXED_NOREPLACE);
	int err = open_memfd(p, tid, p->shm.fd, fixed, &fd);

	if (err)
		return err;
	err = proc_syscall(p, tid, SYS_mmap, w->addr, w->code_cap, PROT_READ | PROT_EXEC, flags,
			   (uint64_t)fd, w->off, &r1);
	if (!err)
		err = proc_syscall(p, tid, SYS_mmap, w->addr + w->code_cap, w->ctr_cap,
				   PROT_READ | PROT_WRITE, flags, (uint64_t)fd, w->off + w->code_cap, &r2);
	proc_syscall(p, tid, SYS_close, (uint64_t)fd, 0, 0, 0, 0, 0, &ignored);
	if (err)
		return err;
	if ((uint64_t)r1 != w->addr || (uint64_t)r2 != w->addr + w->code_cap) {
		rtl_debug("mapping a window at %#llx failed: %ld, %ld", (unsigned long long)w->addr, r1, r2);
		return r1 < 0 && r1 > -4096 ? (int)r1 : r2 < 0 && r2 > -4096 ? (int)r2 : -RTL_ERR_NO_SPACE;
	}
	return 0;
}

int proc_map_memfd(struct proc *p, pid_t tid, int fd, uint64_t addr, size_t len, bool fixed, uint64_t *at)
{
	long tfd, r = -1, ignored;
	int err = open_memfd(p, tid, fd, fixed, &tfd);
	if (err)
		return err;
	err = proc_syscall(p, tid, SYS_mmap, addr, len, PROT_READ | PROT_WRITE,
			   MAP_SHARED | MAP_NORESERVE | (fixed ? MAP_FIXED : 0), (uint64_t)tfd, 0, &r);
	proc_syscall(p, tid, SYS_close, (uint64_t)tfd, 0, 0, 0, 0, 0, &ignored);
	if (err)
		return err;
	if (r < 0 && r > -4096)
		return (int)r;
	if (fixed && (uint64_t)r != addr)
		return -RTL_ERR_NO_SPACE;
	*at = (uint64_t)r;
	return 0;
}

static uint64_t align_up(uint64_t v, uint64_t a)
{
	return (v + a - 1) & ~(a - 1);
}

/* bbv's and memtrace's code caches are 16 times a module's text up to
 * this (add_window) */
enum { WINDOW_CODE_BOUND = 256 << 20 };
/* and only while such a window is at most this share of the room left
 * within its module's reach (1/N) */
enum { WINDOW_ROOM_SHARE = 32 };

/* A window near module M: code room for its text several times over (blocks
 * grow by their counter increments; memory tracing puts a record's code
 * at every access: Rust's std grew past 4 times its text in a panic's
 * backtrace), one counter per text byte at most. Only the pages touched
 * cost memory; the range must be found within 2 GiB of the module, so a
 * smaller one is taken when the larger one is not, down to the text's own
 * size (the JVM reserves most of the space around the libraries it loads
 * late: libnio and libnet found no room for 4 times one run in four; a
 * copy that does not fit is left out and named in the report). */
static int add_window(struct proc *p, pid_t tid, struct module *m, uint64_t avoid_lo, uint64_t avoid_hi)
{
	uint64_t text = 0;
	for (size_t i = 0; i < rtl_binary_segment_count(m->bin); i++) {
		const rtl_segment *s = rtl_binary_segment(m->bin, i);
		if (s->flags & PF_X)
			text += s->memsz;
	}
	/* bbv's windows as memtrace's: they lie beside the modules, where the
	 * kernel places the program's own mappings next, so the two place the
	 * program alike and a bbv run's intervals are the ones a sampled
	 * memtrace run meets (python3 ran 6 M instructions more under bbv) */
	unsigned factor = session_probes(p->s)->memory || session_bbv_interval(p->s) ? 16 : 4;
	/* but not gigabytes for a library of tens of megabytes of text (the
	 * 16 times of libLLVM's took the 2 GiB beside the libraries that
	 * clang loads after it: they ran uninstrumented) */
	while (factor > 4 && factor * text > WINDOW_CODE_BOUND)
		factor /= 2;
	size_t code_cap;
	uint64_t addr = 0;
	/* and an arc table at the top: memfd pages cost nothing until touched */
	size_t ctr_cap = align_up(text + (256 << 10) + ARC_TABLE_BYTES, PAGE);
	/* A library's window more than 4 times its text only where it leaves
	 * the room within reach to the libraries loaded next: without address
	 * randomization (memtrace, bbv) they lie against the stack's reserve
	 * and every window goes in the 2 GiB below them. ffmpeg's 213
	 * libraries (211 MB of text) took it all with their first 130
	 * windows, and 54 libraries ran uninstrumented. (A randomized layout
	 * has terabytes; the main executable has its own place, far from
	 * the libraries.) */
	bool share = factor > 4 && !m->is_main;
	uint64_t room = share ? free_room_near(p->pid, m->lo, m->hi, avoid_lo, avoid_hi) : 0;
	do {
		size_t spare = factor >= 4 ? 1 << 20 : 128 << 10;
		code_cap = align_up(factor * text + WINDOW_GADGET_SIZE + spare, PAGE);
		if (share && factor > 4 && (code_cap + ctr_cap) * (uint64_t)WINDOW_ROOM_SHARE > room)
			continue;
		addr = find_free_range_near(p->pid, m->lo, m->hi, code_cap + ctr_cap, avoid_lo, avoid_hi);
	} while (!addr && (factor /= 2) >= 1);
	if (addr && factor < 4)
		rtl_debug("%s: a code cache of %zu bytes only (%u times its text)", m->path, code_cap, factor);
	/* RETICLE_DEBUG_CODE_CACHE=BYTES: smaller windows, so that tests meet
	 * a full code cache (functions left as they are) without the JVM */
	const char *small = getenv("RETICLE_DEBUG_CODE_CACHE");
	if (addr && small && atol(small) > 0 && (size_t)atol(small) < code_cap)
		code_cap = align_up((size_t)atol(small), PAGE);
	if (!addr) {
		rtl_debug("no room for %zu bytes near [%#llx, %#llx)", code_cap + ctr_cap,
			  (unsigned long long)m->lo, (unsigned long long)m->hi);
		return -RTL_ERR_NO_SPACE;
	}
	int k = shm_add_window(&p->shm, addr, code_cap, ctr_cap);
	if (k < 0)
		return k;
	struct window *w = &p->shm.wins[k];
	static const uint8_t gadget[] = { 0x0f, 0x05, 0xcc };   /* syscall; int3 */
	memcpy(w->local, gadget, sizeof(gadget));
	w->code_used = WINDOW_GADGET_SIZE;
	w->ctr_used = WINDOW_SCRATCH_SIZE;
	window_reserve_arcs(w);
	int err = proc_map_window(p, tid, w, false);
	if (err) {
		p->shm.nwins--;   /* the memfd range stays unused */
		return err;
	}
	if (!p->gadget)
		p->gadget = w->addr;
	m->win = k;
	return 0;
}

/* Text smaller than this is armed by writing its int3s: mapping the file
 * costs a reading of /proc/PID/maps and three system calls in the target,
 * about what copying 16 pages costs. */
enum { ARMED_TEXT_MIN = 128 << 10 };

/* Maps PATH, the cache's copy of M's text armed as planned (warm/armed_text.c;
 * BINST: the binary's stat), over the module's text: true when done. */
static bool map_armed_text(struct proc *p, pid_t tid, struct module *m, const struct armed_seg *seg,
			   const char *path, const struct stat *binst)
{
	/* the mapping is the one expected: the binary's pages, read and execute */
	char line[PATH_MAX + 128];
	unsigned long long lo = 0, hi = 0, off = 0, ino = 0;
	char perms[8] = "";
	uint64_t at = seg->addr + m->bias;
	long fd = -1, r = -1, ignored;
	uint64_t str;
	bool ok = strlen(path) < WINDOW_GADGET_SIZE - 128 && !os_map_line(p->pid, at, line, sizeof(line)) &&
		  sscanf(line, "%llx-%llx %7s %llx %*s %llu", &lo, &hi, perms, &off, &ino) == 5 && lo == at &&
		  hi == at + seg->len && !strcmp(perms, "r-xp") && off == seg->off && ino == (uint64_t)binst->st_ino &&
		  !put_string(p, tid, path, false, &str) &&
		  !proc_syscall(p, tid, SYS_open, str, O_RDONLY | O_CLOEXEC, 0, 0, 0, 0, &fd) && fd >= 0;
	if (ok) {
		ok = !proc_syscall(p, tid, SYS_mmap, at, seg->len, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_FIXED,
				   (uint64_t)fd, ARMED_TEXT_HEADER, &r) && (uint64_t)r == at;
		proc_syscall(p, tid, SYS_close, (uint64_t)fd, 0, 0, 0, 0, 0, &ignored);
	}
	if (!ok)
		rtl_debug("%s: armed text %s not mapped (%ld)", m->path, path, r);
	return ok;
}

/* Arms M's entries (patch/lazy.c), by mapping its text armed in an earlier
 * run where the cache has it, else by writing them (and keeping the armed
 * text for the next run). Not in an attached process (its text goes back
 * to what it was at the detach), nor for text the loader writes into
 * (DT_TEXTREL), nor when the session samples (the sampler finds each
 * module's file by its line of /proc/PID/maps, which then names the
 * cache's file). RETICLE_ARMED_TEXT=0 turns it off. */
static int arm_module(struct proc *p, pid_t tid, struct module *m)
{
	size_t n = rtl_binary_function_count(m->bin);
	uint32_t *idx = malloc((n ? n : 1) * sizeof(*idx));
	if (!idx)
		return -ENOMEM;
	size_t armed = lazy_arm_plan(m, idx);
	static int off = -1;
	if (off < 0)
		off = getenv("RETICLE_ARMED_TEXT") && !strcmp(getenv("RETICLE_ARMED_TEXT"), "0");
	const char *dir = session_warm_dir(p->s);
	struct armed_seg seg;
	bool eligible = !off && armed && dir && !p->attached && !session_samples(p->s) &&
			!rtl_binary_has_textrel(m->bin) && armed_text_segment(m->bin, &seg) &&
			seg.len >= ARMED_TEXT_MIN;
	struct stat binst;
	char *path = eligible ? armed_text_find(dir, m->bin, &seg, idx, armed, &binst) : NULL;
	bool mapped = path && map_armed_text(p, tid, m, &seg, path, &binst);
	if (mapped) {
		lazy_arm_mapped(m, idx, armed);
	} else {
		lazy_arm_write(p, m, idx, armed);
		/* a file that holds the same, but could not be mapped (a cache
		 * on a noexec mount), is not written again every run */
		if (eligible && !path)
			armed_text_save(session_armed_saver(p->s), dir, m->bin, &seg, idx, armed);
	}
	free(path);
	free(idx);
	rtl_debug("%s: %zu of %zu functions armed%s", m->path, armed, n, mapped ? " (text mapped armed)" : "");
	return 0;
}

int proc_add_module(struct proc *p, pid_t tid, const char *path, uint64_t bias, bool is_main)
{
	rtl_binary *bin = session_binary(p->s, path);
	if (!bin)
		return -RTL_ERR_BAD_ELF;
	struct module *nm = realloc(p->mods, (p->nmods + 1) * sizeof(*nm));
	if (!nm)
		return -ENOMEM;
	p->mods = nm;
	struct module *m = &p->mods[p->nmods];
	*m = (struct module){ .path = strdup(path), .bias = bias, .bin = bin, .win = -1, .profile_id = -1,
			      .is_main = is_main };
	size_t n = rtl_binary_function_count(bin);
	m->fs = rtl_calloc_huge(n, sizeof(*m->fs));
	if (!m->path || !m->fs) {
		free(m->path);
		free(m->fs);
		return -ENOMEM;
	}
	fn_link_extent(bin, &m->lo, &m->hi);   /* an opened binary has a segment */
	m->foreign = x86_foreign_cache_new(n);   /* NULL: learnt anew each time */
	/* (only such programs can have them: not a scan of every module's names) */
	m->return_tables = p->original_returns && fn_has_return_tables(bin);
	m->lo += bias;
	m->hi += bias;
	p->nmods++;
	proc_forget_functions(p);
	/* keep brk room after the main executable: the heap grows there */
	uint64_t avoid_lo = is_main ? m->hi : 0, avoid_hi = is_main ? m->hi + (1ull << 30) : 0;
	/* Mono finds a method by the address its code runs at, and patches
	 * the calls and PLT entries of its ahead-of-time images by reading
	 * their bytes: that code is its own, as JIT code is */
	if (rtl_binary_kind(bin) == RTL_BIN_SHARED && rtl_binary_exports(bin, "mono_aot_file_info")) {
		m->left_out = "Mono ahead-of-time code (its runtime finds methods by their addresses)";
		rtl_info("%s: left uninstrumented: %s", path, m->left_out);
		for (size_t k = 0; k < n; k++)
			m->fs[k].reason = m->left_out;
	}
	if (!session_instruments(p->s) || m->left_out) {   /* known for names and places (the sampler's) */
		lazy_arm_hooks(p, m);
		return 0;
	}
	int err = add_window(p, tid, m, avoid_lo, avoid_hi);
	if (err) {
		rtl_warn("%s: no code cache near it: %s", path, rtl_strerror(err));
		return 0;   /* the module runs uninstrumented */
	}
	unwind_module_added(p, m);
	rtl_debug("%s: bias %#llx, window %#llx (code %zu KiB)", path, (unsigned long long)bias,
		  (unsigned long long)p->shm.wins[m->win].addr, p->shm.wins[m->win].code_cap >> 10);
	span_mark_module(p, m);
	if ((err = arm_module(p, tid, m)))
		return err;
	warm_load(p, m);
	/* a cold module: copies of its functions made ahead while the program runs */
	if (!m->nwarm && m->win >= 0)
		ahead_sweep(p->patch->env->ahead, m->bin);
	return 0;
}

int proc_exe(struct proc *p, char exe[PATH_MAX], rtl_binary **bin)
{
	char link[64];
	snprintf(link, sizeof(link), "/proc/%d/exe", (int)p->pid);
	ssize_t n = readlink(link, exe, PATH_MAX - 1);
	if (n < 0)
		return -errno;
	exe[n] = 0;
	*bin = session_binary(p->s, exe);
	return *bin ? 0 : -RTL_ERR_BAD_ELF;
}

int proc_add_main_modules(struct proc *p, pid_t tid, const char *exe, rtl_binary *bin)
{
	uint64_t bias = os_auxv(p->pid, AT_ENTRY) - rtl_binary_entry(bin);
	int err = proc_add_module(p, tid, exe, bias, true);
	if (err)
		return err;
	uint64_t base = os_auxv(p->pid, AT_BASE);
	const char *interp = rtl_binary_interp(bin);
	if (base && interp) {
		if ((err = proc_add_module(p, tid, interp, base, false)))
			return err;
		dl_find_r_debug(p, &p->mods[p->nmods - 1]);
	}
	return 0;
}

/* Whether a library the program needs walks its caller's stack (imports
 * backtrace or _Unwind_Backtrace: libasan's error reports, libgfortran's
 * and libruby's backtraces): its frames then need original return
 * addresses as the executable's own walks do (lazy_wants_original_returns).
 * Found before the loader maps them, since the first copies are made as
 * it runs. RETICLE_ORIGINAL_RETURNS decides alone when set. */
static bool libraries_walk_stack(struct proc *p, const char *exe, const rtl_binary *bin)
{
	const char *force = getenv("RETICLE_ORIGINAL_RETURNS");
	if ((force && *force) || !rtl_binary_interp(bin))
		return false;
	size_t n;
	const char *const *names = lazy_stack_walkers(&n);
	char *library_path = os_environ_get(p->pid, "LD_LIBRARY_PATH");
	bool walks = elf_needed_imports_any(bin, exe, library_path, names, n);
	free(library_path);
	if (walks)
		rtl_debug("%s: a library it needs walks the stack: original return addresses", exe);
	return walks;
}

int proc_setup_image(struct proc *p, pid_t tid)
{
	char exe[PATH_MAX];
	rtl_binary *bin;
	int err = proc_exe(p, exe, &bin);
	if (err)
		return err;
	p->original_returns = lazy_wants_original_returns(bin);
	p->original_returns_soft = !p->original_returns && libraries_walk_stack(p, exe, bin);
	p->original_returns |= p->original_returns_soft;
	if (p->attached) {   /* a program exec'd while attached: no stack may hold a code-cache address at the detach */
		p->original_returns = true;
		p->original_returns_soft = false;
	}
	if ((err = proc_add_main_modules(p, tid, exe, bin)))
		return err;
	return timers_setup_image(p, tid);
}

/* The child of a fork has a copy of the parent's memory, windows included,
 * but they are still backed by the parent's memfd: give the child its own
 * copy (counters zeroed) so that the two profiles stay apart. */
struct proc *proc_fork(struct proc *parent, pid_t child)
{
	struct proc *p = proc_new(parent->s, child);
	if (!p)
		return NULL;
	if (!patch_proc_fork(parent, p))
		goto fail;
	shm_free(&p->shm);
	if (shm_clone(&parent->shm, &p->shm))
		goto fail;
	span_proc_free(p);
	span_proc_start(p, parent->span.state, false);
	p->gadget = parent->gadget;
	p->r_debug = parent->r_debug;
	p->r_brk = parent->r_brk;
	p->command = parent->command ? strdup(parent->command) : NULL;
	p->multithreaded = parent->multithreaded;
	p->register_frame = parent->register_frame;
	p->unwinder_relocated = parent->unwinder_relocated;
	p->tls_ready = parent->tls_ready;
	p->unwind_lock = parent->unwind_lock;
	p->unwind_off = parent->unwind_off;
	p->original_returns = parent->original_returns;
	p->original_returns_soft = parent->original_returns_soft;
	p->warm_started = parent->warm_started;
	/* the child has the parent's patched text: detaching it undoes the same */
	p->attached = parent->attached;
	if (parent->nundo) {
		if (!(p->undo = calloc(parent->nundo, sizeof(*p->undo))))
			goto fail;
		p->capundo = parent->nundo;
		for (size_t i = 0; i < parent->nundo; i++) {
			const struct undo_rec *u = &parent->undo[i];
			if (!(p->undo[i].old = rtl_dup_array(u->old, u->len, 1)))
				goto fail;
			p->undo[i].addr = u->addr;
			p->undo[i].len = u->len;
			p->nundo++;
		}
	}
	if (parent->nunw_objects) {
		if (!(p->unw_objects = rtl_dup_array(parent->unw_objects, parent->nunw_objects, sizeof(uint64_t))))
			goto fail;
		p->nunw_objects = p->capunw_objects = parent->nunw_objects;
	}
	p->blocks = rtl_dup_array(parent->blocks, parent->nblocks, sizeof(*p->blocks));
	p->calls = rtl_dup_array(parent->calls, parent->ncalls, sizeof(*p->calls));
	p->points = rtl_dup_array(parent->points, parent->npoints, sizeof(*p->points));
	p->mods = calloc(parent->nmods ? parent->nmods : 1, sizeof(*p->mods));
	if (!p->blocks || !p->calls || !p->points || !p->mods)
		goto fail;
	p->npoints = p->cappoints = parent->npoints;
	arcs_refresh(p);
	p->nblocks = parent->nblocks;
	p->ncalls = parent->ncalls;
	/* dup_array keeps room for one element at least */
	p->capblocks = p->nblocks ? p->nblocks : 1;
	p->capcalls = p->ncalls ? p->ncalls : 1;
	for (size_t i = 0; i < parent->nmods; i++) {
		const struct module *pm = &parent->mods[i];
		struct module *m = &p->mods[p->nmods++];
		size_t n = rtl_binary_function_count(pm->bin);
		*m = *pm;
		m->unw = NULL;   /* reloaded when needed */
		m->dcache = m->ccache = NULL;   /* the parent's; the child decodes anew */
		m->foreign = x86_foreign_cache_new(n);
		m->path = strdup(pm->path);
		m->fs = rtl_dup_array(pm->fs, n, sizeof(*m->fs));
		m->warm = rtl_dup_array(pm->warm, pm->nwarm, sizeof(*m->warm));
		if (!m->path || !m->fs || !m->warm)
			goto fail;
		for (size_t k = 0; k < n; k++) {
			struct func_state *f = &m->fs[k];
			f->sp_rows = f->nsp_rows ? rtl_dup_array(f->sp_rows, f->nsp_rows, sizeof(*f->sp_rows)) : NULL;
			if (!f->sp_rows)
				f->nsp_rows = 0;
			if (f->twin_to && !(f->twin_to = f->nmap ? rtl_dup_array(f->twin_to, f->nmap, 8) : NULL))
				f->twin_start = 0;   /* the child's copies go on without a map of their twins */
			if (!f->nmap)
				continue;
			uint64_t *from = rtl_dup_array(f->map_from, f->nmap, 8), *to = rtl_dup_array(f->map_to, f->nmap, 8);
			if (!from || !to) {
				free(from);
				free(to);
				from = to = NULL;
				f->nmap = 0;
			}
			f->map_from = from;
			f->map_to = to;
		}
	}
	sweep_fork(parent, p);   /* before its windows replace the parent's in it */
	for (size_t i = 0; i < p->shm.nwins; i++)
		if (proc_map_window(p, child, &p->shm.wins[i], true))
			goto fail;
	sweep_fork_frames(p);
	patch_fork_unrevert(p);
	return p;
fail:
	proc_free(p);
	return NULL;
}
