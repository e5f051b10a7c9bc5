/* The contract between a generated simulator (build/src/sim/<isa>_gen.c,
 * written by reticle-nmlgen from descriptions/<isa>.nml) and the simulator
 * core (src/sim/). Generated code includes this header only; the core never
 * includes generated code, it reaches an ISA through struct rtl_sim_isa. */
#ifndef RETICLE_SIM_ISA_H
#define RETICLE_SIM_ISA_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <math.h>

struct rtl_sim_cpu;
struct rtl_sim_pinsn;

typedef void (*rtl_sim_handler)(struct rtl_sim_cpu *cpu, const struct rtl_sim_pinsn *p);

/* A predecoded instruction: the routine generated from its action, its
 * decoded fields, and (for hook entries the core inserts) a callback. */
struct rtl_sim_pinsn {
	rtl_sim_handler fn;
	uint64_t addr;
	union {
		int32_t f[6];
		struct { void *hook; void *data; const struct rtl_sim_pinsn *insn; } h;
	};
	uint16_t id;
	uint8_t len;
	uint8_t flags;
};

/* First member of every generated machine state. */
struct rtl_sim_cpu {
	uint8_t *mem;           /* host address of guest address 0 */
	uint64_t mem_mask;      /* guest addresses are reduced modulo the reservation */
	uint64_t pc, npc;
	int stop;               /* nonzero: leave the dispatch loop after this block */
	void *machine;          /* the core's struct sim_machine */
};

/* Instruction flags, computed by the generator from the actions. */
enum {
	RTL_SIM_F_BRANCH = 1,   /* may write the pc or npc register */
	RTL_SIM_F_COND = 2,     /* ... only under a condition */
	RTL_SIM_F_TRAP = 4,     /* calls the core (system call, trap): ends a block */
	RTL_SIM_F_MAYSTOP = 8,  /* may kill the guest (raise): stops within its block */
};

struct rtl_sim_regdesc { const char *name; size_t offset; uint8_t size; uint16_t count; uint8_t is_float; };

struct rtl_sim_isa {
	const char *name;
	int elf_machine, elf_class, big_endian;
	const char *syscall_abi;    /* "generic" (asm-generic numbers) or another table */
	const char *stack_pointer;  /* "NAME[INDEX]" of the register holding sp */
	const char *tls_register;   /* thread pointer (set_thread_area, clone's CLONE_SETTLS), optional */
	const char *syscall_return; /* register a new thread finds 0 in after clone, optional */
	int delay_slots;            /* control transfers take effect after the next instruction */
	size_t state_size;
	unsigned max_len, min_len;  /* longest and shortest instruction in bytes */
	unsigned ninsn;
	const char *const *names;   /* per id */
	const uint8_t *flags;       /* per id */
	const struct rtl_sim_regdesc *regs;
	unsigned nregs;
	/* 0 and fills p (fn, id, len, fields), or -1 when the bytes do not decode. */
	int (*decode)(const uint8_t *bytes, size_t avail, struct rtl_sim_pinsn *p);
	int (*disasm)(const struct rtl_sim_pinsn *p, char *buf, size_t n);
	const rtl_sim_handler *traced;  /* per id: the routine that reports memory accesses */
};

/* Every entry of a predecoded block ends by calling the next one (a tail
 * call, so a jump at -O2); the core terminates each block with an entry
 * that returns to the dispatch loop. */
#define RTL_SIM_NEXT(cpu, p) do { const struct rtl_sim_pinsn *n_ = (p) + 1; n_->fn((cpu), n_); } while (0)

/* Services of the core called from generated actions: exported by the CLI
 * to the generated simulators it loads (--isa FILE), beside the public API. */
#define RTL_SIM_SERVICE __attribute__((visibility("default")))
RTL_SIM_SERVICE int64_t rtl_sim_syscall(struct rtl_sim_cpu *cpu, uint64_t pc, uint64_t nr, uint64_t a0, uint64_t a1,
			uint64_t a2, uint64_t a3, uint64_t a4, uint64_t a5);
RTL_SIM_SERVICE void rtl_sim_trap(struct rtl_sim_cpu *cpu, uint64_t pc, const char *what);
/* The guest is killed by signal sig (Linux's number for the ISA), as the
 * kernel would do on that exception: status 128 + sig. */
RTL_SIM_SERVICE void rtl_sim_raise(struct rtl_sim_cpu *cpu, uint64_t pc, uint64_t sig);

