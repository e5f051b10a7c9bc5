/* The counter snippets of the code writer (isa/x86_64/writer.c), run for
 * real: each is emitted between a harness that sets every flag, fills the
 * red zone with a pattern and the registers with known values, and then
 * reports what it finds. Checks, for the plain and the flag-keeping
 * increment, each single-thread and atomic, and for each single-thread one
 * switched to atomic in place (x86_switch_atomic: a process that gets a
 * second thread): the counter moves by exactly one per run (by RCX for
 * x86_add_rcx_to_counter), the flags come back where the snippet promises
 * to keep them, no register and no byte of the red zone changes, and two
 * threads running an atomic one lose no increment. Each of those removed
 * as cover's sweep removes it (x86_increment_off), the increment starting
 * at every column of a 16-byte fetch block: the bytes that change lie in
 * one block, and the counter, the registers, the flags and the red zone
 * stay as they were. The same for the
 * snippets on the thread's area (%gs): the signal slot (shim: an id, or
 * the copy's address through the red zone's first word) and the
 * countdown of bbv's intervals (its int3 exactly when it goes below zero). */
#include <asm/prctl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "check.h"
#include "isa/x86_64/timers.h"
#include "isa/x86_64/writer.h"
#include "runtime/thread_area.h"

static uint8_t *page;
static size_t used;
/* >= 0: the increment starts at this column of a 16-byte block and is
 * removed (x86_increment_off) once placed; swept_ok says whether it was */
static int sweep_col = -1;
static bool swept_ok;
static void sweep(uint8_t *site, size_t len);
/* in the page: the snippets reach it rip-relative (within 2 GiB) */
static volatile uint64_t *counter;
/* what the harness saw after the snippet: flags, then the registers
 * rax..r15 (but rsp), then the red zone's 16 words */
static uint64_t seen[1 + 15 + 16];

enum { PATTERN = 0x5a };

/* A function: save rbx, rbp, r12-r15; flags := its argument; the red zone
 * := PATTERN bytes; every register but rsp := (r + 1) * 0x0101..; the
 * snippet EMIT writes (switched to atomic in place when SWITCH_AFTER);
 * then, below the red zone, the flags and registers pushed and copied
 * into seen with the red zone; restore; ret. */
typedef size_t (*emit_fn)(struct x86_writer *w, uint64_t counter, bool atomic);

static void put(struct x86_writer *w, const uint8_t *b, size_t n) { x86_put(w, b, n); }

