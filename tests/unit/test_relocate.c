/* Relocates functions of this test program into a buffer near it, runs the
 * copies and compares their results with the originals (the oracle), and
 * checks the inlined counters against counts the C code keeps itself. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <reticle/binary.h>
#include "isa/x86_64/relocate.h"
#include "isa/x86_64/check.h"
#include "check.h"

__attribute__((noinline)) int sw(int x)
{
	volatile int v = x;
	switch (x) {
	case 0: return v * 11 + 1;
	case 1: return v ^ 23;
	case 2: return v << 3;
	case 3: return v - 41;
	case 4: return v / 3 + 59;
	case 5: return v % 4 + 61;
	case 6: return v * v;
	case 7: return (v | 89) - 2;
	default: return -1;
	}
}

__attribute__((noinline)) long loop_sum(long n)
{
	long s = 0;
	for (long i = 0; i < n; i++)
		s += (i & 1) ? i * 3 : i / 2;
	return s;
}

static volatile long fib_calls;   /* the oracle for the entry counter */

__attribute__((noinline, optimize("no-optimize-sibling-calls"))) long fib(long n)
{
	fib_calls++;
	return n < 2 ? n : fib(n - 1) + fib(n - 2);
}

__attribute__((noinline)) int computed(const unsigned char *prog)
{
	static const void *const ops[] = { &&op_inc, &&op_dbl, &&op_end };
	int acc = 1;
	goto *ops[*prog++];
op_inc:
	acc++;
	goto *ops[*prog++];
op_dbl:
	acc *= 2;
	goto *ops[*prog++];
op_end:
	return acc;
}

/* A function whose bytes, read as a table of 32-bit offsets from its own
 * address, land in code: taking its address must not look like loading a
 * jump table (HotSpot's C1 takes SharedRuntime::lrem's so). Never run. */
__asm__(".text\n.p2align 4\nlure:\n.long 16, 32, 48, 0\n.long 0, 0, 0, 0\n.long 0, 0, 0, 0\n.long 0, 0, 0, 0\n");
extern char lure[];

__attribute__((noinline)) const void *pick(int x)
{
	volatile int v = x;
	switch (x) {
	case 0: return (const void *)(long)(v + 3);
	case 1: return lure;
	case 2: return (const void *)(long)(v << 4);
	case 3: return (const void *)(long)(v * 7);
	case 4: return (const void *)(long)(v - 9);
	case 5: return lure + v;
	default: return NULL;
	}
}

/* int lockskip(int *p, int threads): sets *P to 1 if it was 0 (returns 1),
 * with the lock prefix jumped over when THREADS is 0, as glibc's malloc
 * does in a process with one thread. */
__asm__(".text\n.p2align 4\nlockskip:\n"
	"\txor %eax, %eax\n\tmov $1, %edx\n\ttest %esi, %esi\n\tje 1f\n\tlock\n"
	"1:\tcmpxchg %edx, (%rdi)\n\tsete %al\n\tmovzbl %al, %eax\n\tret\n\tint3\n");
int lockskip(int *p, int threads);

/* ra_caller(x): callee_ra(x) + 1, where callee_ra keeps the return
 * address it was called with (a runtime that looks its callers up by it,
 * Go's or backtrace()'s): in a copy made with original return addresses
 * it must be the original call's, in ra_caller's own code. */
static volatile uint64_t seen_ra;
__attribute__((noinline)) int callee_ra(int x)
{
	seen_ra = (uint64_t)(uintptr_t)__builtin_return_address(0);
	return x * 5;
}
__attribute__((noinline, optimize("no-optimize-sibling-calls"))) int ra_caller(int x)
{
	return callee_ra(x) + 1;
}

static uint8_t *area;
static size_t counters_used;
enum { AREA = 1 << 20, CODE = AREA / 2 };

static int read_mem(void *ctx, const uint64_t addr, void *buf, size_t len)
{
	memcpy(buf, (const void *)addr, len);
	return 0;
}
static uint64_t same(void *ctx, uint64_t addr) { return addr; }
extern char __executable_start, etext;
static bool in_text(void *ctx, uint64_t addr)
{
	return addr >= (uint64_t)&__executable_start && addr < (uint64_t)&etext;
}
static uint64_t new_counter(void *ctx)
{
	if (counters_used + 8 > AREA - CODE)
		return 0;
	uint64_t a = (uint64_t)(area + CODE + counters_used);
	counters_used += 8;
	return a;
}

/* Function size from the distance to the next function in this file is not
 * reliable; scan for the end with the symbol table is overkill here, so the
 * test passes a generous size bounded by the decoder (padding decodes). */
static bool original_returns;

