/* Signal handlers that read the interrupted PC. In a process that runs with
 * original return addresses (Go, node, backtrace(): lazy.c) the program
 * also looks up the PC its signal handlers find in their ucontext: Go's
 * asynchronous preemption (SIGURG) and its nil-pointer panics (SIGSEGV) take
 * it for a return address, and a code-cache address is an "unknown pc", a
 * fatal error. Before such a signal is delivered to a thread in a copy, its
 * PC is moved to the original instruction when that is exact: a fault
 * stops at the faulting instruction's own bytes; an asynchronous signal
 * at an instruction boundary of the copy, where it came or where steps
 * take it (step_to_boundary: counter code may have moved rsp, and the
 * pushes of an original return address are half done). That instruction must be intact
 * (not under an entry or return-point patch); it gets an int3 that sends
 * a thread coming back there (the handler's return, or Go's injected call
 * returning) to the copy, as a return point where no jump fits does. */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include "engine/engine.h"
#include "os/linux/os.h"
#include "util/array.h"
#include "util/log.h"

/* Whether instruction I of FS's function is in the process as in the file
 * (no patch of reticle's over it): a thread may resume there. */
static bool intact(struct proc *p, const struct module *m, const struct func_state *fs, size_t i)
{
	uint64_t a = fs->map_from[i];
	size_t len = i + 1 < fs->nmap ? (size_t)(fs->map_from[i + 1] - a) : 15;
	uint8_t mem[16], file[16];
	if (len > sizeof(mem))
		len = sizeof(mem);
	if (os_mem_read(p->mem, a, mem, len))
		return false;
	if (rtl_binary_has_textrel(m->bin) || rtl_binary_read(m->bin, a - m->bias, file, len))
		return false;
	return !memcmp(mem, file, len);
}

/* Moves TID's PC from PC, in FS's copy, to original instruction I, where
 * an int3 sends it back to the copy once the handler returns there (the
 * original code after it may be under patches). */
static bool move_to(struct proc *p, pid_t tid, const struct module *m, const struct func_state *fs,
		    size_t i, uint64_t pc, int sig)
{
	uint64_t at = fs->map_from[i];
	if (!(lazy_has_return_trap(p, at) || (intact(p, m, fs, i) && !lazy_return_trap(p, at, fs->map_to[i]))) ||
	    os_set_pc(tid, at))
		return false;
	rtl_debug("tid %d: signal %d: pc %#llx in a copy moved to %#llx", (int)tid, sig,
		  (unsigned long long)pc, (unsigned long long)fs->map_from[i]);
	return true;
}

enum { BOUNDARY_STEPS = 64 };

/* Steps TID on from PC (see step_to_boundary). */
static void step_on(struct proc *p, pid_t tid, uint64_t pc, int sig)
{
	for (int n = 0; n < BOUNDARY_STEPS; n++) {
		uint8_t insn[2];
		if (os_mem_read(p->mem, pc, insn, sizeof(insn)) || insn[0] == 0xcc ||
		    (insn[0] == 0x0f && insn[1] == 0x05))
			return;
		int other = 0;
		uint64_t sp;
		if (proc_singlestep(p, tid, &other) || other || os_get_pc(tid, &pc))
			return;   /* (a signal met on the way: held, the PC where the step left it) */
		if (insn[0] == 0x9c && !os_get_sp(tid, &sp)) {
			uint64_t flags;
			if (!os_mem_read(p->mem, sp, &flags, 8) && (flags & 0x100)) {
				flags &= ~(uint64_t)0x100;
				os_mem_write(p->mem, sp, &flags, 8);
			}
		}
		struct module *m;
		struct func_state *fs = proc_copy_at(p, pc, &m);
		if (!fs) {
			if (!proc_window_at(p, pc, 1))
				rtl_debug("tid %d: signal %d: stepped out of the copies to %#llx", (int)tid, sig,
					  (unsigned long long)pc);
			return;
		}
		const uint64_t *labels = func_state_labels(fs, pc);
		size_t i = rtl_lower_bound_u64(labels, fs->nmap, pc);
		if (i < fs->nmap && labels[i] == pc && move_to(p, tid, m, fs, i, pc, sig))
			return;
	}
}