static uint64_t harness(emit_fn emit, bool atomic, bool switch_after, bool keep_flags)
{
	struct x86_writer w;
	x86_writer_init(&w, (uint64_t)(uintptr_t)(page + used));
	/* callee-saved registers: push rbx, rbp, r12-r15 */
	static const uint8_t save[] = { 0x53, 0x55, 0x41, 0x54, 0x41, 0x55, 0x41, 0x56, 0x41, 0x57 };
	put(&w, save, sizeof(save));
	/* flags from rdi: push rdi; popfq */
	static const uint8_t set_flags[] = { 0x57, 0x9d };
	put(&w, set_flags, sizeof(set_flags));
	/* the red zone: 16 words of PATTERN (mov rax, imm64; mov [rsp-8k], rax),
	 * before the registers get their values */
	uint8_t movabs_rax[10] = { 0x48, 0xb8 };
	memset(movabs_rax + 2, PATTERN, 8);
	put(&w, movabs_rax, sizeof(movabs_rax));
	for (int k = 1; k <= 16; k++) {
		uint8_t st[] = { 0x48, 0x89, 0x44, 0x24, (uint8_t)(int8_t)(-8 * k) };   /* mov [rsp-8k],rax */
		put(&w, st, sizeof(st));
	}
	/* every register but rsp := (r+1) * 0x0101010101010101 (movabs r, imm) */
	for (int r = 0; r < 16; r++) {
		if (r == 4)
			continue;
		uint8_t mov[10] = { (uint8_t)(0x48 | (r >> 3)), (uint8_t)(0xb8 | (r & 7)) };
		uint64_t v = (uint64_t)(r + 1) * 0x0101010101010101ull;
		memcpy(mov + 2, &v, 8);
		put(&w, mov, sizeof(mov));
	}
	while (sweep_col >= 0 && (w.base + w.len) % 16 != (uint64_t)sweep_col)
		put(&w, (const uint8_t[]){ 0x90 }, 1);
	size_t site = w.len;
	emit(&w, (uint64_t)(uintptr_t)counter, atomic);
	size_t site_len = w.len - site;
	/* registers into seen[1..15]: mov [abs], r via movabs is rax only, so
	 * push them all and copy below */
	/* lea rsp,[rsp-128] first: the red zone must stay as the snippet left it */
	static const uint8_t down[] = { 0x48, 0x8d, 0x64, 0x24, 0x80 };
	put(&w, down, sizeof(down));
	put(&w, (const uint8_t[]){ 0x9c }, 1);                  /* pushfq */
	for (int r = 15; r >= 0; r--) {
		if (r == 4)
			continue;
		if (r >= 8)
			put(&w, (const uint8_t[]){ 0x41, (uint8_t)(0x50 | (r & 7)) }, 2);
		else
			put(&w, (const uint8_t[]){ (uint8_t)(0x50 | r) }, 1);
	}
	/* the stack from rsp: rax..r15 (15 words) and the flags, then the red
	 * zone of the snippet's rsp (the 128 bytes the lea stepped over): 32
	 * words into seen with rep movsq */
	uint8_t movabs_rdi[10] = { 0x48, 0xbf };
	uint64_t dst = (uint64_t)(uintptr_t)seen;
	memcpy(movabs_rdi + 2, &dst, 8);
	static const uint8_t copy_regs[] = {
		0x48, 0x89, 0xe6,                     /* mov rsi,rsp */
		0xb9, 16, 0, 0, 0,                    /* mov ecx,16 */
		0xfc,                                 /* cld */
		0xf3, 0x48, 0xa5,                     /* rep movsq: rax..r15, flags */
		0xb9, 16, 0, 0, 0,                    /* mov ecx,16 */
		0xf3, 0x48, 0xa5,                     /* rep movsq: the red zone, next */
		0x48, 0x8d, 0xa4, 0x24, 0x00, 0x01, 0, 0,   /* lea rsp,[rsp+256] */
	};
	put(&w, movabs_rdi, sizeof(movabs_rdi));
	put(&w, copy_regs, sizeof(copy_regs));
	static const uint8_t restore[] = { 0x41, 0x5f, 0x41, 0x5e, 0x41, 0x5d, 0x41, 0x5c, 0x5d, 0x5b, 0xc3 };
	put(&w, restore, sizeof(restore));
	CHECK(!w.failed && used + w.len < 0xf000);
	uint64_t at = w.base;
	memcpy(page + used, w.buf, w.len);
	if (switch_after)
		x86_switch_atomic(page + used + site, keep_flags);
	if (sweep_col >= 0)
		sweep(page + used + site, site_len);
	used += (w.len + 15) & ~(size_t)15;
	x86_writer_free(&w);
	return at;
}

/* Cover's removal of the increment of LEN bytes at SITE (placed), as
 * engine/sweep.c stores it while threads run: every byte it changes in
 * one aligned 16-byte block. */
static void sweep(uint8_t *site, size_t len)
{
	uint8_t before[160];
	struct x86_live_store st;
	CHECK(len <= sizeof(before));
	memcpy(before, site, len);
	swept_ok = x86_increment_off(site, (uint64_t)(uintptr_t)site, len, &st);
	if (!swept_ok)
		return;
	CHECK(st.off + st.len <= len);
	memcpy(site + st.off, st.bytes, st.len);
	uint64_t first = 0, last = 0;
	for (size_t i = 0; i < len; i++)
		if (site[i] != before[i]) {
			last = (uint64_t)(uintptr_t)(site + i);
			first = first ? first : last;
		}
	if (first / 16 != last / 16)
		fprintf(stderr, "removing a %zu-byte increment at column %d changed %#llx..%#llx\n", len, sweep_col,
			(unsigned long long)first, (unsigned long long)last);
	CHECK(first && first / 16 == last / 16);
}

