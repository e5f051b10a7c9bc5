/* What relocating a function needs to know of its binary alone, and copies
 * made from the binary alone: emitted for a made-up placement (link-time
 * addresses, made-up copy and counter addresses) and saved position-free
 * (isa/x86_64/persist.h), a process places them as it places a copy saved
 * by an earlier run. Decoding, analysing and emitting are most of what a
 * first call costs; in a cold run the helper thread of ahead.c does them
 * on the idle CPU, before the call. */
#include <elf.h>
#include <stdlib.h>
#include <string.h>
#include <reticle/collector.h>
#include "engine/engine.h"
#include "isa/x86_64/persist.h"
#include "isa/x86_64/relocate.h"
#include "probe/plan.h"

bool fn_in_exec_segment(const rtl_binary *bin, uint64_t addr, uint64_t len)
{
	for (size_t i = 0; i < rtl_binary_segment_count(bin); i++) {
		const rtl_segment *s = rtl_binary_segment(bin, i);
		if ((s->flags & PF_X) && addr >= s->vaddr && addr + len <= s->vaddr + s->filesz)
			return true;
	}
	return false;
}

/* An executable segment alone is not enough: Rust binaries linked with one
 * read-execute segment keep .rodata in it, and a table of digits (zmij's
 * DIGITS2) read as offsets landed there: the lea of it was sent to a
 * "copy" of that table, and numbers came out wrong (rustup asked for
 * 437809346845567311 bytes). */
bool fn_is_function_code(const rtl_binary *bin, uint64_t addr)
{
	return fn_in_exec_segment(bin, addr, 1) && rtl_binary_find_function(bin, addr);
}

void fn_link_extent(const rtl_binary *bin, uint64_t *lo, uint64_t *hi)
{
	*lo = UINT64_MAX;
	*hi = 0;
	for (size_t i = 0; i < rtl_binary_segment_count(bin); i++) {
		const rtl_segment *s = rtl_binary_segment(bin, i);
		if (s->vaddr < *lo)
			*lo = s->vaddr;
		if (s->vaddr + s->memsz > *hi)
			*hi = s->vaddr + s->memsz;
	}
	*lo &= ~(uint64_t)4095;
}

/* The slice [*lo, *hi) of the binary's code pointers (sorted by target)
 * that point strictly inside F. */
static void code_pointers_into(const rtl_binary *bin, const rtl_function *f, size_t *lo, size_t *hi)
{
	size_t count = rtl_binary_code_pointer_count(bin), a = 0, b = count;
	while (a < b) {
		size_t mid = (a + b) / 2;
		if (rtl_binary_code_pointer(bin, mid)->target <= f->addr)
			a = mid + 1;
		else
			b = mid;
	}
	*lo = a;
	while (a < count && rtl_binary_code_pointer(bin, a)->target < f->addr + f->size)
		a++;
	*hi = a;
}

bool fn_has_code_pointers(const rtl_binary *bin, const rtl_function *f)
{
	size_t lo, hi;
	code_pointers_into(bin, f, &lo, &hi);
	return hi > lo;
}

uint64_t *fn_interior_pointers(const rtl_binary *bin, const rtl_function *f, uint64_t bias, size_t *n)
{
	size_t lo, hi, k = 0;
	code_pointers_into(bin, f, &lo, &hi);
	uint64_t *out = malloc((hi - lo + 1) * sizeof(*out));
	if (!out) {
		*n = 0;
		return NULL;
	}
	for (size_t i = lo; i < hi; i++)
		out[k++] = rtl_binary_code_pointer(bin, i)->target + bias;
	*n = k;
	return out;
}

void fn_code_pointer_slice(const rtl_binary *bin, const rtl_function *f, size_t *lo, size_t *hi)
{
	code_pointers_into(bin, f, lo, hi);
}

bool fn_keeps_caller(const rtl_function *f)
{
	static const char *const names[] = { "dlopen", "dlmopen", "dlsym", "dlvsym",
					     "__libc_dlopen_mode", "__libc_dlsym", "__libc_dlvsym" };
	if (!f->name)
		return false;
	size_t len = strcspn(f->name, "@");   /* dlsym@plt, dlsym@@GLIBC_2.34 */
	for (size_t i = 0; i < sizeof(names) / sizeof(*names); i++)
		if (strlen(names[i]) == len && !strncmp(f->name, names[i], len))
			return true;
	return false;
}

/* ---- copies for no process ---- */

