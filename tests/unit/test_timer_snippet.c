/* The timer snippets (isa/x86_64/timers.c), run for real: a function made
 * of 'timer start; if (n) f(n - 1); timer stop; ret' is emitted into an
 * executable page and run with %gs at a thread area of its own, recursing
 * deeper than an area has frames. Checks that it comes back (a jump of
 * the entry snippet once wrapped past its rel8 and looped), the timer's
 * calls and active frames, the stack top back at the sentinel, one context
 * node per level that had a frame (found again, not taken again, on a
 * second run), the registers the snippets borrow given back, and a frame
 * left without its return (longjmp) closed by the next entry. */
#include <asm/prctl.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "check.h"
#include "isa/x86_64/timers.h"
#include "runtime/thread_area.h"

static uint8_t *page;
static uint64_t *desc;          /* the timer's offset, as the engine writes it */

/* f(n): timer start; if (n) { n - 1 == HOOK_AT ? hook() : f(n - 1) };
 * timer stop; ret. */
static uint64_t emit_f(void (*hook)(void), uint64_t hook_at)
{
	struct x86_writer w;
	uint64_t at = (uint64_t)(uintptr_t)page;
	x86_writer_init(&w, at);
	CHECK_EQ(x86_timer_start(&w, (uint64_t)(uintptr_t)desc, false), 0);
	size_t s = w.len;
	static const uint8_t body[] = {
		0x48, 0x85, 0xff,                 /* +0 test rdi,rdi */
		0x0f, 0x84, 45, 0, 0, 0,          /* +3 jz out (+54) */
		0x48, 0x83, 0xec, 0x08,           /* +9 sub rsp,8: calls with the stack aligned */
		0x48, 0xff, 0xcf,                 /* +13 dec rdi */
		0x48, 0xb8,                       /* +16 movabs rax,HOOK_AT */
	};
	x86_put(&w, body, sizeof(body));
	x86_put_u64(&w, hook_at);
	static const uint8_t pick[] = {
		0x48, 0x39, 0xc7,                 /* +26 cmp rdi,rax */
		0x75, 14,                         /* +29 jne self (+45) */
		0x48, 0xb8,                       /* +31 movabs rax,hook */
	};
	x86_put(&w, pick, sizeof(pick));
	x86_put_u64(&w, (uint64_t)(uintptr_t)hook);
	static const uint8_t calls[] = {
		0xff, 0xd0,                       /* +41 call rax */
		0xeb, 0x05,                       /* +43 jmp back (+50) */
		0xe8, 0, 0, 0, 0,                 /* +45 self: call f */
		0x48, 0x83, 0xc4, 0x08,           /* +50 back: add rsp,8 */
	};                                        /* +54 out: */
	x86_put(&w, calls, sizeof(calls));
	int32_t rel = (int32_t)(0 - (int64_t)(s + 50));
	memcpy(w.buf + s + 46, &rel, 4);
	CHECK_EQ(w.len, s + 54);
	CHECK_EQ(x86_timer_stop(&w), 0);
	x86_put_u8(&w, 0xc3);
	CHECK(!w.failed && w.len < 0x1800);
	memcpy(page, w.buf, w.len);
	x86_writer_free(&w);
	return at;
}

/* leaf(): the sampled timer start; timer stop; ret. */
static uint64_t emit_leaf(void)
{
	struct x86_writer w;
	uint64_t at = (uint64_t)(uintptr_t)page;
	x86_writer_init(&w, at);
	CHECK_EQ(x86_timer_start(&w, (uint64_t)(uintptr_t)desc, true), 0);
	CHECK_EQ(x86_timer_stop(&w), 0);
	x86_put_u8(&w, 0xc3);
	CHECK(!w.failed && w.len < 0x1800);
	memcpy(page, w.buf, w.len);
	x86_writer_free(&w);
	return at;
}

static void no_hook(void) {}

static jmp_buf env;
static void jump_out(void) { longjmp(env, 1); }

/* Calls F(N) with rcx, rdx and rsi checked to come back (f touches no
 * other register but rax and rdi; the snippets borrow more). */
static void run(uint64_t f, uint64_t n)
{
	uint64_t before = 0x1122334455667788ull, rcx = before, rdx = before + 1, rsi = before + 2, rdi = n;
	__asm__ volatile("sub $128, %%rsp\n\tcall *%[f]\n\tadd $128, %%rsp"
			 : "+c"(rcx), "+d"(rdx), "+S"(rsi), "+D"(rdi)
			 : [f] "r"(f)
			 : "rax", "r8", "r9", "r10", "r11", "memory", "cc");
	CHECK(rcx == before && rdx == before + 1 && rsi == before + 2);   /* rdi: f counts it down */
}

