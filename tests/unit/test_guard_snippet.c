/* The guard of snippets with predicates (isa/x86_64/predicate.c), run for
 * real: functions made of 'guard; inc [counter]; end; ret' are emitted
 * into an executable page and called with arguments and return values
 * whose truth C computes beside them. Checks that the counter moves
 * exactly when every predicate holds (signed, unsigned, narrowed operands,
 * values beyond an imm32, a global variable of each size), that every
 * register comes back (rax too: a return value), and the power-of-two
 * bucket of x86_load_operand against a C reference. */
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include "check.h"
#include "isa/x86_64/predicate.h"

static uint8_t *page;
static size_t used;
static volatile uint64_t counter;
static volatile int8_t g8;
static volatile int16_t g16;
static volatile int32_t g32;
static volatile uint64_t g64;

/* W, begun at the page's next free place, ends with a ret and goes there:
 * its address. */
static uint64_t place(struct x86_writer *w)
{
	uint64_t at = w->base;
	x86_put_u8(w, 0xc3);
	CHECK(!w->failed && used + w->len < 0x4000);
	memcpy(page + used, w->buf, w->len);
	used += (w->len + 15) & ~(size_t)15;
	x86_writer_free(w);
	return at;
}

/* mov rax,rdx (the "return value"); guard Q; inc [counter]; end; ret. */
static uint64_t emit_guarded(const struct rtl_predicate *q, size_t n)
{
	struct x86_writer w;
	x86_writer_init(&w, (uint64_t)(uintptr_t)(page + used));
	static const uint8_t ret_value[] = { 0x48, 0x89, 0xd0 };   /* mov rax,rdx */
	x86_put(&w, ret_value, sizeof(ret_value));
	struct x86_guard g;
	CHECK_EQ(x86_guard_begin(&w, q, n, &g), 0);
	static const uint8_t push_r11[] = { 0x41, 0x53 };       /* push r11 */
	static const uint8_t pop_r11[] = { 0x41, 0x5b };        /* pop r11 */
	x86_put(&w, push_r11, sizeof(push_r11));
	x86_put_u8(&w, 0x49);                                   /* movabs r11,&counter */
	x86_put_u8(&w, 0xbb);
	x86_put_u64(&w, (uint64_t)(uintptr_t)&counter);
	static const uint8_t inc[] = { 0x49, 0xff, 0x03 };      /* inc qword [r11] */
	x86_put(&w, inc, sizeof(inc));
	x86_put(&w, pop_r11, sizeof(pop_r11));
	CHECK_EQ(x86_guard_end(&w, &g), 0);
	return place(&w);
}

/* rax := Q's operand (with its log2); ret. */
static uint64_t emit_load(const struct rtl_predicate *q)
{
	struct x86_writer w;
	x86_writer_init(&w, (uint64_t)(uintptr_t)(page + used));
	CHECK_EQ(x86_load_operand(&w, q), 0);
	return place(&w);
}

/* Calls F(rdi, rsi, rdx, rcx, r8, r9) (with the red zone below the call
 * free for it); whether the counter moved. Every register but rax must
 * come back, and rax as rdx (the return value). */
static int run(uint64_t f, uint64_t a0, uint64_t a1, uint64_t a2, uint64_t a3, uint64_t a4, uint64_t a5)
{
	uint64_t before = counter, rdi = a0, rsi = a1, rdx = a2, rcx = a3, rax;
	register uint64_t r8 __asm__("r8") = a4, r9 __asm__("r9") = a5, r10 __asm__("r10") = 0x1010,
			      r11 __asm__("r11") = 0x1111;
	__asm__ volatile("sub $128, %%rsp\n\tcall *%[f]\n\tadd $128, %%rsp"
			 : "=a"(rax), "+D"(rdi), "+S"(rsi), "+d"(rdx), "+c"(rcx), "+r"(r8), "+r"(r9), "+r"(r10),
			   "+r"(r11)
			 : [f] "r"(f)
			 : "memory", "cc");
	CHECK(rdi == a0 && rsi == a1 && rdx == a2 && rcx == a3 && r8 == a4 && r9 == a5 && r10 == 0x1010 &&
	      r11 == 0x1111 && rax == a2);
	return counter != before;
}

