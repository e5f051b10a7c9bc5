/* Attaching to a process that is already running, and leaving it as it was
 * (Paradyn's and Caliper's attach).
 *
 * Setting up: every thread is stopped; the modules come from the auxiliary
 * vector and the loader's list, and are armed from the text as the process
 * has it. The process runs with original return addresses (lazy.c), so
 * that no stack ever holds an address in the code cache: detaching then
 * only has to put back what reticle wrote and move the threads that are
 * in copies to the same instruction of the original code.
 *
 * Threads were anywhere when reticle came, also inside functions' original
 * code, which later patches overwrite (entry jumps, and with original
 * returns a jump at each return point). A frame resumes exactly at its
 * return point, where such a jump leads into the copy; but a thread's own
 * pc may be anywhere in a function's body, and a loop there could run into
 * the middle of a patch. So, as DynamoRIO and Pin take threads over:
 * - the function each thread is in is relocated at once, and the thread
 *   moved to the same instruction in the copy (a system call it will
 *   restart, to the copy's);
 * - every function a stack word points into (its frames resume at return
 *   points) is relocated before the threads run on: the jumps at its
 *   return points are written while no thread runs its body, and a frame
 *   returning there goes on in the copy; functions no stack holds are
 *   entered only through their armed entries. So no thread ever runs the
 *   body of a function while reticle writes into it;
 * - a function whose first 5 bytes hold a return address (a frame would
 *   resume inside the entry jump) is left unarmed.
 *
 * Detaching: the text and data words are restored from the undo log
 * (proc_patch_write), the copies' unwind information deregistered, and the
 * windows unmapped, unless a thread could not leave the code cache or a
 * word of a stack still points where a frame may resume in it: then they
 * stay mapped, inert, and the caller reports it. */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <reticle/error.h>
#include "engine/engine.h"
#include "isa/x86_64/cfg.h"
#include "isa/x86_64/relocate.h"
#include "os/linux/os.h"
#include "patch/patch.h"
#include "util/array.h"
#include "util/log.h"

enum { PATCH_LEN = 5, STACK_SCAN = 1 << 20, STEP_MAX = 20000 };

static const char entered[] = "a thread was inside its first bytes when reticle attached";

/* The aligned words of thread TID's stack from its sp up, as far as the
 * mapping that holds sp goes (at most STACK_SCAN bytes), in a buffer to
 * free, their number in *N, the address of the first in *AT (when given);
 * NULL when it cannot be read. */
static uint64_t *read_stack(struct proc *p, pid_t tid, size_t *n, uint64_t *at)
{
	char line[4096 + 128];
	unsigned long long lo, hi;
	uint64_t sp;
	if (os_get_sp(tid, &sp) || os_map_line(p->pid, sp & ~7ull, line, sizeof(line)) ||
	    sscanf(line, "%llx-%llx", &lo, &hi) != 2)
		return NULL;
	sp &= ~7ull;
	size_t len = hi - sp > STACK_SCAN ? STACK_SCAN : hi - sp;
	uint64_t *w = malloc(len ? len : 8);
	if (w && os_mem_read(p->mem, sp, w, len)) {
		free(w);
		return NULL;
	}
	*n = len / 8;
	if (at)
		*at = sp;
	return w;
}

/* Calls FN for every word read_stack gives. */
static void scan_stack(struct proc *p, pid_t tid, void (*fn)(struct proc *, uint64_t, void *), void *ctx)
{
	size_t n;
	uint64_t *w = read_stack(p, tid, &n, NULL);
	for (size_t i = 0; w && i < n; i++)
		fn(p, w[i], ctx);
	free(w);
}

/* A word on a thread's stack, maybe a return address: a function whose
 * entry patch would cover it is left unarmed. */
static void note_return(struct proc *p, uint64_t addr, void *ctx)
{
	(void)ctx;
	struct module *m;
	const rtl_function *f = proc_function_at(p, addr, &m);
	if (!f)
		return;
	struct func_state *fs = &m->fs[f - rtl_binary_function(m->bin, 0)];
	uint64_t entry = f->addr + m->bias;
	if (addr > entry && addr < entry + PATCH_LEN && fs->status == FS_ARMED &&
	    !proc_patch_write(p, entry, &fs->orig, 1)) {
		fs->status = FS_SKIPPED;
		fs->reason = entered;
		rtl_debug("%s: %s left alone: %s", m->path, f->name ? f->name : "?", entered);
	}
}