int main(void)
{
	struct thread_region r;
	CHECK_EQ(thread_region_init(&r), 0);
	thread_region_place(&r, (uint64_t)(uintptr_t)r.local);   /* run here: reticle's view is the target's */
	unsigned k = thread_region_take(&r);
	CHECK(k > 0);
	uint8_t *a = thread_area_local(&r, k);
	uint64_t base = thread_area_addr(&r, k);
	CHECK_EQ(syscall(SYS_arch_prctl, ARCH_SET_GS, base), 0);

	page = mmap(NULL, 0x2000, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(page != MAP_FAILED);
	desc = (uint64_t *)(page + 0x1800);
	*desc = TA_WORDS;   /* timer 0 */
	const struct ta_timer *t = (const struct ta_timer *)(a + TA_WORDS);
	const uint64_t frames = (TA_FRAMES_LIMIT - TA_FRAMES) / TA_FRAME_SIZE + 1;

	/* deeper than the frames: entries counted, the first FRAMES timed */
	enum { DEPTH = 40000 };
	uint64_t f = emit_f(no_hook, ~0ull);
	run(f, DEPTH);
	CHECK_EQ(t->calls, DEPTH + 1);
	CHECK_EQ(t->active, 0);
	CHECK(t->inclusive > 0);
	CHECK_EQ(((uint64_t *)a)[TA_TOP / 8], base + TA_FRAMES);
	size_t n;
	const struct ta_node *nodes = thread_area_nodes(a, &n);
	CHECK_EQ(n, frames);
	int bad = 0;
	for (size_t i = 1; i <= n && bad < 3; i++)
		if (nodes[i].calls != 1) {
			CHECK_EQ(nodes[i].calls, 1);
			bad++;
		}
	/* again: the same paths, found */
	run(f, DEPTH);
	nodes = thread_area_nodes(a, &n);
	CHECK_EQ(n, frames);
	CHECK_EQ(nodes[1].calls, 2);
	CHECK_EQ(nodes[n].calls, 2);
	CHECK_EQ(t->calls, 2 * (DEPTH + 1));

	/* 10 levels, then a longjmp out of the innermost: its frames stay open
	 * until the next entry at or above them closes them */
	f = emit_f(jump_out, 0);
	if (!setjmp(env))
		run(f, 10);
	CHECK_EQ(t->active, 10);
	f = emit_f(no_hook, ~0ull);
	run(f, 0);
	CHECK_EQ(t->active, 0);
	CHECK_EQ(((uint64_t *)a)[TA_TOP / 8], base + TA_FRAMES);

	/* a sampled leaf: every call counted, in its timer and in its one
	 * node; after the first TA_LEAF_FIRST, one in 9 to 24 timed, the
	 * others' counted as untimed */
	thread_region_give(&r, k);
	CHECK_EQ(thread_region_take(&r), k);
	enum { CALLS = 4000 };
	f = emit_leaf();
	for (int i = 0; i < CALLS; i++)
		run(f, 0);
	CHECK_EQ(t->calls, CALLS);
	CHECK_EQ(t->active, 0);
	CHECK(t->inclusive > 0);
	CHECK_EQ(((uint64_t *)a)[TA_TOP / 8], base + TA_FRAMES);
	nodes = thread_area_nodes(a, &n);
	CHECK_EQ(n, 1);
	CHECK_EQ(nodes[1].calls, CALLS);
	const uint64_t *untimed = (const uint64_t *)(a + TA_UNTIMED);
	uint64_t eligible = CALLS - TA_LEAF_FIRST;
	CHECK(untimed[1] >= eligible - eligible / 9 - 1 && untimed[1] <= eligible - eligible / 25 + 1);
	int64_t left = (int64_t)untimed[0];   /* TA_LEAF_LEFT */
	CHECK(left >= 0 && left <= 23);

	/* frames left below (a longjmp out of f) are closed by the leaf's
	 * entry, which then times the call */
	f = emit_f(jump_out, 0);
	if (!setjmp(env))
		run(f, 3);
	CHECK_EQ(t->active, 3);
	f = emit_leaf();
	run(f, 0);
	CHECK_EQ(t->active, 0);
	CHECK_EQ(((uint64_t *)a)[TA_TOP / 8], base + TA_FRAMES);
	CHECK_EQ(syscall(SYS_arch_prctl, ARCH_SET_GS, 0), 0);
	thread_region_free(&r);
	return CHECK_DONE();
}