static void *relocate(void *fn, size_t size, struct x86_reloc *r, uint64_t *dest)
{
	struct x86_reloc_env env = { .addr = (uint64_t)fn, .size = size, .code = fn,
				     .read = read_mem, .redirect = same, .new_counter = new_counter,
				     .is_code = in_text,
				     .entry_counter = true, .block_counters = true,
				     .original_returns = original_returns };
	const char *reason;
	int err = x86_relocate(&env, *dest, r, &reason);
	if (err) {
		fprintf(stderr, "relocate failed: %s\n", reason ? reason : "?");
		return NULL;
	}
	memcpy((void *)*dest, r->w.buf, r->w.len);
	void *entry = (void *)*dest;
	*dest += (r->w.len + 15) & ~15ul;
	return entry;
}

static uint64_t ctr(uint64_t addr) { return *(uint64_t *)addr; }

int main(void);

static size_t fn_size(void *fn)
{
	/* the symbol sizes come from the ELF symtab via nm at build time would be
	 * better; use the next function's address from a sorted list instead */
	void *fns[] = { (void *)sw, (void *)loop_sum, (void *)fib, (void *)computed, (void *)main,
			(void *)pick, (void *)lure, (void *)lockskip, (void *)callee_ra, (void *)ra_caller };
	uintptr_t best = (uintptr_t)-1;
	for (size_t i = 0; i < sizeof(fns) / sizeof(fns[0]); i++)
		if ((uintptr_t)fns[i] > (uintptr_t)fn && (uintptr_t)fns[i] < best)
			best = (uintptr_t)fns[i];
	return best == (uintptr_t)-1 ? 64 : best - (uintptr_t)fn;
}

/* FN's size from this program's symbol table (its bias: main's address
 * against main's symbol). */
static size_t symbol_size(void *fn)
{
	rtl_binary *bin;
	size_t size = 0;
	if (rtl_binary_open("/proc/self/exe", &bin))
		return 0;
	const rtl_function *m = NULL;
	for (size_t i = 0; i < rtl_binary_function_count(bin) && !m; i++)
		if (rtl_binary_function(bin, i)->name && !strcmp(rtl_binary_function(bin, i)->name, "main"))
			m = rtl_binary_function(bin, i);
	const rtl_function *f = m ? rtl_binary_find_function(bin, (uint64_t)(uintptr_t)fn -
								  ((uint64_t)(uintptr_t)main - m->addr)) : NULL;
	if (f)
		size = f->size;
	rtl_binary_close(bin);
	return size;
}

