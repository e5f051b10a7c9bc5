/* The sampler's unwinder from a PC inside a snippet that moved %rsp: a
 * counter that keeps the flags pushes them below the red zone, so %rsp
 * there is 136 bytes below its value at the original instruction, whose
 * call-frame information the unwinder uses. The snippet is written by the
 * code writer (x86_countdown's flag-keeping form, with its %rsp rows) as
 * the code of callee()'s first instruction in a made-up copy; a stack is
 * laid out as the thread would have it: callee's return address into
 * caller() at its entry %rsp, the flags and rax pushed below the red zone.
 * From every instruction of the snippet, the walk must give callee, then
 * caller; the oracle is the writer's own bytes decoded by how far each
 * instruction moves %rsp (test_sp_rows.c checks the rows against them),
 * and the same walk without the rows (sp_below NULL) must go wrong inside
 * the snippet, so the test can fail. */
#include <link.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "check.h"
#include "isa/x86_64/timers.h"
#include "isa/x86_64/writer.h"
#include "os/linux/perf_ring.h"
#include "sample/sample.h"

enum { COPY = 0x7e0000000000ull };

__attribute__((noinline)) int callee(int x)
{
	__asm__ volatile("" ::: "memory");
	return x * 3 + 1;
}

__attribute__((noinline)) int caller(int x)
{
	return callee(x) + callee(x + 1);
}

struct env {
	char exe[PATH_MAX];
	uint64_t bias, lo, hi;    /* the executable's text */
	const struct x86_writer *w;
};

static int first_object(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	struct env *e = data;
	e->bias = info->dlpi_addr;
	for (int i = 0; i < info->dlpi_phnum; i++)
		if (info->dlpi_phdr[i].p_type == PT_LOAD && (info->dlpi_phdr[i].p_flags & PF_X)) {
			e->lo = info->dlpi_addr + info->dlpi_phdr[i].p_vaddr;
			e->hi = e->lo + info->dlpi_phdr[i].p_memsz;
		}
	return 1;   /* the first is the executable */
}

static bool module_at(void *user, uint64_t pc, const char **path, uint64_t *bias)
{
	struct env *e = user;
	if (pc < e->lo || pc >= e->hi)
		return false;
	*path = e->exe;
	*bias = e->bias;
	return true;
}

static uint64_t original(void *user, uint64_t pc, bool exact)
{
	(void)exact;
	struct env *e = user;
	return pc >= COPY && pc < COPY + e->w->len ? (uint64_t)(uintptr_t)callee : 0;
}

static uint32_t sp_below(void *user, uint64_t pc)
{
	struct env *e = user;
	return pc >= COPY && pc < COPY + e->w->len ? x86_sp_below(e->w->rows, e->w->nrows, (uint32_t)(pc - COPY)) : 0;
}

/* The depth below the snippet's entry %rsp before the instruction at OFF,
 * from the bytes (the instructions x86_countdown writes). */
static uint32_t depth_at(const struct x86_writer *w, size_t off)
{
	static const uint8_t down[] = { 0x48, 0x8d, 0x64, 0x24, 0x80 }, up[] = { 0x48, 0x8d, 0xa4, 0x24 };
	uint32_t d = 0;
	for (size_t i = 0; i < off && i < w->len;) {
		if (!memcmp(w->buf + i, down, sizeof(down))) {
			d += 128;
			i += sizeof(down);
		} else if (!memcmp(w->buf + i, up, sizeof(up))) {
			d -= 128;
			i += 8;
		} else if (w->buf[i] == 0x9c) {   /* pushfq */
			d += 8;
			i++;
		} else if (w->buf[i] == 0x9d) {   /* popfq */
			d -= 8;
			i++;
		} else {
			i++;
		}
	}
	return d;
}

int main(void)
{
	struct env e = { 0 };
	ssize_t n = readlink("/proc/self/exe", e.exe, sizeof(e.exe) - 1);
	CHECK(n > 0);
	dl_iterate_phdr(first_object, &e);
	CHECK(e.hi > e.lo);
	struct x86_writer w;
	x86_writer_init(&w, COPY);
	CHECK_EQ(x86_countdown(&w, 7, true), 0);
	CHECK(w.nrows >= 2);
	e.w = &w;
	/* the thread's stack: callee entered from caller, so its entry %rsp
	 * holds a return address into caller; 256 bytes of room below */
	enum { ROOM = 256 };
	uint64_t stack_words[64 + ROOM / 8];
	memset(stack_words, 0x5a, sizeof(stack_words));
	uint64_t ret = (uint64_t)(uintptr_t)caller + 9;   /* inside caller, past its entry */
	uint64_t base = 0x7ff000000000ull;                 /* made-up run-time address of stack_words */
	uint64_t entry_sp = base + ROOM;
	stack_words[ROOM / 8] = ret;
	stack_words[ROOM / 8 + 1] = 0;                     /* caller's own return: the walk ends there or soon */
	struct unw_mods *mods = unw_mods_new();
	CHECK(mods != NULL);
	int positions = 0, wrong_without = 0;
	for (size_t off = 0; off < w.len; off++) {
		uint32_t d = depth_at(&w, off);
		uint64_t regs[PR_NREGS] = { 0 };
		regs[PR_IP] = COPY + off;
		regs[PR_SP] = entry_sp - d;
		const uint8_t *stack = (const uint8_t *)stack_words + (ROOM - d);
		size_t len = sizeof(stack_words) - (ROOM - d);
		uint64_t frames[8], cfas[8];
		bool truncated;
		struct unw_frame_env env = { module_at, original, &e, sp_below };
		size_t nf = unw_stack(mods, &env, regs, stack, len, frames, cfas, 8, &truncated);
		if (x86_sp_below(w.rows, w.nrows, (uint32_t)off) != d)
			continue;   /* inside an instruction that moves %rsp: no row can say */
		positions++;
		CHECK(nf >= 2);
		if (nf >= 2) {
			CHECK_EQ(frames[0], (uint64_t)(uintptr_t)callee);
			CHECK_EQ(frames[1], ret - 1);
			CHECK_EQ(cfas[0], entry_sp + 8);
		}
		env.sp_below = NULL;
		nf = unw_stack(mods, &env, regs, stack, len, frames, cfas, 8, &truncated);
		wrong_without += d && (nf < 2 || frames[1] != ret - 1);
	}
	CHECK(positions > 10);
	CHECK(wrong_without > 0);   /* the rows matter: without them the walk goes wrong below the red zone */
	unw_mods_free(mods);
	x86_writer_free(&w);
	return CHECK_DONE();
}
