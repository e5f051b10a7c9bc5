/* Predecoding and the dispatch loop. A block is the run of instructions
 * from an address up to the first one that may change the pc or calls the
 * core (flags from the generator), predecoded into an array of handler
 * calls; instrumentation hooks are extra entries in that array (the seed's
 * "calls inserted into the table of instruction function pointers"). */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <reticle/error.h>
#include "sim/machine.h"

static void hook_entry(struct rtl_sim_cpu *cpu, const struct rtl_sim_pinsn *p)
{
	struct rtl_sim *m = cpu->machine;
	const struct rtl_sim_pinsn *insn = p->h.insn;

	/* keep the pc exact for the hook: block bodies do not maintain it */
	if (p->id == RTL_SIM_BEFORE)
		cpu->pc = insn->addr;
	else if (!(insn->flags & RTL_SIM_F_BRANCH))
		cpu->pc = insn->addr + insn->len;
	else if (m->isa->delay_slots)
		cpu->pc = cpu->npc;   /* where the branch goes after its delay slot */
	((rtl_sim_hook_fn)p->h.hook)(m, (const struct rtl_sim_insn *)insn, p->h.data);
	RTL_SIM_NEXT(cpu, p);
}

/* Block terminators: back to the dispatch loop, setting the fall-through pc
 * unless the last instruction was a control transfer (it set the pc). */
static void block_end(struct rtl_sim_cpu *cpu, const struct rtl_sim_pinsn *p) { }
static void block_end_delayed(struct rtl_sim_cpu *cpu, const struct rtl_sim_pinsn *p)
{
	cpu->pc = cpu->npc;   /* set by the branch before its delay slot ran */
}

static void block_end_fallthrough(struct rtl_sim_cpu *cpu, const struct rtl_sim_pinsn *p)
{
	cpu->pc = p->addr;
}

static void undecodable(struct rtl_sim_cpu *cpu, const struct rtl_sim_pinsn *p)
{
	struct rtl_sim *m = cpu->machine;
	uint8_t b[8] = { 0 };
	memcpy(b, RTL_SIM_HOST(cpu, p->addr), m->isa->max_len);
	sim_stop(m, "undecodable instruction at 0x%llx (bytes %02x %02x %02x %02x)", (unsigned long long)p->addr,
		 b[0], b[1], b[2], b[3]);
	RTL_SIM_NEXT(cpu, p);
}

static void bad_delay_slot(struct rtl_sim_cpu *cpu, const struct rtl_sim_pinsn *p)
{
	sim_stop(cpu->machine, "control transfer or trap in a delay slot at 0x%llx", (unsigned long long)p->addr);
	RTL_SIM_NEXT(cpu, p);
}

static struct addr_hook *addr_hooks(struct rtl_sim *m, uint64_t addr)
{
	for (struct addr_hook *h = m->addr_hooks[(addr >> 1) % 1024]; h; h = h->next)
		if (h->addr == addr)
			return h;
	return NULL;
}

/* Appends hook entries for insn at position pos (0 before, 1 after). */
static unsigned add_hooks(struct rtl_sim *m, struct block *b, unsigned n, const struct rtl_sim_pinsn *insn,
			  int pos, int count_only)
{
	struct hook *lists[2] = { m->by_id ? m->by_id[insn->id] : NULL, NULL };
	unsigned k = 0;

	if (m->any_addr_hooks) {
		struct addr_hook *ah = addr_hooks(m, insn->addr);
		lists[1] = ah ? ah->hooks : NULL;
	}
	for (int l = 0; l < 2; l++)
		for (struct hook *h = lists[l]; h; h = h->next) {
			if (h->pos != pos)
				continue;
			if (!count_only) {
				struct rtl_sim_pinsn *e = &b->e[n + k];
				memset(e, 0, sizeof *e);
				e->fn = hook_entry;
				e->id = (uint16_t)pos;  /* RTL_SIM_BEFORE or RTL_SIM_AFTER */
				e->addr = insn->addr;
				e->h.hook = (void *)h->fn;
				e->h.data = h->user;
			}
			k++;
		}
	return k;
}

