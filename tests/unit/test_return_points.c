/* Which calls of a copy push their original return address where only some
 * may (x86_reloc_env's original_returns_soft: a library walks the stack,
 * the process has threads). Such a call's return point in the original
 * code gets a 5-byte jump back into the copy (patch/lazy.c), so it may
 * only be one where no other way into the original code lies under those
 * 5 bytes: a place other functions jump to, anywhere when those are not
 * known, and a block start when there are some (a thread come in there
 * runs the original code on: BOLT's .warm parts of LLVM's functions,
 * rustc crashed). The
 * functions are assembled here at made-up addresses (relocated, never
 * run). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "check.h"
#include "isa/x86_64/relocate.h"

enum { FN = 0x400000, CALLEE = 0x500000, COPY = 0x10000000 };

static uint8_t code[256];
static size_t len;
static uint64_t counters = COPY + (1 << 20);

static int rd(void *ctx, const uint64_t addr, void *buf, size_t n)
{
	(void)ctx;
	if (addr < FN || addr + n > FN + len)
		return -1;
	memcpy(buf, code + (addr - FN), n);
	return 0;
}

static uint64_t same(void *ctx, uint64_t addr) { (void)ctx; return addr; }
static uint64_t counter(void *ctx) { (void)ctx; return counters += 8; }

static void put(const void *bytes, size_t n)
{
	memcpy(code + len, bytes, n);
	len += n;
}

static void call_callee(void)   /* call CALLEE */
{
	int32_t rel = (int32_t)(CALLEE - (FN + len + 5));
	put("\xe8", 1);
	put(&rel, 4);
}

/* Original return addresses pushed (return points kept), with FOREIGN
 * (NF of them) where other functions jump in, KNOWN: whether that list is
 * whole. */
static size_t kept(const uint64_t *foreign, size_t nf, bool known)
{
	struct x86_reloc_env env = { .addr = FN, .size = len, .code = code, .read = rd, .redirect = same,
				     .new_counter = counter, .entry_counter = true,
				     .original_returns = true, .original_returns_soft = true,
				     .foreign = foreign, .nforeign = nf, .foreign_known = known };
	struct x86_reloc r;
	const char *reason;
	if (x86_relocate(&env, COPY, &r, &reason)) {
		fprintf(stderr, "not relocated: %s\n", reason);
		return SIZE_MAX;
	}
	size_t n = r.nrets;
	x86_reloc_free(&r);
	return n;
}

static const uint8_t nops8[] = { 0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00 };
static const uint8_t ret[] = { 0xc3 };

int main(void)
{
	/* push rbx; call; 8 bytes of nop; pop rbx; ret: the return point fits */
	len = 0;
	put("\x53", 1);
	call_callee();
	put(nops8, 8);
	put("\x5b", 1);
	put(ret, 1);
	CHECK_EQ(kept(NULL, 0, true), 1);
	/* the same, but who jumps in from outside is not known */
	CHECK_EQ(kept(NULL, 0, false), 0);
	/* the same, another function jumping 2 bytes past the return point */
	uint64_t past = FN + 1 + 5 + 2;
	CHECK_EQ(kept(&past, 1, true), 0);

	/* test edi,edi; je T; call; jmp back (2 bytes); T: 8 bytes of nop;
	 * ret: T, a block start 2 bytes past the return point, is under the
	 * jump the return point would take (libLLVM's SimplifyCFGOpt::run.warm) */
	len = 0;
	put("\x85\xff", 2);
	put("\x74\x07", 2);   /* je +7: past the call (5) and the jmp (2) */
	call_callee();
	put("\xeb\xf7", 2);   /* jmp back to the je */
	put(nops8, 8);
	put(ret, 1);
	/* with no way in from outside, the original code runs only from the
	 * return point's jump on: T is never reached there */
	CHECK_EQ(kept(NULL, 0, true), 1);
	/* another function jumping to the je (a .cold part back into its
	 * parent): from there, the original code runs on to T */
	uint64_t je = FN + 2;
	CHECK_EQ(kept(&je, 1, true), 0);
	/* with the jump far enough from T, the return point fits again */
	len = 0;
	put("\x85\xff", 2);
	put("\x74\x0d", 2);   /* je +13: past the call, 6 bytes of nop, the jmp */
	call_callee();
	put(nops8 + 2, 6);
	put("\xeb\xf1", 2);
	put(nops8, 8);
	put(ret, 1);
	CHECK_EQ(kept(&je, 1, true), 1);
	return CHECK_DONE();
}
