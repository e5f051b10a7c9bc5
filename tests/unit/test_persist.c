/* Saved copies (isa/x86_64/persist.h) against the relocator itself: every
 * function of real binaries is emitted for one placement (A), saved,
 * restored for another (B: another copy address, other counters, another
 * load bias where the binary may move, other redirections), and compared
 * with what x86_emit makes for B directly. A field the writer did not log
 * keeps A's value and shows up as a difference. Damaged blobs must be
 * refused or restored without a crash.
 *
 * usage: test_persist [BINARY...] (default: python3.11, libc, lua5.4) */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <reticle/binary.h>
#include <reticle/error.h>
#include "check.h"
#include "elf/code_facts.h"
#include "engine/engine.h"
#include "isa/x86_64/persist.h"
#include "isa/x86_64/relocate.h"

struct place {
	uint64_t bias;        /* the module's load bias */
	uint64_t dest;        /* where copies go */
	uint64_t copies;      /* where other functions' copies are said to be */
	uint64_t ctr, next;   /* counter area, next free counter */
};

static const rtl_binary *bin;
static const struct place *cur;

static int rd(void *ctx, const uint64_t addr, void *buf, size_t len)
{
	(void)ctx;
	return rtl_binary_read(bin, addr - cur->bias, buf, len);
}

static uint64_t mix(uint64_t x)
{
	x ^= x >> 31;
	x *= 0x9e3779b97f4a7c15ull;
	return x ^ (x >> 29);
}

/* Some functions have copies (at a place that depends on the placement),
 * the others are reached at their original address. */
static uint64_t redirect(void *ctx, uint64_t addr)
{
	(void)ctx;
	uint64_t link = addr - cur->bias, h = mix(link);
	return h & 1 ? addr : cur->copies + (h >> 8) % (64u << 20);
}

static bool is_code(void *ctx, uint64_t addr)
{
	(void)ctx;
	for (size_t i = 0; i < rtl_binary_segment_count(bin); i++) {
		const rtl_segment *s = rtl_binary_segment(bin, i);
		if ((s->flags & 1) && addr - cur->bias >= s->vaddr && addr - cur->bias < s->vaddr + s->filesz)
			return true;
	}
	return false;
}

static bool is_readonly(void *ctx, uint64_t addr, size_t len)
{
	(void)ctx;
	return rtl_binary_is_readonly(bin, addr - cur->bias, len);
}

/* one call in eight pushes the original return address (as dlsym's do) */
static bool keeps_caller(void *ctx, uint64_t target)
{
	(void)ctx;
	return mix(target - cur->bias) % 8 == 3;
}

static uint64_t counter(void *ctx)
{
	(void)ctx;
	struct place *p = (struct place *)cur;
	uint64_t c = p->next;
	p->next += 8;
	return c;
}

static struct x86_reloc_env env_for(const rtl_function *f, const uint8_t *code, struct place *p,
				    const uint64_t *in, size_t nin)
{
	cur = p;
	return (struct x86_reloc_env){
		.addr = f->addr + p->bias, .size = f->size, .code = code,
		.interior = in, .ninterior = nin, .read = rd, .redirect = redirect,
		.is_code = is_code, .is_readonly = is_readonly, .keeps_caller = keeps_caller,
		.new_counter = counter, .entry_counter = true, .block_counters = true,
	};
}

struct tally { size_t functions, saved, same, refused_damage; };

