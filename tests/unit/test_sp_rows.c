/* The %rsp moves the snippets report (x86_sp_moved), against their own
 * bytes: each snippet that leaves the red zone is emitted, decoded with
 * Zydis instruction by instruction, and the depth below the snippet's
 * entry %rsp that push, pop, pushfq, popfq and 'lea rsp,[rsp+d]' leave
 * after each instruction must be the depth of the last row reported at or
 * before that instruction's end. The unwind builder makes CFA rows of
 * these reports (src/unwind/cfa.c), so a row missing or misplaced here is
 * a wrong unwind from a signal inside the snippet. */
#include <stdint.h>
#include <Zydis/Zydis.h>
#include "check.h"
#include "isa/x86_64/timers.h"
#include "isa/x86_64/writer.h"

enum { BASE = 0x10000000, COUNTER = BASE + 0x1000 };

/* The change of %rsp made by an instruction, by what it is. */
static long sp_delta(const ZydisDecodedInstruction *in, const ZydisDecodedOperand *ops)
{
	switch (in->mnemonic) {
	case ZYDIS_MNEMONIC_PUSH:
	case ZYDIS_MNEMONIC_PUSHFQ:
		return -8;
	case ZYDIS_MNEMONIC_POP:
	case ZYDIS_MNEMONIC_POPFQ:
		return 8;
	case ZYDIS_MNEMONIC_LEA:
		if (ops[0].type == ZYDIS_OPERAND_TYPE_REGISTER && ops[0].reg.value == ZYDIS_REGISTER_RSP &&
		    ops[1].mem.base == ZYDIS_REGISTER_RSP && ops[1].mem.index == ZYDIS_REGISTER_NONE)
			return ops[1].mem.disp.value;
		return 0;
	default:
		return 0;
	}
}

/* Walks W's bytes in order; returns how many instruction ends were checked. */
static int check_rows(const char *what, const struct x86_writer *w, bool moves)
{
	ZydisDecoder dec;
	ZydisDecoderInit(&dec, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64);
	long depth = 0, deepest = 0;
	size_t off = 0, row = 0;
	int ends = 0;
	CHECK(!w->failed);
	while (off < w->len) {
		ZydisDecodedInstruction in;
		ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
		if (!ZYAN_SUCCESS(ZydisDecoderDecodeFull(&dec, w->buf + off, w->len - off, &in, ops))) {
			fprintf(stderr, "%s: undecodable byte at +%zu\n", what, off);
			CHECK(0);
			return ends;
		}
		depth -= sp_delta(&in, ops);
		if (depth > deepest)
			deepest = depth;
		off += in.length;
		/* rows take effect after an instruction, never inside one */
		while (row < w->nrows && w->rows[row].off <= off) {
			if (w->rows[row].off != off) {
				fprintf(stderr, "%s: row at +%u inside an instruction\n", what, w->rows[row].off);
				CHECK(0);
			}
			row++;
		}
		long reported = row ? (long)w->rows[row - 1].below : 0;
		if (reported != depth)
			fprintf(stderr, "%s: after +%zu, %%rsp %ld below, reported %ld\n", what, off, depth, reported);
		CHECK_EQ(reported, depth);
		ends++;
	}
	CHECK_EQ(depth, 0);            /* back where it started */
	CHECK_EQ(row, w->nrows);       /* no row past the end */
	CHECK_EQ(deepest > 0, moves);
	return ends;
}

static void check_snippet(const char *what, void (*emit)(struct x86_writer *), bool moves)
{
	struct x86_writer w;
	x86_writer_init(&w, BASE);
	emit(&w);
	CHECK(check_rows(what, &w, moves) > 0);
	x86_writer_free(&w);
}

static void inc_keep_flags(struct x86_writer *w) { x86_inc_counter_keep_flags(w, COUNTER, false); }
static void inc_keep_flags_atomic(struct x86_writer *w) { x86_inc_counter_keep_flags(w, COUNTER, true); }
static void inc_plain(struct x86_writer *w) { x86_inc_counter(w, COUNTER, false); }
static void add_rcx(struct x86_writer *w) { x86_add_rcx_to_counter(w, COUNTER, false); }
static void add_rcx_atomic(struct x86_writer *w) { x86_add_rcx_to_counter(w, COUNTER, true); }
static void countdown_keep_flags(struct x86_writer *w) { CHECK_EQ(x86_countdown(w, 1000, true), 0); }
static void countdown(struct x86_writer *w) { CHECK_EQ(x86_countdown(w, 1000, false), 0); }

/* repe cmpsb between its counting snippets, as the relocator emits it */
static void rep_cond(struct x86_writer *w)
{
	static const uint8_t repe_cmpsb[] = { 0xf3, 0xa6 };
	size_t skip = x86_rep_cond_skip(w);
	x86_add_rcx_to_counter(w, COUNTER, false);
	x86_put(w, repe_cmpsb, sizeof(repe_cmpsb));
	x86_sub_rcx_after_rep_cond(w, COUNTER + 8, false, false);
	x86_rep_cond_land(w, skip);
}

/* Two snippets in a row, with code between them: rows stay in order. */
static void sequence(struct x86_writer *w)
{
	static const uint8_t mov[] = { 0x48, 0x89, 0xc3 };   /* mov rbx,rax */
	x86_inc_counter_keep_flags(w, COUNTER, false);
	x86_put(w, mov, sizeof(mov));
	x86_add_rcx_to_counter(w, COUNTER + 8, true);
	x86_put(w, mov, sizeof(mov));
	x86_inc_counter_keep_flags(w, COUNTER + 16, true);
}

int main(void)
{
	check_snippet("counter keeping the flags", inc_keep_flags, true);
	check_snippet("atomic counter keeping the flags", inc_keep_flags_atomic, true);
	check_snippet("plain counter", inc_plain, false);
	check_snippet("rep iterations", add_rcx, true);
	check_snippet("atomic rep iterations", add_rcx_atomic, true);
	check_snippet("repe cmps iterations", rep_cond, true);
	check_snippet("countdown keeping the flags", countdown_keep_flags, true);
	check_snippet("countdown", countdown, false);
	check_snippet("snippets in a row", sequence, true);
	return CHECK_DONE();
}
