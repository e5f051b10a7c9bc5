/* reticle sim: retargetable functional simulation of Linux user-mode
 * programs, with an ATOM-like instrumentation API (after the Sim-nML seed).
 *
 * Ownership: rtl_sim_open() creates a simulator that the caller destroys
 * with rtl_sim_close(); every pointer the API returns (names, procedures,
 * blocks, instructions) belongs to the simulator and lives until then.
 * Instrumentation calls are made before rtl_sim_run(); hooks may only read
 * machine state (rtl_sim_reg, rtl_sim_read_mem). */
#ifndef RETICLE_SIM_H
#define RETICLE_SIM_H

#include <reticle/api.h>

#include <stddef.h>
#include <stdint.h>

struct rtl_sim;
struct rtl_sim_insn;    /* one (predecoded) instruction */
struct rtl_sim_proc;    /* a procedure: an ELF function symbol */
struct rtl_sim_block;   /* a static basic block: ends after a control transfer */

enum rtl_sim_pos { RTL_SIM_BEFORE, RTL_SIM_AFTER };

typedef void (*rtl_sim_hook_fn)(struct rtl_sim *sim, const struct rtl_sim_insn *insn, void *user);
typedef void (*rtl_sim_trailer_fn)(struct rtl_sim *sim, void *user);

/* isa: a description name ("rv64") or NULL to choose from the ELF header.
 * argv[0] is the program path; envp may be NULL (empty environment). */
RTL_API int rtl_sim_open(const char *isa, int argc, char **argv, char **envp, struct rtl_sim **out);
/* The same with the program's path apart: argv[0] is only what it sees. */
RTL_API int rtl_sim_open_program(const char *isa, const char *path, int argc, char **argv, char **envp,
			 struct rtl_sim **out);
RTL_API void rtl_sim_close(struct rtl_sim *sim);
/* Runs to the program's exit: 0 and *status (exit code, or 128+signal), or
 * an error (undecodable instruction, unsupported system call...) explained
 * by rtl_sim_message(). Once per simulator: -EINVAL the second time. */
RTL_API int rtl_sim_run(struct rtl_sim *sim, int *status);
/* Asks a running simulation to stop at the end of the current block (an
 * instruction boundary), as when SIG (SIGINT, SIGTERM...) reached the
 * caller. Async-signal-safe: meant for the caller's signal handler. The
 * trailers still run (a profile is written, marked stopped); rtl_sim_run
 * then returns -EINTR, and rtl_sim_message() says "interrupted by SIG
 * after N instructions". Without a run in progress the next run stops at
 * its first block. */
RTL_API void rtl_sim_interrupt(struct rtl_sim *sim, int sig);
RTL_API const char *rtl_sim_message(const struct rtl_sim *sim);
/* Names of the built-in descriptions, NULL-terminated. */
RTL_API const char *const *rtl_sim_isas(void);
RTL_API const char *rtl_sim_isa_name(const struct rtl_sim *sim);

/* Instrumentation (seed: AddCallFuncbyName, AddCallFunc, AddTrailerFunc). */
RTL_API int rtl_sim_add_call_by_name(struct rtl_sim *sim, const char *iname, enum rtl_sim_pos pos,
			     rtl_sim_hook_fn fn, void *user);
RTL_API int rtl_sim_add_call(struct rtl_sim *sim, uint64_t addr, enum rtl_sim_pos pos, rtl_sim_hook_fn fn, void *user);
RTL_API int rtl_sim_add_trailer(struct rtl_sim *sim, rtl_sim_trailer_fn fn, void *user);
/* Per block and per procedure (ATOM's AddCallBlock, AddCallProc): BEFORE a
 * block is before its first instruction, AFTER after its last (for a
 * control transfer, when the next pc is known); BEFORE a procedure is at
 * its entry. AFTER a procedure is not offered: telling a return from a call
 * needs ISA knowledge the descriptions do not give (-ENOTSUP). */
RTL_API int rtl_sim_add_block_call(struct rtl_sim *sim, const struct rtl_sim_block *b, enum rtl_sim_pos pos,
			   rtl_sim_hook_fn fn, void *user);
RTL_API int rtl_sim_add_proc_call(struct rtl_sim *sim, const struct rtl_sim_proc *p, enum rtl_sim_pos pos,
			  rtl_sim_hook_fn fn, void *user);
/* The procedure of that name, or NULL. */
RTL_API const struct rtl_sim_proc *rtl_sim_find_proc(struct rtl_sim *sim, const char *name);
/* A call for every data memory access (address, size in bytes, 1 for a
 * write) with the instruction's address. The simulator then runs variants
 * of the instruction routines that report accesses; without such calls
 * they cost nothing. */
typedef void (*rtl_sim_mem_fn)(struct rtl_sim *sim, uint64_t pc, uint64_t addr, unsigned size, int is_write,
			       void *user);
RTL_API int rtl_sim_add_mem_call(struct rtl_sim *sim, rtl_sim_mem_fn fn, void *user);

/* Iterators over the program (seed: GetFirstProc, GetNextProc, GetFirstBlock,
 * GetNextBlock, GetLastInst). NULL at the end. */
