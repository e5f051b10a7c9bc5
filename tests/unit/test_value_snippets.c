/* Two snippet kinds of the probe model run for real, each emitted into an
 * executable page with a 'ret' after it:
 * - RTL_PRIM_COUNT_BY (isa/x86_64/arcs.c, x86_count_value): the count of
 *   each value of an argument in the arc table, by value and by power of
 *   two (hist()), values kept to 47 bits, the registers it borrows given
 *   back. The oracle: the values the harness passed, counted here.
 * - RTL_PRIM_BUFFER_APPEND at RTL_POINT_MEMORY (isa/x86_64/memtrace.c,
 *   x86_memtrace_record): the record {address, id} of a load through base
 *   and displacement, through base, index and scale, and of both accesses
 *   of a rep movsb (the count in the id's high half), in the thread area's
 *   buffer at %gs, newest lowest; the flags and every register kept; a
 *   buffer that fills traps once (int3), and the snippet goes on after it.
 *   The oracle: the addresses the harness computed itself. */
#include <asm/prctl.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <reticle/probe.h>
#include "check.h"
#include "isa/x86_64/arcs.h"
#include "isa/x86_64/insn.h"
#include "isa/x86_64/memtrace.h"
#include "runtime/arc_table.h"
#include "runtime/thread_area.h"

static uint8_t *page;
static struct arc_entry *table;

static void *finish(struct x86_writer *w, size_t off)
{
	x86_put_u8(w, 0xc3);
	CHECK(!w->failed);
	memcpy(page + off, w->buf, w->len);
	x86_writer_free(w);
	return page + off;
}

static uint64_t count_of(uint32_t site, int64_t value)
{
	uint64_t n = 0;
	for (size_t k = 0; k < ARC_ENTRIES; k++)
		if (table[k].key && table[k].key >> ARC_SITE_SHIFT == site && arc_key_value(table[k].key) == value)
			n += table[k].count;
	return n;
}

/* Calls F with rdi = ARG; rcx, rdx and rsi must come back. */
static void call_arg(void (*f)(uint64_t), uint64_t arg)
{
	uint64_t before = 0x1122334455667788ull, rcx = before, rdx = before + 1, rsi = before + 2;
	__asm__ volatile("sub $128, %%rsp\n\tcall *%[f]\n\tadd $128, %%rsp"
			 : "+c"(rcx), "+d"(rdx), "+S"(rsi), "+D"(arg)
			 : [f] "r"(f)
			 : "rax", "r8", "r9", "r10", "r11", "memory", "cc");
	CHECK(rcx == before && rdx == before + 1 && rsi == before + 2);
}