/* A word on a thread's stack that lies in an armed function: where a frame
 * may resume. */
static void note_resume(struct proc *p, uint64_t addr, void *ctx)
{
	(void)ctx;
	struct module *m;
	const rtl_function *f = proc_function_at(p, addr, &m);
	if (f && m->fs[f - rtl_binary_function(m->bin, 0)].status == FS_ARMED &&
	    !rtl_grow(&p->resume_words, &p->capresume_words, p->nresume_words + 1, sizeof(uint64_t)))
		p->resume_words[p->nresume_words++] = addr;
}

/* Every function a frame may resume in is relocated now, while every
 * thread is stopped: its return-point jumps are written while no thread
 * runs its body, and they cover no place a frame resumes at
 * (patch_returns reads resume_words). A frame resuming where no jump
 * starts (a call that pushes a code-cache address in the copy, so has no
 * return point) gets an int3 there that leads into the copy. So no thread
 * ever runs the body of a relocated function. */
static int relocate_frames(struct proc *p)
{
	if (rtl_radix_sort_u64(p->resume_words, p->nresume_words, sizeof(uint64_t), 0))
		return -ENOMEM;
	for (size_t i = 0; i < p->nresume_words; i++) {
		uint64_t at = p->resume_words[i];
		struct module *m;
		const rtl_function *f = proc_function_at(p, at, &m);
		size_t k = f ? (size_t)(f - rtl_binary_function(m->bin, 0)) : 0;
		if (!f)
			continue;
		struct func_state *fs = &m->fs[k];
		if (fs->status == FS_ARMED)
			lazy_instrument_now(p, m, k, NULL);
		uint64_t to = fs->status == FS_DONE ? x86_map_lookup(fs->map_from, fs->map_to, fs->nmap, at) : 0;
		uint8_t now, file;
		if (to && !os_mem_read(p->mem, at, &now, 1) && !rtl_binary_read(m->bin, at - m->bias, &file, 1) &&
		    now == file && !rtl_binary_has_textrel(m->bin) && lazy_return_trap(p, at, to))
			rtl_warn("pid %d: a frame resumes in the original code of %s", (int)p->pid,
				 f->name ? f->name : "?");
	}
	return 0;
}

/* The copy's own 'syscall' for original instruction AT of FS's function:
 * the instruction's label, or its bytes at the end of the label's code
 * (counter code first). 0 if not found. */
static uint64_t copy_syscall(struct proc *p, const struct func_state *fs, uint64_t at)
{
	uint64_t to = x86_map_lookup(fs->map_from, fs->map_to, fs->nmap, at);
	uint64_t next = x86_map_lookup(fs->map_from, fs->map_to, fs->nmap, at + 2);
	uint8_t b[2];
	if (to && !os_mem_read(p->mem, to, b, 2) && b[0] == 0x0f && b[1] == 0x05)
		return to;
	if (next && next > to && !os_mem_read(p->mem, next - 2, b, 2) && b[0] == 0x0f && b[1] == 0x05)
		return next - 2;
	return 0;
}

/* Thread T, stopped in a function's original code, continues in its copy
 * (made now) at the same instruction. */