static struct block *build(struct rtl_sim *m, uint64_t pc)
{
	struct rtl_sim_pinsn insns[SIM_BLOCK_MAX];
	unsigned n = 0, total = 0;
	uint64_t a = pc;
	int branch = 0;

	while (n < SIM_BLOCK_MAX) {
		struct rtl_sim_pinsn *p = &insns[n++];
		memset(p, 0, sizeof *p);
		p->addr = a;
		if (a >= m->mem_size - 8 || m->isa->decode(m->mem + a, m->mem_size - a, p) < 0) {
			p->fn = undecodable;
			p->len = m->isa->min_len;
			p->flags = RTL_SIM_F_TRAP;
			break;
		}
		if (m->memhooks)
			p->fn = m->isa->traced[p->id];
		a += p->len;
		if ((p->flags & RTL_SIM_F_BRANCH) && m->isa->delay_slots && n < SIM_BLOCK_MAX) {
			/* the delay slot belongs to the branch's block */
			struct rtl_sim_pinsn *d = &insns[n];
			memset(d, 0, sizeof *d);
			d->addr = a;
			int ok = m->isa->decode(m->mem + a, m->mem_size - a, d) == 0;
			if (ok && m->memhooks)
				d->fn = m->isa->traced[d->id];
			if (!ok || (d->flags & (RTL_SIM_F_BRANCH | RTL_SIM_F_TRAP))) {
				/* stop when it is reached: undecodable, or a forbidden slot */
				d->fn = ok ? bad_delay_slot : undecodable;
				d->len = m->isa->min_len;
				d->flags = RTL_SIM_F_TRAP;
			}
			n++;
			a += d->len;
			branch = 2;
			break;
		}
		if (p->flags & (RTL_SIM_F_BRANCH | RTL_SIM_F_TRAP)) {
			branch = (p->flags & RTL_SIM_F_BRANCH) != 0;
			break;
		}
	}
	for (unsigned i = 0; i < n; i++)
		total += 1 + add_hooks(m, NULL, 0, &insns[i], 0, 1) + add_hooks(m, NULL, 0, &insns[i], 1, 1);
	struct block *b = calloc(1, sizeof *b + sizeof(struct rtl_sim_pinsn) * (total + 1));
	b->addr = pc;
	b->end = insns[n - 1].addr + insns[n - 1].len;
	b->ninsn = n;
	b->branch_end = branch;
	for (unsigned i = 0; i < n; i++) {
		unsigned k = add_hooks(m, b, b->n, &insns[i], 0, 0);
		for (unsigned j = 0; j < k; j++)
			b->e[b->n + j].h.insn = &b->e[b->n + k];
		b->n += k;
		b->e[b->n++] = insns[i];
		k = add_hooks(m, b, b->n, &insns[i], 1, 0);
		for (unsigned j = 0; j < k; j++)
			b->e[b->n + j].h.insn = &b->e[b->n - 1];
		b->n += k;
	}
	b->e[b->n].fn = branch == 2 ? block_end_delayed : branch ? block_end : block_end_fallthrough;
	b->e[b->n].addr = b->end;
	size_t h = (pc >> 1) & (m->hsize - 1);
	b->hnext = m->htab[h];
	m->htab[h] = b;
	return b;
}

static struct block *lookup(struct rtl_sim *m, uint64_t pc)
{
	struct block **slot = &m->bcache[(pc >> 1) & ((1 << 14) - 1)];
	struct block *b = *slot;

	if (b && b->addr == pc)
		return b;
	for (b = m->htab[(pc >> 1) & (m->hsize - 1)]; b; b = b->hnext)
		if (b->addr == pc)
			break;
	if (!b)
		b = build(m, pc);
	*slot = b;
	return b;
}

/* Guest memory faults: the reservation is inaccessible outside mapped
 * ranges, so a stray guest access raises SIGSEGV in the simulator; the
 * handler leaves the dispatch loop and the guest dies of SIGSEGV, as it
 * would under Linux. Faults elsewhere are the simulator's own. */
static __thread struct rtl_sim *running;
static __thread sigjmp_buf fault_jmp;
static __thread uint64_t fault_addr;