static void count_by(void)
{
	uint64_t *raw = calloc(1, ARC_TABLE_BYTES + 64);
	CHECK(raw != NULL);
	table = (struct arc_entry *)((uint8_t *)raw + ARC_HEADER);
	uint64_t *words = (uint64_t *)(page + 0x3800);
	words[0] = 1ull << ARC_SITE_SHIFT;
	words[1] = (uint64_t)(uintptr_t)table;
	words[2] = 2ull << ARC_SITE_SHIFT;
	words[3] = (uint64_t)(uintptr_t)table;
	struct rtl_predicate by_value = { .operand = RTL_OPND_ARG, .index = 0, .size = 8 };
	struct rtl_predicate by_log2 = { .operand = RTL_OPND_ARG, .index = 0, .size = 8, .log2 = true };
	size_t sw[2];
	struct x86_writer w;
	x86_writer_init(&w, (uint64_t)(uintptr_t)page);
	CHECK_EQ(x86_count_value(&w, &by_value, (uint64_t)(uintptr_t)&words[0], true, sw), 0);
	void (*value)(uint64_t) = (void (*)(uint64_t))finish(&w, 0);
	x86_writer_init(&w, (uint64_t)(uintptr_t)(page + 0x400));
	CHECK_EQ(x86_count_value(&w, &by_log2, (uint64_t)(uintptr_t)&words[2], true, sw), 0);
	void (*log2)(uint64_t) = (void (*)(uint64_t))finish(&w, 0x400);

	static const int64_t vals[] = { 0, 1, 2, 3, 4, 7, 8, 4096, -1, -5, 123456789, (int64_t)1 << 46 };
	enum { NV = sizeof(vals) / sizeof(vals[0]) };
	for (int i = 0; i < NV; i++)
		for (int r = 0; r <= i; r++) {
			call_arg(value, (uint64_t)vals[i]);
			call_arg(log2, (uint64_t)vals[i]);
		}
	/* 2^50 + 7 kept to its low 47 bits: 7 */
	call_arg(value, (1ull << 50) + 7);
	for (int i = 0; i < NV; i++) {
		int64_t want = vals[i] == ((int64_t)1 << 46) ? -((int64_t)1 << 46) : vals[i];   /* bit 46 is the sign */
		CHECK_EQ(count_of(1, want), (uint64_t)(i + 1) + (vals[i] == 7));
	}
	/* by power of two: 0 for 0, K+1 for [2^K, 2^(K+1)), -1 below 0 */
	int64_t buckets[64 + 2] = { 0 };   /* [0] below 0, [1 + k] key k */
	for (int i = 0; i < NV; i++) {
		int64_t v = vals[i], key = v < 0 ? -1 : v == 0 ? 0 : 64 - __builtin_clzll((uint64_t)v);
		buckets[key + 1] += i + 1;
	}
	for (int64_t key = -1; key <= 63; key++)
		if (buckets[key + 1])
			CHECK_EQ(count_of(2, key), buckets[key + 1]);
	CHECK_EQ(raw[1], 0);   /* none lost */
	free(raw);
}

/* ---- memory records ---- */

static uint8_t *area;
static int traps;

static void on_trap(int sig, siginfo_t *si, void *ctx)
{
	(void)sig, (void)si, (void)ctx;
	traps++;
	*(uint64_t *)(area + TA_MT_LEFT) = 8;   /* drained: room for four records */
}

/* Emits the record snippet of the instruction BYTES (one access, K) at OFF. */
static void *record_of(size_t off, const uint8_t *bytes, size_t len, int k, uint32_t id)
{
	struct x86_access acc[4];
	int n = x86_data_accesses(bytes, len, (uint64_t)(uintptr_t)(page + off), acc, 4);
	CHECK(n > k);
	struct x86_writer w;
	x86_writer_init(&w, (uint64_t)(uintptr_t)(page + off));
	CHECK_EQ(x86_memtrace_record(&w, &acc[k], id, false), 0);
	return finish(&w, off);
}

/* Runs F with rdi, rsi, rcx and every flag set, checks they come back. */
static void call_regs(void *f, uint64_t rdi, uint64_t rsi, uint64_t rcx)
{
	uint64_t di = rdi, si = rsi, cx = rcx, ax = 0x5555aaaa5555aaaaull, fl_in = 0, fl_out = 0;
	__asm__ volatile("sub $128, %%rsp\n\t"
			 "stc\n\tmov $-1, %%r8d\n\tadd $1, %%r8d\n\t"   /* CF, ZF, PF set by the add */
			 "pushfq\n\tpop %[in]\n\t"
			 "call *%[f]\n\t"
			 "pushfq\n\tpop %[out]\n\t"
			 "add $128, %%rsp"
			 : "+D"(di), "+S"(si), "+c"(cx), "+a"(ax), [in] "=&r"(fl_in), [out] "=&r"(fl_out)
			 : [f] "r"(f)
			 : "rdx", "r8", "r9", "r10", "r11", "memory", "cc");
	CHECK(di == rdi && si == rsi && cx == rcx && ax == 0x5555aaaa5555aaaaull);
	CHECK_EQ(fl_in & 0x8d5, fl_out & 0x8d5);   /* CF PF AF ZF SF OF */
}

