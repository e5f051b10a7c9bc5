/* Sampling a task and all it creates with perf_event_open: one event on
 * the task with inherit (its threads and child processes write into the
 * same ring), samples with the user registers and a copy of the user
 * stack, and the records that say which files are mapped where (mmap2),
 * which tasks start (fork) and which image replaces which (comm on exec).
 * The reader is the caller's: perf_ring_read() hands it each record. */
#ifndef RETICLE_OS_PERF_RING_H
#define RETICLE_OS_PERF_RING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The registers a sample carries, in the order of regs[] below. */
enum { PR_AX, PR_BX, PR_CX, PR_DX, PR_SI, PR_DI, PR_BP, PR_SP, PR_IP,
       PR_R8, PR_R9, PR_R10, PR_R11, PR_R12, PR_R13, PR_R14, PR_R15, PR_NREGS };

struct perf_ring_opts {
	const char *event;        /* cpu-clock, task-clock, cycles, instructions, cache-misses, ... */
	unsigned freq;            /* samples per second of a running task */
	unsigned stack_bytes;     /* user stack copied per sample */
	bool kernel;              /* also samples taken in the kernel (falls back to user only) */
	bool all_threads;         /* a running process: each of its threads (else PID's only) */
};

struct perf_sample {
	pid_t pid, tid;
	uint64_t time, period;
	bool in_kernel;           /* taken in the kernel: regs are the user ones at its entry */
	bool have_regs;
	uint64_t regs[PR_NREGS];
	const uint8_t *stack;     /* copy of the user stack from regs[PR_SP] */
	size_t stack_len;
};

enum perf_rec_kind { PERF_REC_SAMPLE, PERF_REC_MMAP, PERF_REC_FORK, PERF_REC_EXEC, PERF_REC_LOST };

struct perf_rec {
	enum perf_rec_kind kind;
	struct perf_sample sample;
	/* MMAP: an executable mapping of PATH at [addr, addr+len) from file offset pgoff */
	pid_t pid, ppid, tid;
	uint64_t addr, len, pgoff;
	const char *path;
	uint64_t lost;            /* LOST: samples the kernel dropped */
};

struct perf_ring;

/* Opens the event on PID (stopped) and maps its ring. Returns 0, or -errno
 * with WHY, a sentence naming the cause for the user (-ENOENT: no event of
 * that name). */
int perf_ring_open(const struct perf_ring_opts *o, pid_t pid, struct perf_ring **out, char *why, size_t len);
void perf_ring_close(struct perf_ring *r);
/* The descriptors to poll for data: one per CPU. */
size_t perf_ring_nfds(const struct perf_ring *r);
int perf_ring_fd(const struct perf_ring *r, size_t i);
/* Calls FN for each record in the rings, in time order, then frees their
 * room. Returns how many were read. Not thread-safe: one reader at a time. */
size_t perf_ring_read(struct perf_ring *r, void (*fn)(const struct perf_rec *rec, void *user), void *user);
/* Whether the kernel may take samples in the kernel for us. */
bool perf_ring_kernel(const struct perf_ring *r);
/* The kernel's perf_event_max_sample_rate, 0 if unknown. */
unsigned perf_max_sample_rate(void);

#endif
