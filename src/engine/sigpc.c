/* Signal handlers that read the interrupted PC. In a process that runs with
 * original return addresses (Go, node, backtrace(): lazy.c) the program
 * also looks up the PC its signal handlers find in their ucontext: Go's
 * asynchronous preemption (SIGURG) and its nil-pointer panics (SIGSEGV) take
 * it for a return address, and a code-cache address is an "unknown pc", a
 * fatal error. Before such a signal is delivered to a thread in a copy, its
 * PC is moved to the original instruction when that is exact: a fault
 * stops at the faulting instruction's own bytes; an asynchronous signal
 * only at an instruction boundary of the copy (not inside counter code,
 * which may have moved rsp, nor inside the pushes of an original return
 * address: Go then tries again later). That instruction must be intact
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
static void move_to(struct proc *p, pid_t tid, const struct module *m, const struct func_state *fs,
		    size_t i, uint64_t pc, int sig)
{
	uint64_t at = fs->map_from[i];
	if ((lazy_has_return_trap(p, at) || (intact(p, m, fs, i) && !lazy_return_trap(p, at, fs->map_to[i]))) &&
	    !os_set_pc(tid, at))
		rtl_debug("tid %d: signal %d: pc %#llx in a copy moved to %#llx", (int)tid, sig,
			  (unsigned long long)pc, (unsigned long long)fs->map_from[i]);
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
	if (i < fs->nmap && labels[i] == pc) {
		move_to(p, tid, m, fs, i, pc, sig);   /* an instruction boundary */
		return;
	}
	if (!stop->fault)
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