static void take_over(struct proc *p, struct thread *t)
{
	uint64_t pc;
	if (os_get_pc(t->tid, &pc))
		return;
	bool restart = os_syscall_restarts(t->tid);
	uint64_t at = restart ? pc - 2 : pc;   /* where it resumes */
	struct module *m;
	const rtl_function *f = proc_function_at(p, at, &m);
	if (!f)
		return;   /* a PLT stub, code of no function: never patched */
	size_t k = (size_t)(f - rtl_binary_function(m->bin, 0));
	struct func_state *fs = &m->fs[k];
	if (fs->status == FS_ARMED && at > f->addr + m->bias && at < f->addr + m->bias + PATCH_LEN &&
	    !proc_patch_write(p, f->addr + m->bias, &fs->orig, 1)) {
		fs->status = FS_SKIPPED;   /* not relocatable: keep its entry whole */
		fs->reason = entered;
	}
	if (fs->status == FS_ARMED)
		lazy_instrument_now(p, m, k, NULL);
	if (fs->status != FS_DONE)
		return;   /* not relocated: its original code stays whole */
	uint64_t to = restart ? copy_syscall(p, fs, at) : x86_map_lookup(fs->map_from, fs->map_to, fs->nmap, at);
	if (to && !os_set_pc(t->tid, to + (restart ? 2 : 0)))
		rtl_debug("tid %d: from %#llx (%s) into its copy at %#llx", (int)t->tid, (unsigned long long)pc,
			  f->name ? f->name : "?", (unsigned long long)to);
	else
		rtl_warn("tid %d: left in the original code of %s (%#llx): a patch there may catch it",
			 (int)t->tid, f->name ? f->name : "?", (unsigned long long)pc);
}

int attach_setup_image(struct proc *p, pid_t tid)
{
	char exe[PATH_MAX];
	rtl_binary *bin;
	int err = proc_exe(p, exe, &bin);
	if (err)
		return err;
	p->attached = true;
	p->original_returns = true;
	p->warm_started = true;   /* past its entry point long ago: batches at once (warm_attach) */
	if (p->nthreads > 1)
		patch_go_multithreaded(p);
	if ((err = proc_add_main_modules(p, tid, exe, bin)))
		return err;
	if (p->r_debug) {
		dl_scan(p, tid);
		dl_arm_r_brk(p);
	}
	/* timers: every thread gets an area (its %gs base kept to put back) */
	for (size_t i = 0; i < p->nthreads; i++)
		os_get_area_base(p->threads[i].tid, &p->threads[i].gs_orig);
	if ((err = timers_setup_image(p, tid)))
		return err;
	for (size_t i = 0; i < p->nthreads; i++)
		timers_new_thread(p, p->threads[i].tid);
	for (size_t i = 0; i < p->nthreads; i++)
		scan_stack(p, p->threads[i].tid, note_return, NULL);
	for (size_t i = 0; i < p->nthreads; i++)
		scan_stack(p, p->threads[i].tid, note_resume, NULL);
	if ((err = relocate_frames(p)))
		return err;
	for (size_t i = 0; i < p->nthreads; i++)
		take_over(p, &p->threads[i]);
	open_frames_attached(p);   /* the functions the threads are in are timed from now */
	return 0;
}

bool copy_settle(struct proc *p, struct thread *t, uint64_t *orig, bool *own, bool *restart)
{
	for (int step = 0; step < STEP_MAX; step++) {
		uint64_t pc;
		int err = os_get_pc(t->tid, &pc);
		if (err) {
			rtl_debug("tid %d: its pc unreadable (%d) after %d steps", (int)t->tid, err, step);
			return false;
		}
		*orig = 0;
		*own = *restart = false;
		if (!proc_window_at(p, pc, 1))
			return true;
		/* in a system call to restart, the kernel moves pc back to it */
		*restart = os_syscall_restarts(t->tid);
		if (copy_original(p, *restart ? pc - 2 : pc, orig, own))
			return true;
		uint8_t insn[2];
		if (!*restart && p->patch && patch_call_trap_at(p, pc)) {   /* an RTL_PRIM_CALL int3: not stepped into */
			if (os_set_pc(t->tid, pc + 1))
				return false;
			continue;
		}
		if (*restart || os_mem_read(p->mem, pc, insn, 2) || (insn[0] == 0x0f && insn[1] == 0x05)) {
			char where[256];
			proc_describe_pc(p, pc, where, sizeof(where));
			rtl_debug("tid %d cannot leave snippet code at %#llx (%s)%s after %d steps", (int)t->tid,
				  (unsigned long long)pc, where, *restart ? ", in a system call" : "", step);
			return false;
		}
		int sig;
		if ((err = os_singlestep(t->tid, &sig))) {
			rtl_debug("tid %d: a step failed (%d) after %d steps", (int)t->tid, err, step);
			return false;
		}
		if (sig && !t->pending_sig)
			t->pending_sig = sig;
	}
	uint64_t pc = 0;
	char where[256] = "";
	if (!os_get_pc(t->tid, &pc))
		proc_describe_pc(p, pc, where, sizeof(where));
	uint64_t gs = 0;
	uint8_t code[48];
	char hex[3 * sizeof(code) + 1] = "";
	os_get_area_base(t->tid, &gs);
	if (!os_mem_read(p->mem, pc - 16, code, sizeof(code)))
		for (size_t i = 0; i < sizeof(code); i++)
			sprintf(hex + 3 * i, "%02x ", code[i]);
	rtl_debug("tid %d still in snippet code after %d steps, at %#llx (%s), gs %#llx, code from pc-16: %s",
		  (int)t->tid, STEP_MAX, (unsigned long long)pc, where, (unsigned long long)gs, hex);
	return false;
}