static uint64_t call_load(uint64_t f, uint64_t a0)
{
	uint64_t rdi = a0, rax;
	__asm__ volatile("sub $128, %%rsp\n\tcall *%[f]\n\tadd $128, %%rsp"
			 : "=a"(rax), "+D"(rdi)
			 : [f] "r"(f)
			 : "rcx", "rdx", "rsi", "r8", "r9", "r10", "r11", "memory", "cc");
	return rax;
}

static int64_t bucket(int64_t v)
{
	if (v < 0)
		return -1;
	int64_t b = 0;
	for (uint64_t u = (uint64_t)v; u; u >>= 1)
		b++;
	return b;
}

int main(void)
{
	page = mmap(NULL, 0x4000, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(page != MAP_FAILED);
	static const int64_t values[] = { 0, 1, -1, 5, 6, 7, 127, 128, -128, -129, 255, 256, 65535, 65536,
					  0x7fffffff, 0x80000000ll, -0x80000000ll, 0xffffffffll, 0x100000000ll,
					  INT64_MAX, INT64_MIN, 0x123456789abll, -0x123456789abll };
	size_t nv = sizeof(values) / sizeof(*values);

	/* arg0 > 5 (signed, 64 bits) and (int32)arg3 == -1 */
	struct rtl_predicate two[] = {
		{ .operand = RTL_OPND_ARG, .index = 0, .size = 8, .cmp = RTL_CMP_GT, .value = 5 },
		{ .operand = RTL_OPND_ARG, .index = 3, .size = 4, .cmp = RTL_CMP_EQ, .value = -1 },
	};
	uint64_t f = emit_guarded(two, 2);
	for (size_t i = 0; i < nv; i++)
		for (size_t j = 0; j < nv; j++) {
			int64_t a = values[i], b = values[j];
			int want = a > 5 && (int32_t)b == -1;
			CHECK_EQ(run(f, (uint64_t)a, 0, 9, (uint64_t)b, 0, 0), want);
		}
	/* the return value after a test that used rax; a register by number
	 * (rcx), as other calling conventions' arguments are read */
	struct rtl_predicate ret2[] = {
		{ .operand = RTL_OPND_ARG, .index = 0, .size = 8, .cmp = RTL_CMP_NE, .value = 0 },
		{ .operand = RTL_OPND_RETVAL, .size = 4, .cmp = RTL_CMP_EQ, .value = -7 },
		{ .operand = RTL_OPND_REG, .index = 1, .size = 8, .cmp = RTL_CMP_LT, .value = 100 },
	};
	uint64_t rf = emit_guarded(ret2, 3);
	for (size_t i = 0; i < nv; i++)
		for (size_t j = 0; j < nv; j++) {
			int64_t a = values[i], v = values[j];
			int want = a != 0 && (int32_t)v == -7 && (int64_t)0x30 < 100;
			CHECK_EQ(run(rf, (uint64_t)a, 0, (uint64_t)v, 0x30, 0, 0), want);
			CHECK_EQ(run(rf, (uint64_t)a, 0, (uint64_t)-7, 0x30, 0, 0), a != 0);
			CHECK_EQ(run(rf, (uint64_t)a, 0, (uint64_t)-7, 1000, 0, 0), 0);
		}
	/* each operand, size, sign and comparison, against a value beyond
	 * an imm32 and one within */
	static const int64_t limits[] = { 5, -129, 0x123456789abll, -0x80000000ll };
	for (uint8_t size = 1; size <= 8; size *= 2)
		for (int uns = 0; uns < 2; uns++)
			for (uint8_t cmp = RTL_CMP_EQ; cmp <= RTL_CMP_GE; cmp++)
				for (size_t l = 0; l < sizeof(limits) / sizeof(*limits); l++)
					for (uint8_t arg = 0; arg < 7; arg++) {   /* 6: the return value */
						struct rtl_predicate q = {
							.operand = arg < 6 ? RTL_OPND_ARG : RTL_OPND_RETVAL,
							.index = arg < 6 ? arg : 0, .size = size, .cmp = cmp,
							.is_unsigned = uns, .value = limits[l] };
						uint64_t g = emit_guarded(&q, 1);
						for (size_t i = 0; i < nv; i++) {
							uint64_t v = (uint64_t)values[i], args[6] = { 0 };
							args[arg < 6 ? arg : 2] = v;
							/* the operand as the snippet reads it */
							uint64_t x = size == 8 ? v : v & ((1ull << (8 * size)) - 1);
							if (!uns && size < 8 && (x >> (8 * size - 1)) & 1)
								x |= ~0ull << (8 * size);
							int64_t sx = (int64_t)x, lim = limits[l];
							uint64_t ul = (uint64_t)lim;
							int want = cmp == RTL_CMP_EQ ? x == ul : cmp == RTL_CMP_NE ? x != ul
								: uns ? (cmp == RTL_CMP_LT ? x < ul : cmp == RTL_CMP_LE ? x <= ul
									 : cmp == RTL_CMP_GT ? x > ul : x >= ul)
								      : (cmp == RTL_CMP_LT ? sx < lim : cmp == RTL_CMP_LE ? sx <= lim
									 : cmp == RTL_CMP_GT ? sx > lim : sx >= lim);
							CHECK_EQ(run(g, args[0], args[1], args[2], args[3], args[4], args[5]), want);
						}
						used = used > 0x3000 ? 0 : used;   /* the page is reused */
					}
	/* globals of each size, signed, read where they are */
	struct rtl_predicate gq[] = {
		{ .operand = RTL_OPND_GLOBAL, .size = 1, .cmp = RTL_CMP_LT, .value = 0, .where = (uint64_t)(uintptr_t)&g8 },
		{ .operand = RTL_OPND_GLOBAL, .size = 2, .cmp = RTL_CMP_EQ, .value = -2, .where = (uint64_t)(uintptr_t)&g16 },
		{ .operand = RTL_OPND_GLOBAL, .size = 4, .cmp = RTL_CMP_GE, .value = 100, .where = (uint64_t)(uintptr_t)&g32 },
		{ .operand = RTL_OPND_GLOBAL, .size = 8, .cmp = RTL_CMP_NE, .value = 0x123456789abll,
		  .where = (uint64_t)(uintptr_t)&g64 },
	};
	uint64_t gf = emit_guarded(gq, 4);
	for (int k = 0; k < 16; k++) {
		g8 = (int8_t)(k & 1 ? -3 : 3);
		g16 = (int16_t)(k & 2 ? -2 : 2);
		g32 = k & 4 ? 100 : 99;
		g64 = k & 8 ? 0x123456789abull : 7;
		CHECK_EQ(run(gf, 1, 2, 3, 4, 5, 6), k == 7);
	}
	/* buckets: the first argument, 64 bits signed, by power of two */
	struct rtl_predicate key = { .operand = RTL_OPND_ARG, .index = 0, .size = 8, .log2 = true };
	uint64_t lf = emit_load(&key);
	for (size_t i = 0; i < nv; i++)
		CHECK_EQ((int64_t)call_load(lf, (uint64_t)values[i]), bucket(values[i]));
	for (int s = 0; s < 63; s++) {
		CHECK_EQ((int64_t)call_load(lf, 1ull << s), s + 1);
		CHECK_EQ((int64_t)call_load(lf, (2ull << s) - 1), s + 1);
	}
	return CHECK_DONE();
}