/* Memory access helpers: guest address -> host address within the reservation. */
#define RTL_SIM_HOST(cpu, a) ((cpu)->mem + ((a) & (cpu)->mem_mask))
#define RTL_SIM_LD(bits) \
	static inline uint##bits##_t rtl_ld##bits(struct rtl_sim_cpu *c, uint64_t a) \
	{ uint##bits##_t v; memcpy(&v, RTL_SIM_HOST(c, a), sizeof v); return v; } \
	static inline void rtl_st##bits(struct rtl_sim_cpu *c, uint64_t a, uint64_t v) \
	{ uint##bits##_t x = (uint##bits##_t)v; memcpy(RTL_SIM_HOST(c, a), &x, sizeof x); }
RTL_SIM_LD(8) RTL_SIM_LD(16) RTL_SIM_LD(32) RTL_SIM_LD(64)
static inline uint16_t rtl_ld16be(struct rtl_sim_cpu *c, uint64_t a) { return __builtin_bswap16(rtl_ld16(c, a)); }
static inline uint32_t rtl_ld32be(struct rtl_sim_cpu *c, uint64_t a) { return __builtin_bswap32(rtl_ld32(c, a)); }
static inline uint64_t rtl_ld64be(struct rtl_sim_cpu *c, uint64_t a) { return __builtin_bswap64(rtl_ld64(c, a)); }
static inline uint8_t rtl_ld8be(struct rtl_sim_cpu *c, uint64_t a) { return rtl_ld8(c, a); }
static inline void rtl_st8be(struct rtl_sim_cpu *c, uint64_t a, uint64_t v) { rtl_st8(c, a, v); }
static inline void rtl_st16be(struct rtl_sim_cpu *c, uint64_t a, uint64_t v) { rtl_st16(c, a, __builtin_bswap16((uint16_t)v)); }
static inline void rtl_st32be(struct rtl_sim_cpu *c, uint64_t a, uint64_t v) { rtl_st32(c, a, __builtin_bswap32((uint32_t)v)); }
static inline void rtl_st64be(struct rtl_sim_cpu *c, uint64_t a, uint64_t v) { rtl_st64(c, a, __builtin_bswap64(v)); }

/* Accessors used by the traced routines: report, then access. */
RTL_SIM_SERVICE void rtl_sim_mem_access(struct rtl_sim_cpu *cpu, uint64_t pc, uint64_t addr, unsigned size, int is_write);
#define RTL_SIM_TRACED(sfx, bits) \
	static inline uint##bits##_t rtl_ld##bits##sfx##t(struct rtl_sim_cpu *c, uint64_t pc, uint64_t a) \
	{ rtl_sim_mem_access(c, pc, a, bits / 8, 0); return rtl_ld##bits##sfx(c, a); } \
	static inline void rtl_st##bits##sfx##t(struct rtl_sim_cpu *c, uint64_t pc, uint64_t a, uint64_t v) \
	{ rtl_sim_mem_access(c, pc, a, bits / 8, 1); rtl_st##bits##sfx(c, a, v); }
RTL_SIM_TRACED(, 8) RTL_SIM_TRACED(, 16) RTL_SIM_TRACED(, 32) RTL_SIM_TRACED(, 64)
RTL_SIM_TRACED(be, 8) RTL_SIM_TRACED(be, 16) RTL_SIM_TRACED(be, 32) RTL_SIM_TRACED(be, 64)

/* Floating-point intrinsics of the dialect (see docs/sim-nml.md). */
static inline float rtl_as_float(uint64_t b) { uint32_t x = (uint32_t)b; float f; memcpy(&f, &x, 4); return f; }
static inline double rtl_as_double(uint64_t b) { double d; memcpy(&d, &b, 8); return d; }
static inline uint64_t rtl_float_bits(float f) { uint32_t x; memcpy(&x, &f, 4); return x; }
static inline uint64_t rtl_double_bits(double d) { uint64_t x; memcpy(&x, &d, 8); return x; }
/* Float to integer: truncating, saturating, NaN gives the largest value. */
static inline uint64_t rtl_f2i(double x, int is_signed, int w)
{
	if (is_signed) {
		double hi = (double)((w == 64) ? INT64_MAX : (int64_t)((1ull << (w - 1)) - 1));
		double lo = (w == 64) ? (double)INT64_MIN : -(double)(1ull << (w - 1));
		if (x != x || x >= hi + 1.0 || (w == 64 && x >= 9223372036854775808.0))
			return (uint64_t)(int64_t)((w == 64) ? INT64_MAX : (int64_t)((1ull << (w - 1)) - 1));
		if (x <= lo)
			return (uint64_t)((w == 64) ? INT64_MIN : -(int64_t)(1ull << (w - 1)));
		return (uint64_t)(int64_t)x;
	}
	double hi = (w == 64) ? 18446744073709551616.0 : (double)(1ull << w);
	if (x != x || x >= hi)
		return (w == 64) ? UINT64_MAX : (1ull << w) - 1;
	if (x <= -1.0)
		return 0;
	return (uint64_t)x;
}
/* Rounding to an integral value: 0 nearest-even, 1 toward zero, 2 down, 3 up, 4 nearest-away. */
static inline double rtl_fround(double x, uint64_t mode)
{
	switch (mode) {
	case 1: return trunc(x);
	case 2: return floor(x);
	case 3: return ceil(x);
	case 4: return round(x);
	default: return nearbyint(x);
	}
}
#define rtl_issubnormal(x) (fpclassify(x) == FP_SUBNORMAL)

#endif