/* Moves thread T out of the code cache, to the original instruction it was
 * about to run. Whether it is out. */
static bool leave_copies(struct proc *p, struct thread *t)
{
	uint64_t orig;
	bool own, restart;
	bool settled = copy_settle(p, t, &orig, &own, &restart);
	struct os_stop st;
	uint64_t pc;
	if (!settled && os_get_pc(t->tid, &pc) && !os_task_ended(t->tid) &&
	    !os_wait_tid_until(t->tid, &st, os_now_ns() + 200000000ull)) {
		/* a thread cloned just before, whose first stop nobody had waited
		 * for: its registers could not be read (-ESRCH) */
		if (st.kind == OS_SIGNAL && st.sig != SIGSTOP && !t->pending_sig)
			t->pending_sig = st.sig;
		settled = copy_settle(p, t, &orig, &own, &restart);
		rtl_debug("tid %d: waited for its stop (kind %d)%s", (int)t->tid, (int)st.kind,
			  settled ? ", then left the code cache" : "");
	}
	if (!settled) {
		/* one that ended while stepped (a thread exiting) is in no copy */
		bool gone = os_task_ended(t->tid);
		rtl_debug("tid %d: %s", (int)t->tid, gone ? "ended while it left the code cache"
							  : "cannot leave the code cache");
		return gone;
	}
	return !orig || !os_set_pc(t->tid, orig + (restart ? 2 : 0));
}

static bool in_unloaded(const struct proc *p, uint64_t addr)
{
	for (size_t i = 0; i < p->nmods; i++)
		if (p->mods[i].unloaded && addr >= p->mods[i].lo && addr < p->mods[i].hi)
			return true;
	return false;
}

/* Whether W is where a copy's 'syscall' returns to, the copy of an
 * original 'syscall': the value the kernel leaves in rcx. Snippets that
 * save rcx below rsp (calltime's timer stops after a system call wrapper:
 * write, mmap, clone3, the futex calls) leave it in words that deeper
 * frames later hold unwritten (a large buffer); code that sets only rcx's
 * low byte afterwards (setcc) spills it too, with that byte changed. W is
 * the next instruction's label, or inside the syscall's own code when a
 * snippet follows it there (calltime's timer stop after the wrapper's
 * 'syscall': such words were seen at detaches of python3 http.server). */
static bool syscall_rcx(struct proc *p, uint64_t w)
{
	struct copy_map c;
	uint8_t copy[2], file[2];
	if (!copy_map_at(p, w - 2, &c) || !c.n || w - 2 < c.to[0])
		return false;
	uint64_t orig = c.from[copy_map_index(&c, w - 2)];   /* the instruction whose code holds w - 2 */
	return !os_mem_read(p->mem, w - 2, copy, 2) && copy[0] == 0x0f && copy[1] == 0x05 &&
	       !rtl_binary_read(c.m->bin, orig - c.m->bias, file, 2) && file[0] == 0x0f && file[1] == 0x05;
}

/* Whether some call instruction of the code cache may end at W (its bytes
 * decode as one): W may be its return address. */
static bool call_ends_at(struct proc *p, uint64_t w)
{
	uint8_t code[15];
	if (os_mem_read(p->mem, w - sizeof(code), code, sizeof(code)))
		return true;
	for (size_t len = 2; len <= sizeof(code); len++) {
		struct x86_insn in;
		if (!x86_decode(code + sizeof(code) - len, len, w - len, &in) && in.len == len &&
		    (in.kind == X86_CALL || in.kind == X86_ICALL))
			return true;
	}
	return false;
}