/* An asynchronous signal that came inside a copy's own code (a timer's
 * clock read, a counter's flag saves: 28% of a calltime run's SIGPROF
 * samples, whose in-process backtrace() then stopped there), or at an
 * instruction whose original is under a patch (the first ones of a
 * function, under its entry's jump), is delivered once the thread has
 * stepped to an instruction boundary of a copy whose original it can be
 * moved to, or out of the copies (original code). At most BOUNDARY_STEPS
 * steps; never over a system call (it may block) or an int3 (reticle's,
 * to be served as a trap): the PC then stays where the steps left it, in
 * the copy. A pushfq stepped over has its trap flag cleared in what it
 * pushed (popped later, it would trap). The signal keeps its own
 * information (a SIGCHLD's child, a SIGURG's sender), which the kernel
 * replaces with reticle's when a signal is given from a step's stop. */
static void step_to_boundary(struct proc *p, pid_t tid, uint64_t pc, int sig)
{
	siginfo_t si;
	if (os_siginfo_get(tid, &si))
		return;
	step_on(p, tid, pc, sig);
	/* (a trap flag left in the handler's saved context came back with
	 * its sigreturn: Go's program then ran one step at a time) */
	os_clear_trap_flag(tid);
	os_siginfo_set(tid, &si);
}

void sigpc_to_original(struct proc *p, const struct os_stop *stop)
{
	pid_t tid = stop->tid;
	int sig = stop->sig;
	uint64_t pc, sp;
	struct func_state *fs;
	struct module *m;
	if (!p->original_returns || os_is_stop_signal(sig) || sig == SIGCONT || os_get_pc(tid, &pc) ||
	    !(fs = proc_copy_at(p, pc, &m)) || !os_catches_signal(tid, sig))
		return;
	/* map_to is in emission order: ascending; labels are where each
	 * instruction's code starts (its block's counter code first) */
	const uint64_t *labels = func_state_labels(fs, pc);
	size_t i = rtl_lower_bound_u64(labels, fs->nmap, pc);
	if (i < fs->nmap && labels[i] == pc && move_to(p, tid, m, fs, i, pc, sig))
		return;   /* an instruction boundary */
	if (!stop->fault) {
		step_to_boundary(p, tid, pc, sig);
		return;
	}
	if (i < fs->nmap && labels[i] == pc)
		return;
	if (!i) {
		/* in the code before the first instruction's (an entry timer's
		 * register saves below %rsp): a stack overflow found there, which
		 * OCaml turns into an exception when the PC is its own code. The
		 * handler sees the function's entry, whose jump leads back to the
		 * copy's start; any other fault there stays where it is */
		if (os_get_sp(tid, &sp) || stop->addr >= sp || sp - stop->addr > (1u << 20) || !fs->nmap ||
		    os_set_pc(tid, fs->map_from[0]))
			return;
		rtl_debug("tid %d: stack overflow in the entry code of a copy: pc %#llx moved to the entry %#llx",
			  (int)tid, (unsigned long long)pc, (unsigned long long)fs->map_from[0]);
		return;
	}
	/* a fault: PC is the faulting instruction's own bytes, past its
	 * label; when those are the 'jmp' of a call rewritten to push the
	 * original return address, the push is undone */
	static const uint8_t push_head[] = { 0x48, 0x8d, 0x64, 0x24, 0xf8, 0xc7, 0x04, 0x24 };
	uint8_t before[20];
	if (pc - 20 >= labels[i - 1] && !os_mem_read(p->mem, pc - 20, before, sizeof(before)) &&
	    !memcmp(before, push_head, sizeof(push_head)) && before[12] == 0xc7) {
		if ((!lazy_has_return_trap(p, fs->map_from[i - 1]) && !intact(p, m, fs, i - 1)) ||
		    os_get_sp(tid, &sp) || os_set_sp(tid, sp + 8))
			return;
	}
	move_to(p, tid, m, fs, i - 1, pc, sig);
}
