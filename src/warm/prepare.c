/* Copies made from the binary alone: emitted for a made-up placement
 * (link-time addresses, made-up copy and counter addresses) and saved
 * position-free (isa/x86_64/persist.h), a process places them as it
 * places a copy saved by an earlier run. Decoding, analysing and emitting
 * are most of what a first call costs; in a cold run the helper thread of
 * ahead.c does them on the idle CPU, before the call. */
#include <stdlib.h>
#include <string.h>
#include <reticle/collector.h>
#include "elf/code_facts.h"
#include "isa/x86_64/persist.h"
#include "isa/x86_64/relocate.h"
#include "probe/plan.h"
#include "warm/warm.h"

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

int prepare_copy(const rtl_binary *bin, size_t k, const struct probe_set *probes,
		 struct x86_foreign_cache *fcache, void **blob, size_t *len)
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
		.whole_lines = probes->whole_lines,
		.sample_leaf_timers = probes->sample_leaf_timers,
		.signal_id = probe_signal_id(bin, (size_t)(f - rtl_binary_function(bin, 0))),
	};
	struct x86_reloc r;
	const char *reason;
	uint64_t *foreign = NULL;
	env.foreign = foreign = x86_foreign_entries(bin, bias, f, insns, ninsns, &env.nforeign, &env.foreign_known,
						    fcache, probes->whole_lines);
	err = x86_relocate(&env, dest, &r, &reason);
	free(foreign);
	if (err) {
		err = -1;
		goto out;
	}
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