/* Whether word K of the N words S of a stack is the pc of a signal's
 * frame (the kernel's ucontext: gregs ..., rsp, rip, eflags, cs/gs/fs/ss):
 * sigreturn resumes there. */
static bool signal_frame_pc(const uint64_t *s, size_t n, size_t k)
{
	return k + 2 < n && (s[k + 1] & 2) && s[k + 1] < (1u << 22) && (s[k + 2] & 0xffff) == 0x33;
}

/* Whether ORIG, the instruction of copy C's function that one of C's
 * labels stands for, starts a block of the function (its analysis, made
 * again):
 * the first instruction, a branch's or a jump table's or a computed goto's
 * target, what follows a call or a jump. Only such a label can a program
 * hold as an address it will jump to or return to; a word that equals a
 * label inside a block (seen: __lll_lock_wait's 'je' after its 'cmp', in
 * a python3 http.server thread's stack under calltime, about one detach in
 * 30) is not one. True when the function cannot be analysed. */
static bool starts_block(struct proc *p, const struct copy_map *c, uint64_t orig)
{
	struct lazy_decoded d;
	lazy_analyze(p, c->m, c->k, &d);
	bool yes = true;
	for (size_t i = 0; !d.err && d.an && i < d.an->n; i++)   /* the analysis keeps no env: by address */
		if (d.an->insns[i].addr == orig) {
			yes = d.an->leader[i];
			break;
		}
	lazy_decoded_free(&d);
	return yes;
}

/* Whether W, past the label of a copy's last instruction, lies where no
 * code jumps to: inside one of the instructions of that label's code, or,
 * when the instruction is a return (copied as it is, after its
 * snippets), anywhere in the snippets before it. Decoded from the label
 * on, through jumps within that code (a snippet's loops), up to a call or
 * a jump elsewhere, after which the copy's tables may follow, which do not
 * decode. Stale words seen there at detaches of python3 http.server under
 * calltime (the second byte of a timer stop's 'mov rdx,[rsp-16]', an
 * instruction in the middle of one) kept the windows mapped. */
static bool in_last_snippets(struct proc *p, const struct copy_map *c, uint64_t w)
{
	enum { SPAN = 1024 };
	uint64_t last = c->to[c->n - 1], orig = c->from[c->n - 1];
	uint8_t code[SPAN + 16], file[16];
	struct x86_insn oi;
	size_t len = (size_t)(w - last) + 16;
	if (w <= last || w - last > SPAN || os_mem_read(p->mem, last, code, len))
		return false;
	bool ret = !rtl_binary_read(c->m->bin, orig - c->m->bias, file, sizeof(file)) &&
		   !x86_decode(file, sizeof(file), orig, &oi) && oi.kind == X86_RET;
	for (size_t off = 0; last + off < w;) {
		struct x86_insn in;
		if (x86_decode(code + off, len - off, last + off, &in) || !in.len)
			return false;
		if (last + off + in.len > w)
			return true;
		bool local = (in.kind == X86_JMP || in.kind == X86_JCC) && in.target >= last && in.target < last + SPAN;
		if (in.kind != X86_OTHER && !local)
			return false;   /* the return itself among them: W is past it */
		off += in.len;
	}
	return ret;
}

/* Whether W, a word of a window, may be used as code-cache address once
 * the windows are gone (WHY says how, when given): an instruction of a
 * copy that starts a block (a label a copied table or computed goto leads
 * to, the return address of a call that kept the copy's) unless it is a
 * system call's rcx, a copy's last instruction and
 * what follows it (its jump out, its copied jump tables: a base kept in a
 * register or spilled), the end of some call instruction, any place of a
 * copy without an instruction map. Not inside snippet code, nor inside an
 * instruction (rcx's low byte set by setcc), nor elsewhere in a window. */
