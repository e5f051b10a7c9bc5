/* Guest threads, cooperatively: one host thread runs one guest thread at a
 * time, and switches only at blocking system calls (futex wait, sched_yield,
 * a thread's exit). Each guest thread is a copy of the machine state (the
 * generated struct); memory and the block cache are shared. Busy-waiting
 * on another thread therefore never ends: glibc's locks block in futex. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "sim/machine.h"

#define CLONE_VM_ 0x100
#define CLONE_SETTLS_ 0x80000
#define CLONE_PARENT_SETTID_ 0x100000
#define CLONE_CHILD_CLEARTID_ 0x200000
#define CLONE_CHILD_SETTID_ 0x1000000

enum { T_RUNNABLE, T_WAITING, T_DONE };

struct thread {
	struct rtl_sim_cpu *cpu;
	int tid, state;
	uint64_t wait_addr, clear_tid;
	struct thread *next;
};

static struct thread *current(struct rtl_sim *m)
{
	if (!m->threads) {   /* the main thread, made on first need */
		struct thread *t = calloc(1, sizeof *t);
		if (!t)
			return NULL;
		t->cpu = m->cpu;
		t->tid = getpid();
		m->threads = m->cur = t;
		m->next_tid = t->tid + 1;
	}
	return m->cur;
}

int sim_thread_tid(struct rtl_sim *m)
{
	struct thread *t = current(m);
	return t ? t->tid : getpid();
}

static int set_reg(struct rtl_sim *m, struct rtl_sim_cpu *cpu, const char *spec, uint64_t v)
{
	unsigned size;
	struct rtl_sim_cpu *saved = m->cpu;
	m->cpu = cpu;
	uint64_t *r = spec && *spec ? sim_reg_ptr(m, spec, &size) : NULL;
	m->cpu = saved;
	if (!r)
		return -1;
	memcpy(r, &v, size);
	return 0;
}

/* clone with CLONE_VM: a new thread, made when the clone instruction has
 * completed (sim_thread_step), from a copy of the parent's state. */
int64_t sim_thread_clone(struct rtl_sim *m, uint64_t pc, const uint64_t *a)
{
	uint64_t flags = a[0];
	int word = m->isa->elf_class / 8;

	if (!current(m) || !*m->isa->syscall_return) {
		sim_stop(m, "unsupported system call clone (threads: the description names no syscall_return) at 0x%llx",
			 (unsigned long long)pc);
		return -ENOSYS;
	}
	int tid = m->next_tid++;
	m->pending.tid = tid;
	m->pending.flags = flags;
	m->pending.sp = a[1];
	m->pending.tls = a[3];
	m->pending.ctid = a[4];
	if (flags & CLONE_PARENT_SETTID_)
		memcpy(m->mem + (a[2] & (m->mem_size - 1)), &tid, word < 4 ? word : 4);
	m->cpu->stop = 1;   /* sim_thread_step makes the child after this block */
	return tid;
}

static void wake(struct rtl_sim *m, uint64_t addr, int64_t n, int64_t *woken)
{
	for (struct thread *t = m->threads; t && n > 0; t = t->next)
		if (t->state == T_WAITING && t->wait_addr == addr) {
			t->state = T_RUNNABLE;
			n--;
			(*woken)++;
		}
}

int64_t sim_thread_futex(struct rtl_sim *m, uint64_t pc, const uint64_t *a)
{
	int op = (int)a[1] & 0x7f;
	uint32_t cur;
	int64_t woken = 0;

	if (!current(m))
		return -ENOMEM;
	switch (op) {
	case 0: case 9:   /* FUTEX_WAIT, FUTEX_WAIT_BITSET */
		memcpy(&cur, m->mem + (a[0] & (m->mem_size - 1)), 4);
		if (cur != (uint32_t)a[2])
			return -EAGAIN;
		if (!m->threads->next)
			return -EDEADLK;   /* one thread: nobody could wake it */
		m->cur->state = T_WAITING;
		m->cur->wait_addr = a[0];
		m->switch_pending = 1;
		m->cpu->stop = 1;
		return 0;
	case 1: case 10:  /* FUTEX_WAKE, FUTEX_WAKE_BITSET */
		wake(m, a[0], (int64_t)(int)a[2], &woken);
		return woken;
	default:   /* requeue, wake-op, PI locks: not emulated, said so */
		sim_stop(m, "unsupported futex operation %d at 0x%llx", op, (unsigned long long)pc);
		return -ENOSYS;
	}
}