/* Runs F with every flag set (FLAGS_ON) or none: what it saw is in seen.
 * FREE: the red zone's words the snippet may use (bit 15: [rsp-8]). */
static void check_run_free(uint64_t f, const char *what, bool keeps_flags, uint64_t step, unsigned free)
{
	static const uint64_t on = 0x8d5;    /* OF DF SF ZF AF PF CF (and bit 1) */
	for (int pass = 0; pass < 2; pass++) {
		uint64_t flags = pass ? on : 0x2, before = *counter;
		((void (*)(uint64_t))(uintptr_t)f)(flags);
		if (*counter != before + step)
			fprintf(stderr, "%s: counter moved by %llu\n", what, (unsigned long long)(*counter - before));
		CHECK_EQ(*counter, before + step);
		/* seen[0..14]: r15 .. rax pushed last first: rax at 0 */
		for (int r = 0, k = 0; r < 16; r++) {
			if (r == 4)
				continue;
			uint64_t want = (uint64_t)(r + 1) * 0x0101010101010101ull;
			if (seen[k] != want)
				fprintf(stderr, "%s: register %d changed\n", what, r);
			CHECK_EQ(seen[k], want);
			k++;
		}
		if (keeps_flags) {
			if ((seen[15] & on) != (flags & on))
				fprintf(stderr, "%s: flags %#llx, set %#llx\n", what, (unsigned long long)seen[15],
					(unsigned long long)flags);
			CHECK_EQ(seen[15] & on, flags & on);
		}
		for (int k = 0; k < 16; k++) {
			uint64_t want;
			memset(&want, PATTERN, 8);
			if (free >> k & 1)
				continue;
			if (seen[16 + k] != want)
				fprintf(stderr, "%s: red zone word %d changed\n", what, k);
			CHECK_EQ(seen[16 + k], want);
		}
	}
}

static void check_run(uint64_t f, const char *what, bool keeps_flags, uint64_t step)
{
	check_run_free(f, what, keeps_flags, step, 0);
}

/* x86_add_rcx_to_counter adds rcx: the harness sets rcx to 2 * 0x0101.. */
static size_t add_rcx(struct x86_writer *w, uint64_t c, bool atomic) { return x86_add_rcx_to_counter(w, c, atomic); }

struct race { uint64_t f; };

static void *hammer(void *arg)
{
	struct race *r = arg;
	for (int i = 0; i < 200000; i++)
		((void (*)(uint64_t))(uintptr_t)r->f)(0x2);
	return NULL;
}

/* Two threads on one atomic snippet: no increment lost (STEP each). */
static void check_race(uint64_t f, const char *what, uint64_t step)
{
	uint64_t before = *counter;
	struct race r = { f };
	pthread_t t[2];
	for (int i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, hammer, &r);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	if (*counter - before != 400000 * step)
		fprintf(stderr, "%s: %llu added, not 400000 times %llu\n", what,
			(unsigned long long)(*counter - before), (unsigned long long)step);
	CHECK(*counter - before == 400000 * step);
}

/* The snippets on the thread's area (%gs): the signal slot (shim) and the
 * interval countdown (bbv), whose int3 at zero a SIGTRAP handler counts. */
static uint8_t *area;
static volatile int traps;
static uint64_t copy_entry;
static uint32_t signal_id;
static uint32_t countdown_n;

static size_t put_signal(struct x86_writer *w, uint64_t c, bool atomic)
{
	(void)c, (void)atomic;
	CHECK_EQ(x86_signal_set(w, copy_entry, signal_id), 0);
	return 0;
}

static size_t put_countdown(struct x86_writer *w, uint64_t c, bool keep_flags)
{
	(void)c;
	CHECK_EQ(x86_countdown(w, countdown_n, keep_flags), 0);
	return 0;
}

static void on_trap(int sig) { (void)sig; traps++; }