static bool cache_word_used(struct proc *p, uint64_t w, const char **why)
{
	struct copy_map c;
	uint64_t orig;
	bool own;
	struct module *m;
	const char *dummy;
	if (!why)
		why = &dummy;
	if (!copy_map_at(p, w, &c)) {
		if (proc_copy_at(p, w, &m))
			return *why = "in a copy without a map", true;
		return call_ends_at(p, w) ? (*why = "the end of a call", true) : false;
	}
	if (syscall_rcx(p, w))
		return false;
	if (copy_original(p, w, &orig, &own)) {
		if (!own && !starts_block(p, &c, orig))
			return false;
		return *why = own ? "an instruction's own bytes in a copy" : "an instruction of a copy", true;
	}
	if (c.n && w >= c.to[c.n - 1]) {
		if (in_last_snippets(p, &c, w))
			return false;
		return *why = "the last instruction of a copy or after it", true;
	}
	return call_ends_at(p, w) ? (*why = "the end of a call", true) : false;
}

/* Counts the words of thread TID's stack (from its sp up) that point into
 * a window where a frame may resume: an instruction of a copy (a return
 * address of a call that kept the copy's, the label a copied jump table or
 * computed goto spilled), the end of a call, a signal frame's pc. A window
 * beside a non-PIE executable sits at small addresses, where a stack's
 * integers fall too (node kept its windows in 2 attaches of 3). Not
 * counted, said at verbose level 3: a system call's rcx (no frame resumes
 * after a 'syscall': no call precedes it, and a signal's frame gets the
 * original pc, sigpc.c), a word inside snippet code or inside an
 * instruction (rcx's low byte set by setcc). Each kept the windows mapped
 * at the detach: calltime on python3 http.server, every attach. */
static size_t count_cache_words(struct proc *p, pid_t tid)
{
	size_t count = 0, n;
	uint64_t sp;
	uint64_t *s = read_stack(p, tid, &n, &sp);
	if (!s)
		return 0;
	for (size_t k = 0; k < n; k++) {
		uint64_t w = s[k];
		if (!proc_window_at(p, w, 1))
			continue;
		char where[256];
		proc_describe_pc(p, w, where, sizeof(where));
		const char *why = "a signal frame's pc";
		bool resumes = signal_frame_pc(s, n, k) || cache_word_used(p, w, &why);
		rtl_debug("pid %d: a stack word points into the code cache, %s: %#llx at %#llx (%s)", (int)p->pid,
			  resumes ? why : "where no frame resumes", (unsigned long long)w,
			  (unsigned long long)(sp + 8 * k), where);
		count += resumes;
	}
	free(s);
	return count;
}

/* Counts thread TID's registers that hold a code-cache address it may use
 * (cache_word_used): a callee-saved register holding a copied table's base
 * across a call, say. */
static size_t count_cache_regs(struct proc *p, pid_t tid)
{
	const char *names[OS_NREGS];
	uint64_t v[OS_NREGS];
	size_t count = 0;
	if (os_get_named_regs(tid, names, v))
		return 0;
	for (size_t i = 0; i < OS_NREGS; i++) {
		if (!strcmp(names[i], "rip") || !strcmp(names[i], "rsp") || !proc_window_at(p, v[i], 1))
			continue;
		char where[256];
		proc_describe_pc(p, v[i], where, sizeof(where));
		bool used = cache_word_used(p, v[i], NULL);
		rtl_debug("tid %d: %s points into the code cache%s: %#llx (%s)", (int)tid, names[i],
			  used ? "" : ", where no frame resumes", (unsigned long long)v[i], where);
		count += used;
	}
	return count;
}

/* Whether ADDR lies in the function whose copy C is. */
static bool in_function_of(struct proc *p, uint64_t addr, const struct copy_map *c)
{
	struct module *m;
	const rtl_function *f = proc_function_at(p, addr, &m);
	return f && m == c->m && (size_t)(f - rtl_binary_function(m->bin, 0)) == c->k;
}

/* Whether thread TID, at PC, is in the function whose copy C is, or has a
 * frame of it (a return address into it on its stack: the process runs
 * with original return addresses). */
static bool runs_function_of(struct proc *p, pid_t tid, uint64_t pc, const struct copy_map *c)
{
	if (in_function_of(p, pc, c))
		return true;
	size_t n;
	uint64_t *s = read_stack(p, tid, &n, NULL);
	bool found = false;
	for (size_t k = 0; s && k < n && !found; k++)
		found = in_function_of(p, s[k], c) && call_ends_at(p, s[k]);
	free(s);
	return found;
}