struct made {
	const rtl_binary *bin;
	uint64_t bias;
	uint64_t next_counter;
	const struct probe_set *probes;
	const rtl_function *f;
};

static int made_read(void *c, const uint64_t addr, void *buf, size_t len)
{
	struct made *m = c;
	return rtl_binary_read(m->bin, addr - m->bias, buf, len);
}

/* where another function leads is decided when the copy is placed */
static uint64_t made_redirect(void *c, uint64_t addr)
{
	(void)c;
	return addr;
}

static bool made_is_code(void *c, uint64_t addr)
{
	struct made *m = c;
	return fn_is_function_code(m->bin, addr - m->bias);
}

static bool made_in_function(void *c, uint64_t addr)
{
	struct made *m = c;
	return rtl_binary_find_function(m->bin, addr - m->bias) != NULL;
}

static bool made_is_readonly(void *c, uint64_t addr, size_t len)
{
	struct made *m = c;
	return rtl_binary_is_readonly(m->bin, addr - m->bias, len);
}

static bool made_keeps_caller(void *c, uint64_t target)
{
	struct made *m = c;
	const rtl_function *f = rtl_binary_find_function(m->bin, target - m->bias);
	return f && f->addr + m->bias == target && fn_keeps_caller(f);
}

static uint64_t made_counter(void *c)
{
	struct made *m = c;
	uint64_t a = m->next_counter;
	m->next_counter += 8;
	return a;
}

static int made_plan(void *c, const struct rtl_function_cfg *cfg, struct probe_plan *out)
{
	struct made *m = c;
	return probe_plan_build(m->probes, cfg, rtl_binary_path(m->bin), m->f->name, m->bias, out);
}

int prepare_copy(const rtl_binary *bin, size_t k, const struct probe_set *probes, void **blob,
		 size_t *len)
{
	const rtl_function *f = rtl_binary_function(bin, k);
	if (!f->size || (f->sources & RTL_SRC_PLT) || rtl_binary_has_textrel(bin))
		return -1;
	/* The module where a process would have it: a position-independent
	 * one moved (the relocator's tests see file words, which hold
	 * link-time addresses, as what they are then: not addresses of the
	 * code), an executable at its link-time addresses. The copy and its
	 * counters just after it, within reach of all of it. */
	uint64_t bias = rtl_binary_kind(bin) == RTL_BIN_EXEC ? 0 : 0x7e0000000000ull, lo, hi;
	fn_link_extent(bin, &lo, &hi);
	lo += bias;
	hi += bias;
	uint64_t dest = (hi + (2 << 20)) & ~(uint64_t)0xfffff, counters = dest + (256 << 20);
	struct made made = { bin, bias, counters, probes, f };
	uint8_t *code = malloc(f->size);
	struct x86_insn *insns = NULL;
	size_t ninsns = 0, ninterior = 0;
	uint64_t *interior = fn_interior_pointers(bin, f, bias, &ninterior);
	int err = -1;
	if (!code || !interior || rtl_binary_read(bin, f->addr, code, f->size) ||
	    x86_decode_function(code, f->size, f->addr + bias, &insns, &ninsns))
		goto out;
	struct x86_reloc_env env = {
		.addr = f->addr + bias, .size = f->size, .code = code, .interior = interior, .ninterior = ninterior,
		.read = made_read, .redirect = made_redirect, .is_code = made_is_code,
		.in_function = made_in_function,
		.is_readonly = made_is_readonly, .keeps_caller = made_keeps_caller,
		.new_counter = made_counter, .plan = made_plan, .ctx = &made,
		.insns = insns, .ninsns = ninsns,
		.signal_id = probe_signal_id(bin, (size_t)(f - rtl_binary_function(bin, 0))),
	};
	struct x86_reloc r;
	const char *reason;
	if (x86_relocate(&env, dest, &r, &reason))
		goto out;
	uint64_t targets[256];
	size_t ntargets = x86_external_targets(insns, ninsns, f->addr + bias, f->size, targets, 256);
	struct x86_persist_info info = { .fn = f->addr + bias, .bias = bias, .mod_lo = lo, .mod_hi = hi,
					 .ctr_lo = counters, .ctr_hi = made.next_counter,
					 .targets = targets, .ntargets = ntargets };
	err = x86_persist(&r, &info, blob, len);
	x86_reloc_free(&r);
out:
	free(code);
	free(insns);
	free(interior);
	return err;
}
