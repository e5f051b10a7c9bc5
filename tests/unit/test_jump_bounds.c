/* How many entries the relocator copies of an absolute jump table
 * ('jmp [T+rI*8]', non-PIE code): as many as the bounds check before the
 * dispatch lets it read, and the whole run of valid entries when nothing
 * bounds the index. Too many costs memory; too few would send a dispatch
 * past the copied table, so every case where the bound does not hold for
 * every path must fall back to the full run. The functions are assembled
 * here at made-up addresses (they are relocated, never run). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "check.h"
#include "isa/x86_64/relocate.h"

enum { FN = 0x400000, TABLE = 0x600000, NTABLE = 300, COPY = 0x10000000 };

static uint8_t code[256];
static size_t len;
static uint64_t table[NTABLE];
static uint64_t counters = COPY + (1 << 20);

static int rd(void *ctx, const uint64_t addr, void *buf, size_t n)
{
	(void)ctx;
	if (addr >= TABLE && addr + n <= TABLE + sizeof(table)) {
		memcpy(buf, (const uint8_t *)table + (addr - TABLE), n);
		return 0;
	}
	if (addr >= FN && addr + n <= FN + len) {
		memcpy(buf, code + (addr - FN), n);
		return 0;
	}
	return -1;
}

static uint64_t same(void *ctx, uint64_t addr) { (void)ctx; return addr; }
static uint64_t counter(void *ctx) { (void)ctx; return counters += 8; }

static void put(const void *bytes, size_t n)
{
	memcpy(code + len, bytes, n);
	len += n;
}

static void jmp_table(void)   /* jmp [TABLE + rax*8] */
{
	static const uint8_t j[] = { 0xff, 0x24, 0xc5 };
	uint32_t t = TABLE;
	put(j, 3);
	put(&t, 4);
}

/* Ends the function with three 'ret' cases and a default one; the table
 * holds NVALID entries that are those cases, then zeros. */
static void cases(size_t nvalid)
{
	uint64_t first = FN + len;
	static const uint8_t rets[] = { 0xc3, 0xc3, 0xc3, 0xc3 };
	put(rets, 4);
	memset(table, 0, sizeof(table));
	for (size_t i = 0; i < nvalid; i++)
		table[i] = first + i % 3;
}

/* Entries of the copied table (its absolute fields). */
static size_t copied(void)
{
	struct x86_reloc_env env = { .addr = FN, .size = len, .code = code, .read = rd, .redirect = same,
				     .new_counter = counter, .entry_counter = true };
	struct x86_reloc r;
	const char *reason;
	if (x86_relocate(&env, COPY, &r, &reason)) {
		fprintf(stderr, "not relocated: %s\n", reason);
		return 0;
	}
	size_t n = 0;
	for (size_t i = 0; i < r.w.nfix; i++)
		n += r.w.fix[i].kind == X86_FIX_ABS64;
	x86_reloc_free(&r);
	return n;
}

static const uint8_t cmp_eax_2[] = { 0x83, 0xf8, 0x02 };
static const uint8_t ja_over_jmp[] = { 0x77, 0x07 };     /* to the first case (past the dispatch) */
static const uint8_t jae_over_jmp[] = { 0x73, 0x07 };

int main(void)
{
	/* cmp eax,2; ja default; jmp [T+rax*8]: entries 0..2 */
	len = 0;
	put(cmp_eax_2, 3);
	put(ja_over_jmp, 2);
	jmp_table();
	cases(40);
	CHECK_EQ(copied(), 3);

	/* jae: entries 0..1 */
	len = 0;
	put(cmp_eax_2, 3);
	put(jae_over_jmp, 2);
	jmp_table();
	cases(40);
	CHECK_EQ(copied(), 2);

	/* another register written between: still bounded */
	static const uint8_t mov_ecx_1[] = { 0xb9, 1, 0, 0, 0 };
	len = 0;
	put(cmp_eax_2, 3);
	static const uint8_t ja_over_mov_jmp[] = { 0x77, 0x0c };
	put(ja_over_mov_jmp, 2);
	put(mov_ecx_1, 5);
	jmp_table();
	cases(40);
	CHECK_EQ(copied(), 3);

	/* the index changed after the check: unbounded, the whole run */
	static const uint8_t inc_eax[] = { 0xff, 0xc0 };
	len = 0;
	put(cmp_eax_2, 3);
	static const uint8_t ja_over_inc_jmp[] = { 0x77, 0x09 };
	put(ja_over_inc_jmp, 2);
	put(inc_eax, 2);
	jmp_table();
	cases(40);
	CHECK_EQ(copied(), 40);

	/* the check on another register: unbounded */
	static const uint8_t cmp_ecx_2[] = { 0x83, 0xf9, 0x02 };
	len = 0;
	put(cmp_ecx_2, 3);
	put(ja_over_jmp, 2);
	jmp_table();
	cases(40);
	CHECK_EQ(copied(), 40);

	/* a signed check (jg) proves nothing about the unsigned index */
	static const uint8_t jg_over_jmp[] = { 0x7f, 0x07 };
	len = 0;
	put(cmp_eax_2, 3);
	put(jg_over_jmp, 2);
	jmp_table();
	cases(40);
	CHECK_EQ(copied(), 40);

	/* a branch enters between the check and the dispatch: unbounded
	 * (jmp to the dispatch, placed before the check) */
	static const uint8_t jmp_to_dispatch[] = { 0xeb, 0x05 };
	len = 0;
	put(jmp_to_dispatch, 2);
	put(cmp_eax_2, 3);
	put(ja_over_jmp, 2);
	jmp_table();
	cases(40);
	CHECK_EQ(copied(), 40);

	/* movzx eax, byte [rdi]: 256 entries at most */
	static const uint8_t movzx[] = { 0x0f, 0xb6, 0x07 };
	len = 0;
	put(movzx, 3);
	jmp_table();
	cases(NTABLE);
	CHECK_EQ(copied(), 256);

	/* one table, two dispatches with bounds 3 and 6: the larger holds */
	static const uint8_t cmp_eax_5[] = { 0x83, 0xf8, 0x05 };
	len = 0;
	put(cmp_eax_2, 3);
	static const uint8_t ja_over_all[] = { 0x77, 0x13 };   /* past both dispatches */
	put(ja_over_all, 2);
	jmp_table();
	put(cmp_eax_5, 3);
	static const uint8_t ja_over_second[] = { 0x77, 0x07 };
	put(ja_over_second, 2);
	jmp_table();
	cases(40);
	CHECK_EQ(copied(), 6);

	return CHECK_DONE();
}