/* Thread TID, out of the code cache: a register that holds a label of a
 * copy (the target a copied jump table or computed goto gave it, not yet
 * jumped to: python3.11's dispatch, 'mov rax,[T'+rI*8]' then 'jmp rax')
 * gets the original instruction's address, the value the original code
 * would have loaded (or a stale value, as harmless there). Kept, the
 * original jump went to the unmapped copy after the detach (python3 with
 * four threads: SIGSEGV about one detach in 20), or, counted, kept the
 * windows mapped. Only a label of a function the thread is in or has a
 * frame of (a callee-saved register across a call): a register is as
 * likely an integer that equals an address of the code cache (a window
 * beside a non-PIE executable lies at a few MiB, a size or a count), which
 * must not change; a label of another function is counted instead, and
 * keeps the windows. A system call's rcx is left: no code uses it; so is
 * a label inside a block, no place code jumps to (cache_word_used). */
static void regs_to_original(struct proc *p, pid_t tid)
{
	const char *names[OS_NREGS];
	uint64_t v[OS_NREGS], pc;
	if (os_get_pc(tid, &pc) || proc_window_at(p, pc, 1) || os_get_named_regs(tid, names, v))
		return;
	for (size_t i = 0; i < OS_NREGS; i++) {
		uint64_t orig;
		bool own;
		struct copy_map c;
		if (!strcmp(names[i], "rip") || !strcmp(names[i], "rsp") || !proc_window_at(p, v[i], 1) ||
		    !copy_map_at(p, v[i], &c) || !runs_function_of(p, tid, pc, &c) ||
		    !copy_original(p, v[i], &orig, &own) || own || syscall_rcx(p, v[i]) || !starts_block(p, &c, orig))
			continue;
		if (!os_set_named_reg(tid, names[i], orig))
			rtl_debug("tid %d: %s from %#llx in the copy to %#llx", (int)tid, names[i],
				  (unsigned long long)v[i], (unsigned long long)orig);
	}
}

/* munmap in P's stopped thread TID, whose own pc lends the 'syscall'
 * (every thread is stopped). */
static int unmap(struct proc *p, pid_t tid, uint64_t addr, uint64_t len)
{
	const uint64_t args[6] = { addr, len };
	long ret = 0;
	int sig = 0;
	int err = os_inferior_syscall(tid, p->mem, 0, SYS_munmap, args, &ret, &sig);
	struct thread *t = proc_thread(p, tid);
	if (sig && t && !t->pending_sig)
		t->pending_sig = sig;
	return err ? err : ret ? -EFAULT : 0;
}

void attach_leave(struct proc *p)
{
	p->stuck = 0;
	for (size_t i = 0; i < p->nthreads; i++)
		if (!leave_copies(p, &p->threads[i]))
			p->stuck++;
	p->left = true;
}

/* Detaches P's threads (held stopped), each with the signal it met: the
 * first error, or 0. */
static int detach_threads(struct proc *p)
{
	int first_err = 0;
	for (size_t i = 0; i < p->nthreads; i++) {
		struct thread *t = &p->threads[i];
		int e = os_detach_sig(t->tid, t->group_stopped ? 0 : t->pending_sig);
		if (e && e != -ESRCH && !first_err)
			first_err = e;
	}
	return first_err;
}