static void one(const rtl_function *f, struct place *a, struct place *b, struct tally *t,
		unsigned *seed)
{
	uint8_t *code = malloc(f->size);
	struct x86_reloc ra, rb, fresh;
	const char *reason;
	if (!code || rtl_binary_read(bin, f->addr, code, f->size)) {
		free(code);
		return;
	}
	size_t nin_a, nin_b;
	uint64_t *in_a = fn_interior_pointers(bin, f, a->bias, &nin_a);
	uint64_t *in_b = fn_interior_pointers(bin, f, b->bias, &nin_b);
	struct x86_reloc_env ea = env_for(f, code, a, in_a, nin_a);
	uint64_t ctr_lo = a->next;
	if (x86_relocate(&ea, a->dest, &ra, &reason))
		goto out;   /* not relocatable at all: nothing to save */
	t->functions++;
	struct x86_insn *insns;
	size_t ninsns;
	x86_decode_function(code, f->size, f->addr + a->bias, &insns, &ninsns);
	uint64_t targets[256];
	size_t ntargets = x86_external_targets(insns, ninsns, f->addr + a->bias, f->size, targets, 256);
	free(insns);
	struct x86_persist_info info = { .fn = f->addr + a->bias, .bias = a->bias,
					 .mod_lo = a->bias, .mod_hi = a->bias + (1ull << 31),
					 .ctr_lo = ctr_lo, .ctr_hi = a->next,
					 .targets = targets, .ntargets = ntargets };
	void *blob;
	size_t len;
	if (x86_persist(&ra, &info, &blob, &len)) {
		fprintf(stderr, "not saved: %s\n", f->name);
		x86_reloc_free(&ra);
		goto out;
	}
	t->saved++;
	struct x86_reloc_env eb = env_for(f, code, b, in_b, nin_b);
	uint64_t mark = b->next;
	int err = x86_restore(blob, len, &eb, b->dest, b->bias, &rb);
	b->next = mark;   /* the same counters for the fresh copy */
	int err2 = x86_relocate(&eb, b->dest, &fresh, &reason);
	char why[128];
	const char *diff = err || err2 ? "not restored or not emitted" : x86_reloc_differs(&rb, &fresh, why, sizeof(why));
	if (diff)
		fprintf(stderr, "%s at %#llx: %s\n", f->name, (unsigned long long)f->addr, diff);
	else
		t->same++;
	/* the targets, placed for B */
	uint64_t got[256];
	size_t ngot = 0;
	CHECK(!x86_persisted_targets(blob, len, b->bias, got, 256, &ngot));
	CHECK_EQ(ngot, ntargets);
	for (size_t i = 0; i < ngot && i < ntargets; i++)
		CHECK_EQ(got[i], targets[i] - a->bias + b->bias);
	if (!err)
		x86_reloc_free(&rb);
	if (!err2)
		x86_reloc_free(&fresh);
	/* damaged: a few bytes changed anywhere; refused, or restored (into
	 * the buffers' bounds: no crash) */
	uint8_t *bad = malloc(len);
	for (int k = 0; k < 4; k++) {
		memcpy(bad, blob, len);
		for (int j = 0; j < 3; j++)
			bad[rand_r(seed) % len] ^= (uint8_t)(1 + rand_r(seed) % 255);
		mark = b->next;
		if (x86_restore(bad, len, &eb, b->dest, b->bias, &rb))
			t->refused_damage++;
		else
			x86_reloc_free(&rb);
		b->next = mark;
	}
	CHECK(x86_restore(blob, len - 8, &eb, b->dest, b->bias, &rb) != 0);   /* truncated */
	free(bad);
	free(blob);
	x86_reloc_free(&ra);
out:
	free(in_a);
	free(in_b);
	free(code);
}

static void survey(const char *path)
{
	rtl_binary *b;
	if (rtl_binary_open(path, &b)) {
		fprintf(stderr, "%s: not found, skipped\n", path);
		return;
	}
	bin = b;
	bool pie = rtl_binary_kind(b) != RTL_BIN_EXEC;
	/* the module moves by a page multiple; its copies and counters
	 * within +-2 GiB of it */
	struct place a = { .bias = pie ? 0x7f1200000000ull : 0 }, bb = { .bias = pie ? 0x55aa12345000ull : 0 };
	a.dest = a.bias + 0x50000000;
	a.copies = a.bias + 0x58000000;
	a.ctr = a.next = a.bias + 0x60000000;
	bb.dest = bb.bias + 0x40000000;
	bb.copies = bb.bias + 0x48000000;
	bb.ctr = bb.next = bb.bias + 0x70000000;
	struct tally t = { 0 };
	unsigned seed = 1;
	for (size_t i = 0; i < rtl_binary_function_count(b); i++) {
		const rtl_function *f = rtl_binary_function(b, i);
		if (!f->size || (f->sources & RTL_SRC_PLT))
			continue;
		one(f, &a, &bb, &t, &seed);
		/* the next copies 16-byte aligned apart, as the engine places them */
		a.dest += 0x1000;
		bb.dest += 0x1010;
		bb.next += 8;   /* B's counters do not line up with A's */
	}
	printf("%s: %zu functions relocated, %zu saved, %zu restored as emitted, "
	       "%zu of %zu damaged blobs refused\n", path, t.functions, t.saved, t.same,
	       t.refused_damage, 4 * t.saved);
	CHECK(t.functions > 100);
	CHECK_EQ(t.same, t.saved);
	/* all but a few: what cannot be saved is emitted each run */
	CHECK(t.saved * 100 >= t.functions * 99);
	rtl_binary_close(b);
}

int main(int argc, char **argv)
{
	static const char *const dflt[] = { "/usr/bin/python3.11", "/lib/x86_64-linux-gnu/libc.so.6",
					    "/usr/bin/lua5.4" };
	if (argc > 1)
		for (int i = 1; i < argc; i++)
			survey(argv[i]);
	else
		for (size_t i = 0; i < sizeof(dflt) / sizeof(*dflt); i++)
			survey(dflt[i]);
	return CHECK_DONE();
}