RTL_API const struct rtl_sim_proc *rtl_sim_first_proc(struct rtl_sim *sim);
RTL_API const struct rtl_sim_proc *rtl_sim_next_proc(struct rtl_sim *sim, const struct rtl_sim_proc *p);
RTL_API const struct rtl_sim_block *rtl_sim_first_block(struct rtl_sim *sim, const struct rtl_sim_proc *p);
RTL_API const struct rtl_sim_block *rtl_sim_next_block(struct rtl_sim *sim, const struct rtl_sim_block *b);
RTL_API uint64_t rtl_sim_last_insn(const struct rtl_sim_block *b);   /* its address */
RTL_API const char *rtl_sim_proc_name(const struct rtl_sim_proc *p);
RTL_API uint64_t rtl_sim_proc_addr(const struct rtl_sim_proc *p);
RTL_API uint64_t rtl_sim_block_addr(const struct rtl_sim_block *b);
RTL_API unsigned rtl_sim_block_ninsns(const struct rtl_sim_block *b);
RTL_API const struct rtl_sim_proc *rtl_sim_block_proc(const struct rtl_sim_block *b);
/* The procedure containing addr, or NULL. */
RTL_API const struct rtl_sim_proc *rtl_sim_proc_at(struct rtl_sim *sim, uint64_t addr);

/* Instructions. */
RTL_API uint64_t rtl_sim_insn_addr(const struct rtl_sim_insn *i);
RTL_API unsigned rtl_sim_insn_len(const struct rtl_sim_insn *i);
RTL_API const char *rtl_sim_insn_name(struct rtl_sim *sim, const struct rtl_sim_insn *i);
RTL_API int rtl_sim_insn_is_branch(const struct rtl_sim_insn *i);       /* may change the pc */
RTL_API int rtl_sim_insn_is_cond_branch(const struct rtl_sim_insn *i);  /* ... conditionally */
RTL_API int rtl_sim_disasm(struct rtl_sim *sim, uint64_t addr, char *buf, size_t n);  /* length or <0 */
/* The description's instruction names (for hooking by name); returns the count. */
RTL_API int rtl_sim_insn_names(struct rtl_sim *sim, const char *const **names);

/* Read-only machine state. */
RTL_API uint64_t rtl_sim_pc(struct rtl_sim *sim);       /* next pc in an AFTER hook */
RTL_API int rtl_sim_reg(struct rtl_sim *sim, const char *file, unsigned index, uint64_t *value);
RTL_API int rtl_sim_read_mem(struct rtl_sim *sim, uint64_t addr, void *buf, size_t n);
RTL_API uint64_t rtl_sim_icount(struct rtl_sim *sim);   /* instructions executed so far */

/* Counting without hooks: the dispatch loop counts block entries, so the
 * executions of every instruction are known at no cost. Calls fn for each
 * executed instruction with a count; one address may be reported several
 * times (it lies in several predecoded blocks): sum the counts. Call it
 * from a trailer. */
typedef void (*rtl_sim_count_fn)(struct rtl_sim *sim, const struct rtl_sim_insn *insn, uint64_t count, void *user);
RTL_API void rtl_sim_for_each_executed(struct rtl_sim *sim, rtl_sim_count_fn fn, void *user);

/* A reticle profile of the run (include/reticle/profile.h) written to PATH
 * when the program ends (also after a fault or a stop; never in a forked
 * child): meta (COMMAND, exit_status, collectors "sim", isa, TOOL), the
 * program as the one module, instrs and executed blocks per procedure
 * (no calls). The store's temporary file is created now, so a bad PATH
 * fails before the run. *RESULT is 1 until the end, then 0 or a negative
 * error (the library does not print it). */
RTL_API int rtl_sim_add_profile(struct rtl_sim *sim, const char *path, const char *command, const char *tool,
			int *result);

/* Built-in tools, by name: icount, mix, bbcount, branch, and
 * cache[:SIZE:WAYS:LINE] (one LRU data cache; default 32768:8:64).
 * Reports go to out. */
RTL_API int rtl_sim_tool_builtin(struct rtl_sim *sim, const char *name, void *out_file);
/* A tool in a shared object defines this; --tool loads it and calls it. */
typedef int (*rtl_sim_tool_init_fn)(struct rtl_sim *sim, const char *args);
#define RTL_SIM_TOOL_INIT "rtl_sim_tool_init"

/* Services of the core that a generated simulator calls (an ISA
 * description compiled by `reticle sim --isa FILE`, against src/sim/isa.h,
 * where they are documented): part of the API so that the CLI and the
 * library export them to such simulators. */
struct rtl_sim_cpu;
RTL_API int64_t rtl_sim_syscall(struct rtl_sim_cpu *cpu, uint64_t pc, uint64_t nr, uint64_t a0, uint64_t a1,
				uint64_t a2, uint64_t a3, uint64_t a4, uint64_t a5);
RTL_API void rtl_sim_trap(struct rtl_sim_cpu *cpu, uint64_t pc, const char *what);
RTL_API void rtl_sim_raise(struct rtl_sim_cpu *cpu, uint64_t pc, uint64_t sig);
RTL_API void rtl_sim_mem_access(struct rtl_sim_cpu *cpu, uint64_t pc, uint64_t addr, unsigned size, int is_write);

#endif