int attach_detach(struct proc *p, size_t *kept)
{
	size_t words = 0;
	pid_t any = 0;
	*kept = 0;
	if (!p->left)
		attach_leave(p);
	size_t stuck = p->stuck;
	/* the thread for the system calls that unmap: not one stopped inside
	 * an event (a clone's: an inferior call there reads the event's end
	 * as its result, session.c's plain_stopped) */
	for (size_t i = 0; i < p->nthreads && !any; i++) {
		uint64_t pc;
		if (!os_get_pc(p->threads[i].tid, &pc) && !proc_window_at(p, pc, 1) &&
		    !session_in_event(p->s, p->threads[i].tid))
			any = p->threads[i].tid;
	}
	/* newest first: the oldest bytes of a place written twice win */
	size_t failed = 0;
	for (size_t i = p->nundo; i-- > 0;) {
		const struct undo_rec *u = &p->undo[i];
		if (!in_unloaded(p, u->addr) && os_mem_write(p->mem, u->addr, u->old, u->len))
			failed++;
	}
	if (failed)
		rtl_warn("pid %d: %zu patches could not be taken back", (int)p->pid, failed);
	size_t regs = 0;
	for (size_t i = 0; i < p->nthreads; i++) {
		regs_to_original(p, p->threads[i].tid);
		words += count_cache_words(p, p->threads[i].tid);
		regs += count_cache_regs(p, p->threads[i].tid);
	}
	words += regs;
	int err = 0;
	if (!stuck && !words && any && (err = unwind_detach(p, any)))
		rtl_debug("pid %d: unwind information not deregistered (%d)", (int)p->pid, err);
	/* a thread left in a copy still runs its timer code on its area */
	for (size_t i = 0; p->areas.addr && !stuck && !words && i < p->nthreads; i++)
		os_set_area_base(p->threads[i].tid, p->threads[i].gs_orig);
	if (!stuck && !words && any && !err && p->areas.addr)
		err = unmap(p, any, p->areas.addr, (uint64_t)TA_COUNT * TA_SIZE);
	for (size_t i = p->shm.nwins; !stuck && !words && any && !err && i-- > 0;)
		err = unmap(p, any, p->shm.wins[i].addr, p->shm.wins[i].code_cap + p->shm.wins[i].ctr_cap);
	*kept = stuck + words;
	if (*kept || err)
		rtl_warn("pid %d: the code cache stays mapped, unused from now on (%zu thread%s inside it, "
			   "%zu stack word%s and %zu register%s pointing into it%s)",
			(int)p->pid, stuck, stuck == 1 ? "" : "s", words - regs, words - regs == 1 ? "" : "s",
			regs, regs == 1 ? "" : "s", err ? ", or it could not be released" : "");
	int first_err = detach_threads(p);
	return failed ? -EIO : first_err;
}

/* ---- letting go of a launched process (a daemon the program left) ---- */

bool release_possible(const struct proc *p, const char **why)
{
	if (p->mt || p->bbv)
		return *why = "its copies trap into reticle when a trace buffer fills or an interval ends", false;
	if (p->original_returns)
		return *why = "its runtime must see original addresses in its signal handlers", false;
	return true;
}

/* The int3 reticle wrote at AT (a return point, an entry whose jump did not
 * fit) gets its original byte back from the binary. */
static int restore_from_file(struct proc *p, uint64_t at)
{
	struct module *m = proc_module_at(p, at);
	uint8_t byte, now;
	if (!m || rtl_binary_has_textrel(m->bin) || rtl_binary_read(m->bin, at - m->bias, &byte, 1))
		return -ENOENT;
	if (os_mem_read(p->mem, at, &now, 1) || now != 0xcc)
		return 0;
	return os_mem_write(p->mem, at, &byte, 1);
}

int release_launched(struct proc *p)
{
	size_t failed = 0;
	for (size_t i = 0; i < p->nmods; i++) {
		struct module *m = &p->mods[i];
		size_t n = m->fs ? rtl_binary_function_count(m->bin) : 0;
		for (size_t k = 0; !m->unloaded && k < n; k++) {
			struct func_state *fs = &m->fs[k];
			if (fs->status != FS_ARMED && fs->status != FS_NOTIFY && fs->status != FS_HOOK &&
			    fs->status != FS_BUSY)
				continue;
			uint64_t at = rtl_binary_function(m->bin, k)->addr + m->bias;
			uint8_t now;
			if (!os_mem_read(p->mem, at, &now, 1) && now == 0xcc && os_mem_write(p->mem, at, &fs->orig, 1))
				failed++;
		}
	}
	for (size_t i = 0; i < p->patch->nret_traps; i++)
		failed += restore_from_file(p, p->patch->ret_traps[i].at) != 0;
	failed += patch_release_probe_traps(p);
	patch_release_move_traps(p);
	int first_err = detach_threads(p);
	if (failed)
		rtl_warn("pid %d: %zu breakpoints could not be taken back: it may stop on a SIGTRAP", (int)p->pid,
			 failed);
	return failed ? -EIO : first_err;
}