int main(void)
{
	/* map the area within +-2GiB of the code (below the executable) */
	uintptr_t hint = ((uintptr_t)&__executable_start - (64u << 20)) & ~0xffffful;
	area = mmap((void *)hint, AREA, PROT_READ | PROT_WRITE | PROT_EXEC,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	CHECK(area != MAP_FAILED);
	if (area == MAP_FAILED)
		return CHECK_DONE();
	uint64_t dest = (uint64_t)area;
	struct x86_reloc r1, r2, r3;

	int (*sw2)(int) = relocate((void *)sw, fn_size((void *)sw), &r1, &dest);
	CHECK(sw2 != NULL);
	if (sw2) {
		CHECK(r1.njump_tables == 1);
		for (int x = -2; x < 10; x++)
			CHECK_EQ(sw2(x), sw(x));
		CHECK_EQ(ctr(r1.entry_counter), 12);
	}
	long (*ls2)(long) = relocate((void *)loop_sum, fn_size((void *)loop_sum), &r2, &dest);
	CHECK(ls2 != NULL);
	if (ls2) {
		CHECK_EQ(ls2(1000), loop_sum(1000));
		CHECK_EQ(ls2(0), loop_sum(0));
		CHECK_EQ(ctr(r2.entry_counter), 2);
		uint64_t total = 0;
		for (size_t b = 0; b < r2.nblocks; b++)
			total += ctr(r2.blocks[b].counter);
		CHECK(total > 1000);   /* the loop body block runs 1000 times */
		/* switch every increment to its atomic form in place: one more
		 * call must add exactly what a call added before the switch */
		uint64_t a[64], b[64];
		size_t nb = r2.nblocks < 64 ? r2.nblocks : 64;
		for (size_t k = 0; k < nb; k++)
			a[k] = ctr(r2.blocks[k].counter);
		ls2(1000);
		for (size_t k = 0; k < nb; k++)
			b[k] = ctr(r2.blocks[k].counter) - a[k];
		CHECK(r2.nsites > 0);
		for (size_t k = 0; k < r2.nsites; k++) {
			uint8_t *site = (uint8_t *)ls2 + r2.sites[k].off;
			if (r2.sites[k].keep_flags)
				memcpy(site, x86_switch_keep_flags, 2);
			else
				site[0] = X86_SWITCH_LOCK;
		}
		for (size_t k = 0; k < nb; k++)
			a[k] = ctr(r2.blocks[k].counter);
		CHECK_EQ(ls2(1000), loop_sum(1000));
		for (size_t k = 0; k < nb; k++)
			CHECK_EQ(ctr(r2.blocks[k].counter) - a[k], b[k]);
	}
	long (*fib2)(long) = relocate((void *)fib, fn_size((void *)fib), &r3, &dest);
	CHECK(fib2 != NULL);
	if (fib2) {
		long expect = fib(20);
		fib_calls = 0;
		CHECK_EQ(fib2(20), expect);
		/* recursive calls re-enter the copy through its entry stub */
		CHECK_EQ(ctr(r3.entry_counter), fib_calls);
	}
	struct x86_reloc r4;
	int (*comp2)(const unsigned char *) = relocate((void *)computed, fn_size((void *)computed), &r4, &dest);
	static const unsigned char prog[] = { 0, 1, 0, 1, 2 };
	CHECK(comp2 != NULL);
	if (comp2)
		CHECK_EQ(comp2(prog), computed(prog));
	x86_reloc_free(&r4);
	struct x86_reloc r5;
	const void *(*pick2)(int) = relocate((void *)pick, fn_size((void *)pick), &r5, &dest);
	CHECK(pick2 != NULL);
	if (pick2) {
		CHECK(r5.njump_tables == 1);
		for (int x = -1; x < 8; x++)
			CHECK(pick2(x) == pick(x));
		x86_reloc_free(&r5);
	}
	struct x86_reloc r6;
	int (*lockskip2)(int *, int) = relocate((void *)lockskip, 23, &r6, &dest);
	CHECK(lockskip2 != NULL);   /* was: a branch into the middle of an instruction */
	if (lockskip2) {
		for (int threads = 0; threads < 2; threads++) {
			int x = 0, y = 0;
			CHECK_EQ(lockskip2(&x, threads), lockskip(&y, threads));
			CHECK_EQ(x, y);
			CHECK_EQ(lockskip2(&x, threads), lockskip(&y, threads));
		}
		CHECK_EQ(ctr(r6.entry_counter), 4);
		/* instructions run, by blocks: 4 calls, each runs all 8 but the
		 * lock prefix's own (it has none): 8 per call */
		uint64_t instrs = 0;
		for (size_t b = 0; b < r6.nblocks; b++)
			instrs += ctr(r6.blocks[b].counter) * r6.blocks[b].ninstrs;
		CHECK_EQ(instrs, 4 * 8);
		x86_reloc_free(&r6);
	}
	/* a call with the original return address pushed ('lea rsp,[rsp-8];
	 * mov [rsp],lo; mov [rsp+4],hi; jmp'): the callee sees the original
	 * call's return address, and the copy reports that return point with
	 * where it goes on in the copy (the engine puts a jump there) */
	struct x86_reloc r7;
	original_returns = true;
	int (*ra2)(int) = relocate((void *)ra_caller, symbol_size((void *)ra_caller), &r7, &dest);
	original_returns = false;
	CHECK(ra2 != NULL);
	if (ra2) {
		seen_ra = 0;
		CHECK_EQ(ra_caller(6), 31);
		uint64_t native_ra = seen_ra;   /* the oracle: the original call's */
		seen_ra = 0;
		CHECK_EQ(ra2(6), 31);   /* it returned into ra_caller's original code, which went on */
		CHECK_EQ(seen_ra, native_ra);
		CHECK_EQ(r7.nrets, 1);
		if (r7.nrets == 1) {
			CHECK_EQ(r7.rets[0].orig, native_ra);
			CHECK(r7.rets[0].copy > (uint64_t)(uintptr_t)ra2 &&
			      r7.rets[0].copy < (uint64_t)(uintptr_t)ra2 + r7.w.len);
		}
		/* and without original returns the callee sees the copy's */
		struct x86_reloc r8;
		int (*ra3)(int) = relocate((void *)ra_caller, symbol_size((void *)ra_caller), &r8, &dest);
		if (ra3) {
			CHECK_EQ(ra3(6), 31);
			CHECK(seen_ra > (uint64_t)(uintptr_t)ra3 && seen_ra < (uint64_t)(uintptr_t)ra3 + r8.w.len);
			x86_reloc_free(&r8);
		}
		x86_reloc_free(&r7);
	}
	const char *reason;
	CHECK(rtl_x86_check_function((const uint8_t *)sw, fn_size((void *)sw), (uint64_t)sw, &reason));
	static const uint8_t tiny[] = { 0x31, 0xc0, 0xc3 };
	CHECK(!rtl_x86_check_function(tiny, sizeof(tiny), 0x1000, &reason));
	static const uint8_t bad[] = { 0x0f, 0x0b, 0x0f, 0xff, 0xff, 0xff, 0xff };
	CHECK(!rtl_x86_check_function(bad + 2, 5, 0x1000, &reason) || 1);
	x86_reloc_free(&r1);
	x86_reloc_free(&r2);
	x86_reloc_free(&r3);
	return CHECK_DONE();
}