static void check_area_snippets(void)
{
	area = mmap(NULL, TA_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (area == MAP_FAILED || syscall(SYS_arch_prctl, ARCH_SET_GS, (unsigned long)area)) {
		CHECK(!"a thread area at %gs");
		return;
	}
	volatile int64_t *slot = (int64_t *)(area + TA_SIGNAL), *left = (int64_t *)(area + TA_BBV_LEFT);
	/* the slot: an id, sign-extended; or the copy's address, through rax
	 * and the red zone's first word (its documented use) */
	signal_id = 0x80000001u;
	uint64_t f = harness(put_signal, false, false, false);
	check_run(f, "signal id", true, 0);
	CHECK_EQ(*slot, (int64_t)(int32_t)0x80000001u);
	signal_id = 0;
	copy_entry = (uint64_t)(uintptr_t)(page + 0x8000);
	f = harness(put_signal, false, false, false);
	*slot = 0;
	check_run_free(f, "signal entry", true, 0, 1u << 15);
	CHECK_EQ(*slot, (int64_t)copy_entry);
	/* the countdown: N off each run, an int3 when it goes below zero */
	struct sigaction sa = { .sa_handler = on_trap };
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTRAP, &sa, NULL);
	for (int keep = 0; keep < 2; keep++) {
		countdown_n = 3;
		f = harness(put_countdown, keep, false, false);
		*left = 7;
		traps = 0;
		check_run(f, keep ? "countdown keeping flags" : "countdown", keep, 0);   /* two runs: 7 -> 4 -> 1 */
		CHECK_EQ(*left, 1);
		CHECK_EQ(traps, 0);
		*left = 3;   /* down to zero: not below it yet */
		((void (*)(uint64_t))(uintptr_t)f)(0x2);
		CHECK_EQ(*left, 0);
		CHECK_EQ(traps, 0);
		*left = 1;
		((void (*)(uint64_t))(uintptr_t)f)(0x2);   /* 1 -> -2: the interval ends */
		CHECK_EQ(*left, -2);
		CHECK_EQ(traps, 1);
	}
	signal(SIGTRAP, SIG_DFL);
}

int main(void)
{
	page = mmap(NULL, 0x10000, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (page == MAP_FAILED)
		return 77;
	counter = (volatile uint64_t *)(page + 0xf000);
	struct { const char *name; emit_fn emit; bool keeps_flags; uint64_t step; } kinds[] = {
		{ "inc", x86_inc_counter, false, 1 },
		{ "inc keeping flags", x86_inc_counter_keep_flags, true, 1 },
		{ "add rcx", add_rcx, true, 2 * 0x0101010101010101ull },
	};
	for (size_t k = 0; k < sizeof(kinds) / sizeof(*kinds); k++) {
		char what[96];
		for (int mode = 0; mode < 3; mode++) {   /* plain, atomic, switched to atomic */
			bool atomic = mode == 1, switched = mode == 2;
			if (switched && kinds[k].emit == add_rcx)
				continue;   /* its site is switched by its own prefix byte */
			uint64_t f = harness(kinds[k].emit, atomic, switched, kinds[k].keeps_flags);
			snprintf(what, sizeof(what), "%s%s", kinds[k].name,
				 atomic ? " (atomic)" : switched ? " (switched to atomic)" : "");
			check_run(f, what, kinds[k].keeps_flags, kinds[k].step);
			if (atomic || switched)
				check_race(f, what, kinds[k].step);
		}
	}
	/* removed at every column of a fetch block: the counter stays, and
	 * nothing else changes, flags included */
	for (size_t k = 0; k < 2; k++)
		for (int mode = 0; mode < 3; mode++)
			for (sweep_col = 0; sweep_col < 16; sweep_col++) {
				char what[96];
				bool atomic = mode == 1, switched = mode == 2;
				uint64_t f = harness(kinds[k].emit, atomic, switched, kinds[k].keeps_flags);
				snprintf(what, sizeof(what), "%s%s removed at column %d", kinds[k].name,
					 atomic ? " (atomic)" : switched ? " (switched to atomic)" : "", sweep_col);
				/* only a locked or long one ending a block stays */
				bool may_stay = sweep_col == 15 && (kinds[k].keeps_flags || atomic || switched);
				if (!swept_ok && !may_stay)
					fprintf(stderr, "%s: not removed\n", what);
				CHECK(swept_ok || may_stay);
				check_run(f, what, swept_ok || kinds[k].keeps_flags, swept_ok ? 0 : 1);
			}
	sweep_col = -1;
	check_area_snippets();
	return CHECK_DONE();
}
