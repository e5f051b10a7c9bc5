/* The indirect-call target snippet (isa/x86_64/arcs.c), run for real: it is
 * emitted into an executable page with a 'ret' after it, its operand read
 * from where the caller says, and the arc table is then read back. Checks
 * one count per (site, target) for thousands of targets, two sites kept
 * apart, a rip-relative operand re-aimed, the registers it borrows given
 * back, and a full table counting what it cannot take. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include "check.h"
#include "isa/x86_64/arcs.h"
#include "runtime/arc_table.h"

static uint8_t *page;
static struct arc_entry *table;
static uint64_t *words;   /* site 1: words[0..1]; site 2: words[2..3] */

/* Emits at OFF the snippet for the call BYTES (LEN) with site words W, then ret. */
static void (*emit(size_t off, const uint8_t *bytes, size_t len, uint64_t target, uint64_t *w))(void *)
{
	struct x86_insn in;
	CHECK_EQ(x86_decode(bytes, len, (uint64_t)(uintptr_t)(page + 0x3000), &in), 0);
	if (in.rip_rel)
		in.target = target;
	struct x86_writer wr;
	x86_writer_init(&wr, (uint64_t)(uintptr_t)(page + off));
	size_t sw[2];
	CHECK_EQ(x86_count_target(&wr, &in, bytes, (uint64_t)(uintptr_t)w, true, sw), 0);
	x86_put_u8(&wr, 0xc3);
	CHECK(!wr.failed);
	memcpy(page + off, wr.buf, wr.len);
	x86_writer_free(&wr);
	return (void (*)(void *))(void *)(page + off);
}

static uint64_t count_of(uint32_t site, uint64_t target)
{
	uint64_t key = ((uint64_t)site << ARC_SITE_SHIFT) | target, n = 0;
	for (size_t k = 0; k < ARC_ENTRIES; k++)
		if (table[k].key == key)
			n += table[k].count;
	return n;
}

/* Calls F with rdi = ARG and checks that rbx, rcx, rdx, rsi, r8-r11 and the
 * memory below rsp the snippet does not own come back as they were. */
static void call_checked(void (*f)(void *), void *arg)
{
	uint64_t before = 0x1122334455667788ull, rcx = before, rdx = before + 1, rsi = before + 2;
	/* past this function's red zone, which the call's push would overwrite */
	__asm__ volatile("sub $128, %%rsp\n\tcall *%[f]\n\tadd $128, %%rsp"
			 : "+c"(rcx), "+d"(rdx), "+S"(rsi), "+D"(arg)
			 : [f] "r"(f)
			 : "rax", "r8", "r9", "r10", "r11", "memory", "cc");
	CHECK(rcx == before && rdx == before + 1 && rsi == before + 2);
}

int main(void)
{
	page = mmap(NULL, 0x4000, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint64_t *raw = calloc(1, ARC_TABLE_BYTES + 64);
	CHECK(page != MAP_FAILED && raw);
	table = (struct arc_entry *)((uint8_t *)raw + ARC_HEADER);
	words = (uint64_t *)(page + 0x3800);
	words[0] = 1ull << ARC_SITE_SHIFT;
	words[1] = (uint64_t)(uintptr_t)table;
	words[2] = 2ull << ARC_SITE_SHIFT;
	words[3] = (uint64_t)(uintptr_t)table;

	/* call [rdi] (ff 17): the target is the word rdi points at */
	static const uint8_t call_rdi[] = { 0xff, 0x17 };
	void (*site1)(void *) = emit(0, call_rdi, sizeof(call_rdi), 0, &words[0]);
	void (*site2)(void *) = emit(0x400, call_rdi, sizeof(call_rdi), 0, &words[2]);
	enum { NT = 5000 };
	for (uint64_t t = 0; t < NT; t++) {
		uint64_t target = 0x400000 + 16 * t;
		for (uint64_t r = 0; r <= t % 3; r++)
			call_checked(site1, &target);
		if (t % 2 == 0)
			call_checked(site2, &target);
	}
	int bad = 0;
	for (uint64_t t = 0; t < NT && bad < 5; t++) {
		uint64_t target = 0x400000 + 16 * t;
		if (count_of(1, target) != t % 3 + 1 || count_of(2, target) != (t % 2 == 0)) {
			CHECK_EQ(count_of(1, target), t % 3 + 1);
			CHECK_EQ(count_of(2, target), t % 2 == 0);
			bad++;
		}
	}
	CHECK_EQ(raw[0], NT + NT / 2);   /* slots claimed */
	CHECK_EQ(raw[1], 0);             /* none lost */

	/* call [rip+X] (ff 15): re-aimed at the slot wherever the copy is */
	uint64_t *slot = (uint64_t *)(page + 0x3900);
	*slot = 0x7777000;
	static const uint8_t call_rip[] = { 0xff, 0x15, 0x00, 0x10, 0x00, 0x00 };
	void (*site3)(void *) = emit(0x800, call_rip, sizeof(call_rip), (uint64_t)(uintptr_t)slot, &words[0]);
	call_checked(site3, NULL);
	call_checked(site3, NULL);
	CHECK_EQ(count_of(1, 0x7777000), 2);

	/* a full table: a new target is counted as lost, a known one still counts */
	raw[0] = ARC_LIMIT;
	uint64_t fresh = 0x9990000, known = 0x400000;
	call_checked(site1, &fresh);
	call_checked(site1, &known);
	CHECK_EQ(count_of(1, fresh), 0);
	CHECK_EQ(count_of(1, known), 2);
	CHECK_EQ(raw[1], 1);
	return CHECK_DONE();
}
