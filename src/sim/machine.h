/* Simulator core internals: one simulated process. Owned by api.c; the
 * loader (loader.c), Linux emulation (linux.c), dispatch loop (run.c) and
 * built-in tools (tools.c) share it. No ISA-specific code here. */
#ifndef RETICLE_SIM_MACHINE_H
#define RETICLE_SIM_MACHINE_H

#include <signal.h>
#include <stdio.h>
#include "util/log.h"
#include <reticle/sim.h>
#include "sim/isa.h"

#define SIM_MEM_BITS 32             /* guest memory reservation: 4 GiB */
#define SIM_MEM_SLACK 65536
#define SIM_STACK_TOP 0xbfff0000ull
#define SIM_STACK_SIZE (8ull << 20)
#define SIM_MMAP_BASE 0x40000000ull
#define SIM_MMAP_END 0xb0000000ull
#define SIM_BLOCK_MAX 128

struct hook { rtl_sim_hook_fn fn; void *user; int pos; struct hook *next; };
struct addr_hook { uint64_t addr; struct hook *hooks; struct addr_hook *next; };
/* DROP (may be NULL) frees USER when the simulator closes without a run:
 * the trailer would have, after its report. */
struct trailer { rtl_sim_trailer_fn fn; void (*drop)(void *user); void *user; struct trailer *next; };
struct memhook { rtl_sim_mem_fn fn; void *user; struct memhook *next; };

struct block {
	uint64_t addr, end;
	struct block *hnext;         /* hash chain */
	struct block *succ;          /* last successor seen: a one-entry cache */
	unsigned n, ninsn, branch_end;
	uint64_t execs;              /* times the block was entered (counted by the loop) */
	struct rtl_sim_pinsn e[];
};

/* Procedures are listed at the first iterator call; a procedure's blocks
 * are found the first time they are asked for. */
struct rtl_sim_proc { char *name; uint64_t addr, size; struct rtl_sim_block *blocks; unsigned nblocks; int analysed;
		      struct rtl_sim *sim; };
struct rtl_sim_block { uint64_t addr, last; unsigned ninsn; const struct rtl_sim_proc *proc; };

struct seg { uint64_t vaddr, memsz, filesz, off; int flags; };

struct rtl_sim {
	const struct rtl_sim_isa *isa;
	struct rtl_sim_cpu *cpu;
	uint8_t *mem;
	size_t mem_size;
	uint64_t entry, phdr, phnum, phent, brk_start, brk, mmap_next;
	struct seg *segs; int nsegs;
	char *path;
	int exit_status, exited;
	int forked_child;            /* a fork of the guest: trailers do not run */
	int ran;                     /* rtl_sim_run was called: its trailers freed their state */
	struct sim_memtrace *memtrace;   /* reticle sim -c memtrace (memtrace.h), NULL if none */
	char msg[256];
	int failed;
	volatile sig_atomic_t interrupt_sig;   /* rtl_sim_interrupt: stop at the next block, this signal */
	uint64_t sys_nr;             /* the guest's number of the system call running */
	uint64_t icount;
	/* blocks */
	struct block **htab; size_t hsize;
	struct block *bcache[1 << 14];
	/* instrumentation */
	struct hook **by_id;        /* per instruction id */
	struct addr_hook *addr_hooks[1024];
	int any_addr_hooks;
	struct trailer *trailers;
	struct memhook *memhooks;
	/* static structure for the iterators */
	struct rtl_sim_proc *procs; unsigned nprocs;
	int analysed;
	/* symbols from the ELF */
	struct sym { uint64_t addr, size; char *name; } *syms; unsigned nsyms;
	/* guest threads (threads.c): the running one's state is cpu */
	struct thread *threads, *cur;
	int next_tid, switch_pending;
	struct { int tid; uint64_t flags, sp, tls, ctid; } pending;
	/* tools' state to free */
	void *tool_state[8]; int ntool_state;
};

const struct rtl_sim_isa *sim_isa_by_name(const char *name);
const struct rtl_sim_isa *sim_isa_by_machine(int machine, int elf_class);
int sim_host_signal(struct rtl_sim *m, int guest_sig);
int sim_thread_tid(struct rtl_sim *m);
int sim_thread_is_ours(struct rtl_sim *m, int tid);
int64_t sim_thread_clone(struct rtl_sim *m, uint64_t pc, const uint64_t *a);
int64_t sim_thread_futex(struct rtl_sim *m, uint64_t pc, const uint64_t *a);
int64_t sim_thread_set_tid_address(struct rtl_sim *m, uint64_t addr);
int sim_thread_exit(struct rtl_sim *m);
int64_t sim_thread_yield(struct rtl_sim *m);
int sim_thread_step(struct rtl_sim *m);
void sim_threads_free(struct rtl_sim *m);
int sim_isa_from_file(const char *path, const struct rtl_sim_isa **out, char *msg, size_t n);
int sim_load(struct rtl_sim *m, const char *isa, const char *path, int argc, char **argv, char **envp);
int sim_run(struct rtl_sim *m);
int sim_map(struct rtl_sim *m, uint64_t addr, uint64_t len);
int sim_unmap(struct rtl_sim *m, uint64_t addr, uint64_t len);
void sim_stop(struct rtl_sim *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int64_t sim_linux_syscall(struct rtl_sim *m, uint64_t pc, uint64_t nr, const uint64_t *a);
/* Stops at the running system call (not emulated); returns -ENOSYS. */
int64_t sim_unsupported(struct rtl_sim *m, uint64_t pc);
uint64_t sim_mmap_alloc(struct rtl_sim *m, uint64_t len);
int sim_analyse(struct rtl_sim *m);
uint64_t *sim_reg_ptr(struct rtl_sim *m, const char *spec, unsigned *size);

/* rtl_sim_add_trailer with a function that frees USER if it never runs. */
int sim_add_trailer_drop(struct rtl_sim *m, rtl_sim_trailer_fn fn, void (*drop)(void *user), void *user);

#endif