static void on_fault(int sig, siginfo_t *si, void *uc)
{
	struct rtl_sim *m = running;
	uint8_t *a = si->si_addr;

	if (m && a >= m->mem && a < m->mem + m->mem_size + SIM_MEM_SLACK) {
		fault_addr = (uint64_t)(a - m->mem);
		siglongjmp(fault_jmp, sig);
	}
	signal(sig, SIG_DFL);   /* not the guest's: crash as usual */
}

static void dispatch(struct rtl_sim *m)
{
	struct rtl_sim_cpu *cpu = m->cpu;
	struct block *b = NULL, *prev = NULL;

	if (!m->htab) {
		m->hsize = 1 << 16;
		m->htab = calloc(m->hsize, sizeof *m->htab);
	}
	for (;;) {
		while (!cpu->stop) {
			uint64_t pc = cpu->pc;
			if (prev && prev->succ && prev->succ->addr == pc)
				b = prev->succ;
			else {
				b = lookup(m, pc);
				if (prev)
					prev->succ = b;
			}
			m->icount += b->ninsn;
			b->execs++;
			b->e[0].fn(cpu, b->e);
			prev = b;
		}
		if (sim_thread_step(m))   /* new thread, switch, or the end */
			break;
		cpu = m->cpu;
		prev = NULL;
		if (m->interrupt_sig)   /* it came as the step cleared the new thread's stop */
			cpu->stop = 1;
	}
}

int sim_run(struct rtl_sim *m)
{
	struct rtl_sim_cpu *cpu = m->cpu;
	struct sigaction sa = { 0 }, old_segv, old_bus;
	int sig;

	sa.sa_sigaction = on_fault;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGSEGV, &sa, &old_segv);
	sigaction(SIGBUS, &sa, &old_bus);
	running = m;
	if ((sig = sigsetjmp(fault_jmp, 1)) != 0) {
		snprintf(m->msg, sizeof m->msg, "guest killed by SIGSEGV: bad access to 0x%llx in the block at 0x%llx",
			 (unsigned long long)fault_addr, (unsigned long long)cpu->pc);
		m->exit_status = 128 + SIGSEGV;
		m->exited = 1;
		cpu->stop = 1;
		goto out;
	}

	dispatch(m);
out:
	running = NULL;
	sigaction(SIGSEGV, &old_segv, NULL);
	sigaction(SIGBUS, &old_bus, NULL);
	if (m->interrupt_sig && !m->exited && !m->failed) {
		int sig = m->interrupt_sig;
		snprintf(m->msg, sizeof m->msg, "interrupted by %s after %llu instructions",
			 sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : sig == SIGHUP ? "SIGHUP" : "a signal",
			 (unsigned long long)m->icount);
		m->failed = 1;   /* stopped early: no exit status */
		return -EINTR;
	}
	return m->failed ? -RTL_ERR_UNSUPPORTED : 0;
}

/* From a signal handler: only async-signal-safe stores. The loop sees
 * the running thread's stop flag at the end of its block. */
void rtl_sim_interrupt(struct rtl_sim *m, int sig)
{
	struct rtl_sim_cpu *cpu = m->cpu;
	m->interrupt_sig = sig > 0 ? sig : SIGINT;
	if (cpu)
		cpu->stop = 1;
}

void rtl_sim_for_each_executed(struct rtl_sim *m, rtl_sim_count_fn fn, void *user)
{
	for (size_t i = 0; m->htab && i < m->hsize; i++)
		for (struct block *b = m->htab[i]; b; b = b->hnext) {
			if (!b->execs)
				continue;
			for (unsigned k = 0; k < b->n; k++)
				if (b->e[k].fn != hook_entry)
					fn(m, (const struct rtl_sim_insn *)&b->e[k], b->execs, user);
		}
}

void rtl_sim_mem_access(struct rtl_sim_cpu *cpu, uint64_t pc, uint64_t addr, unsigned size, int is_write)
{
	struct rtl_sim *m = cpu->machine;
	for (struct memhook *h = m->memhooks; h; h = h->next)
		h->fn(m, pc, addr, size, is_write, h->user);
}