static void records(void)
{
	area = mmap(NULL, TA_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	CHECK(area != MAP_FAILED);
	uint64_t *left = (uint64_t *)(area + TA_MT_LEFT), *recs = (uint64_t *)(area + TA_MT_RECS);
	*left = TA_MT_WORDS;
	CHECK_EQ(syscall(SYS_arch_prctl, ARCH_SET_GS, area), 0);
	static uint64_t data[64];
	/* mov rax,[rdi+0x10] */
	static const uint8_t disp[] = { 0x48, 0x8b, 0x47, 0x10 };
	void *f1 = record_of(0x800, disp, sizeof(disp), 0, 11);
	call_regs(f1, (uint64_t)(uintptr_t)data, 0, 0);
	CHECK_EQ(*left, TA_MT_WORDS - 2);
	CHECK_EQ(recs[TA_MT_WORDS - 2], (uint64_t)(uintptr_t)data + 0x10);
	CHECK_EQ(recs[TA_MT_WORDS - 1], 11);
	/* mov eax,[rdi+rsi*4+8] */
	static const uint8_t sib[] = { 0x8b, 0x44, 0xb7, 0x08 };
	void *f2 = record_of(0xc00, sib, sizeof(sib), 0, 12);
	call_regs(f2, (uint64_t)(uintptr_t)data, 5, 0);
	CHECK_EQ(recs[TA_MT_WORDS - 4], (uint64_t)(uintptr_t)data + 5 * 4 + 8);
	CHECK_EQ(recs[TA_MT_WORDS - 3], 12);
	/* rep movsb: its read at rsi and its write at rdi, rcx of them */
	static const uint8_t movs[] = { 0xf3, 0xa4 };
	void *rd = record_of(0x1000, movs, sizeof(movs), 0, 13), *wr = record_of(0x1400, movs, sizeof(movs), 1, 14);
	call_regs(rd, (uint64_t)(uintptr_t)&data[8], (uint64_t)(uintptr_t)&data[16], 37);
	call_regs(wr, (uint64_t)(uintptr_t)&data[8], (uint64_t)(uintptr_t)&data[16], 37);
	uint64_t r_addr = recs[TA_MT_WORDS - 6], r_id = recs[TA_MT_WORDS - 5];
	uint64_t w_addr = recs[TA_MT_WORDS - 8], w_id = recs[TA_MT_WORDS - 7];
	CHECK_EQ(r_addr, (uint64_t)(uintptr_t)&data[16]);
	CHECK_EQ(w_addr, (uint64_t)(uintptr_t)&data[8]);
	CHECK_EQ(r_id, 13 | 37ull << 32);
	CHECK_EQ(w_id, 14 | 37ull << 32);
	/* a buffer with room for one record: that record fills it, the int3
	 * lets "reticle" drain it, and the snippet goes on */
	struct sigaction sa = { .sa_sigaction = on_trap, .sa_flags = SA_SIGINFO };
	sigaction(SIGTRAP, &sa, NULL);
	*left = 2;
	call_regs(f1, (uint64_t)(uintptr_t)&data[32], 0, 0);
	CHECK_EQ(traps, 1);
	CHECK_EQ(recs[0], (uint64_t)(uintptr_t)&data[32] + 0x10);
	CHECK_EQ(recs[1], 11);
	CHECK_EQ(*left, 8);   /* as the drain left it */
	call_regs(f1, (uint64_t)(uintptr_t)&data[40], 0, 0);
	CHECK_EQ(traps, 1);
	CHECK_EQ(recs[6], (uint64_t)(uintptr_t)&data[40] + 0x10);
	CHECK_EQ(*left, 6);
}

int main(void)
{
	page = mmap(NULL, 0x4000, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(page != MAP_FAILED);
	count_by();
	records();
	return CHECK_DONE();
}