/* Whether TID is one of the program's threads (the main one is the pid). */
int sim_thread_is_ours(struct rtl_sim *m, int tid)
{
	if (!m->threads)
		return tid == getpid();
	for (struct thread *t = m->threads; t; t = t->next)
		if (t->tid == tid && t->state != T_DONE)
			return 1;
	return 0;
}

int64_t sim_thread_set_tid_address(struct rtl_sim *m, uint64_t addr)
{
	struct thread *t = current(m);
	if (t)
		t->clear_tid = addr;
	return sim_thread_tid(m);
}

/* exit of one thread: the process ends with its last thread. */
int sim_thread_exit(struct rtl_sim *m)
{
	struct thread *t = current(m);
	int64_t woken = 0;
	int alive = 0;

	if (!t)
		return 1;
	for (struct thread *u = m->threads; u; u = u->next)
		alive += u != t && u->state != T_DONE;
	if (!alive)
		return 1;
	if (t->clear_tid) {
		memset(m->mem + (t->clear_tid & (m->mem_size - 1)), 0, 4);
		wake(m, t->clear_tid, 1, &woken);
	}
	t->state = T_DONE;
	m->switch_pending = 1;
	m->cpu->stop = 1;
	return 0;
}

int64_t sim_thread_yield(struct rtl_sim *m)
{
	if (current(m) && m->threads->next) {
		m->switch_pending = 1;
		m->cpu->stop = 1;
	}
	return 0;
}

/* Between blocks, when a thread asked to stop: make a pending child, then
 * switch if asked. Returns 0 to go on, 1 when the simulation ends. */
int sim_thread_step(struct rtl_sim *m)
{
	if (m->exited || m->failed || m->interrupt_sig)
		return 1;
	if (m->pending.tid) {
		struct thread *t = calloc(1, sizeof *t);
		struct rtl_sim_cpu *c = malloc(m->isa->state_size);
		if (!t || !c) {
			sim_stop(m, "out of memory for a thread");
			return 1;
		}
		memcpy(c, m->cpu, m->isa->state_size);
		c->stop = 0;
		t->cpu = c;
		t->tid = m->pending.tid;
		if (m->pending.flags & CLONE_CHILD_CLEARTID_)
			t->clear_tid = m->pending.ctid;
		if (m->pending.flags & CLONE_CHILD_SETTID_)
			memcpy(m->mem + (m->pending.ctid & (m->mem_size - 1)), &t->tid, 4);
		set_reg(m, c, m->isa->syscall_return, 0);
		if (m->pending.sp)
			set_reg(m, c, m->isa->stack_pointer, m->pending.sp);
		if (m->pending.flags & CLONE_SETTLS_)
			set_reg(m, c, m->isa->tls_register, m->pending.tls);
		struct thread **tail = &m->threads;
		while (*tail)
			tail = &(*tail)->next;
		*tail = t;
		memset(&m->pending, 0, sizeof m->pending);
	}
	if (m->switch_pending) {
		struct thread *t = m->cur;
		m->switch_pending = 0;
		do
			t = t->next ? t->next : m->threads;
		while (t != m->cur && t->state != T_RUNNABLE);
		if (t->state != T_RUNNABLE) {
			sim_stop(m, "deadlock: every guest thread waits in futex");
			return 1;
		}
		m->cur = t;
		m->cpu = t->cpu;
	}
	m->cpu->stop = 0;
	return 0;
}

void sim_threads_free(struct rtl_sim *m)
{
	for (struct thread *t = m->threads, *n; t; t = n) {
		n = t->next;
		if (t->cpu != m->cpu)   /* rtl_sim_close frees the running one */
			free(t->cpu);
		free(t);
	}
}
