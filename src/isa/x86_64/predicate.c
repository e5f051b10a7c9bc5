/* The guard of a snippet with predicates. Each predicate loads its operand
 * into rax, extended to 64 bits as its size and sign say, compares it with
 * its value and jumps out on failure: no call, no flags kept (they are
 * dead where these snippets go). rax is kept at [rsp-64] and r11 (for a
 * value beyond an imm32) at [rsp-72], below the words the timer and arc
 * snippets use, so a guarded snippet runs with every register as it was
 * (rax restored before it, and again where the failed tests land). */
#include <errno.h>
#include <reticle/error.h>
#include "isa/x86_64/predicate.h"
#include "runtime/thread_area.h"

#define D32(v) (uint8_t)(v), (uint8_t)((v) >> 8), (uint8_t)((v) >> 16), (uint8_t)((v) >> 24)
/* disp8 of field OFF of the frame below the one rcx points at */
#define FRAME(off) (uint8_t)(0x100 - TA_FRAME_SIZE + (off))

/* The argument registers' numbers: rdi, rsi, rdx, rcx, r8, r9. */
static const uint8_t arg_reg[6] = { 7, 6, 2, 1, 8, 9 };

/* rax := register REG (or, with MEM, the memory at [rax]) read as SIZE
 * bytes, sign- or zero-extended. */
static void load(struct x86_writer *w, uint8_t reg, bool mem, uint8_t size, bool is_unsigned)
{
	uint8_t b = reg >> 3, modrm = mem ? 0x00 : (uint8_t)(0xc0 | (reg & 7));
	uint8_t rexw = (uint8_t)(0x48 | b), rex = (uint8_t)(0x40 | b);
	switch (size) {
	case 8: {
		uint8_t op[] = { rexw, 0x8b, modrm };                     /* mov rax,r/m64 */
		x86_put(w, op, sizeof(op));
		break;
	}
	case 4:
		if (is_unsigned) {                                       /* mov eax,r/m32 */
			if (b)
				x86_put_u8(w, rex);
			uint8_t op[] = { 0x8b, modrm };
			x86_put(w, op, sizeof(op));
		} else {
			uint8_t op[] = { rexw, 0x63, modrm };             /* movsxd rax,r/m32 */
			x86_put(w, op, sizeof(op));
		}
		break;
	default: {   /* movzx/movsx rax,r/m16 or r/m8 (REX.W: sil and dil, not dh and bh) */
		uint8_t code = (uint8_t)((size == 2 ? 0xb7 : 0xb6) | (is_unsigned ? 0 : 0x08));
		uint8_t op[] = { rexw, 0x0f, code, modrm };
		x86_put(w, op, sizeof(op));
		break;
	}
	}
}

/* The jcc opcode (short form) taken when "rax CMP value" fails. */
static uint8_t fails(uint8_t cmp, bool is_unsigned)
{
	switch (cmp) {
	case RTL_CMP_EQ: return 0x75;                    /* jne */
	case RTL_CMP_NE: return 0x74;                    /* je */
	case RTL_CMP_LT: return is_unsigned ? 0x73 : 0x7d;   /* jae / jge */
	case RTL_CMP_LE: return is_unsigned ? 0x77 : 0x7f;   /* ja / jg */
	case RTL_CMP_GT: return is_unsigned ? 0x76 : 0x7e;   /* jbe / jle */
	default: return is_unsigned ? 0x72 : 0x7c;           /* GE: jb / jl */
	}
}

/* The frame walks keep rcx and rdx below the guard's words, and start at
 * the top of the thread's frame stack. */
static const uint8_t keep_rcx_rdx[] = {
	0x48, 0x89, 0x4c, 0x24, 0xb0,   /* mov [rsp-80],rcx */
	0x48, 0x89, 0x54, 0x24, 0xa8,   /* mov [rsp-88],rdx */
};
static const uint8_t rcx_top[] = { 0x65, 0x48, 0x8b, 0x0c, 0x25, D32(TA_TOP) };   /* mov rcx,gs:[TOP] */
static const uint8_t give_rcx_rdx[] = {
	0x48, 0x8b, 0x54, 0x24, 0xa8,   /* mov rdx,[rsp-88] */
	0x48, 0x8b, 0x4c, 0x24, 0xb0,   /* mov rcx,[rsp-80] */
};
static const uint8_t prev_frame[] = { 0x48, 0x83, 0xe9, TA_FRAME_SIZE };   /* sub rcx,FRAME */

/* rax := the ticks since this frame's entry as the timer at area offset
 * TIMER pushed it (a frame whose stack pointer is this one's: before a
 * return, the function's own), -1 when there is none. Frames above it
 * with a lower stack pointer were left without their exits and are passed
 * over. rcx and rdx kept at [rsp-80] and [rsp-88]. */
static void latency(struct x86_writer *w, uint32_t timer)
{
	static const uint8_t now[] = {
		0x0f, 0x31,                     /* rdtsc */
		0x48, 0xc1, 0xe2, 0x20,         /* shl rdx,32 */
		0x48, 0x09, 0xd0,               /* or rax,rdx: now */
	};
	static const uint8_t cmp_sp[] = { 0x48, 0x39, 0x61, FRAME(0) };             /* cmp [rcx-FRAME],rsp */
	uint8_t cmp_timer[] = { 0x48, 0x81, 0x79, FRAME(8), D32(timer) };         /* cmp qword [rcx-FRAME+8],T */
	static const uint8_t elapsed[] = { 0x48, 0x2b, 0x41, FRAME(16) };           /* sub rax,[rcx-FRAME+16] */
	static const uint8_t none[] = { 0x48, 0xc7, 0xc0, 0xff, 0xff, 0xff, 0xff };   /* mov rax,-1 */
	x86_put(w, keep_rcx_rdx, sizeof(keep_rcx_rdx));
	x86_put(w, now, sizeof(now));
	x86_put(w, rcx_top, sizeof(rcx_top));
	size_t loop = w->len;
	x86_put(w, cmp_sp, sizeof(cmp_sp));
	size_t to_none = x86_jump8(w, 0x77);       /* ja: above this frame, so none */
	size_t to_next = x86_jump8(w, 0x72);       /* jb: left below it */
	x86_put(w, cmp_timer, sizeof(cmp_timer));
	size_t to_found = x86_jump8(w, 0x74);      /* je */
	x86_land8(w, to_next);
	x86_put(w, prev_frame, sizeof(prev_frame));
	x86_jump8_back(w, 0xeb, loop);
	x86_land8(w, to_found);
	x86_put(w, elapsed, sizeof(elapsed));
	size_t to_out = x86_jump8(w, 0xeb);
	x86_land8(w, to_none);
	x86_put(w, none, sizeof(none));
	x86_land8(w, to_out);
	x86_put(w, give_rcx_rdx, sizeof(give_rcx_rdx));
}

/* rax := 1 when a frame the timer at area offset TIMER pushed is on the
 * thread's stack, else 0: one at or above the stack pointer whose return
 * address is still in its place (a frame left by longjmp, whose word was
 * overwritten by later calls, is not, even before it is closed). rcx and
 * rdx kept at [rsp-80] and [rsp-88]. */
static void onstack(struct x86_writer *w, uint32_t timer)
{
	static const uint8_t zero[] = { 0x31, 0xc0 };                               /* xor eax,eax */
	static const uint8_t sentinel[] = { 0x48, 0x83, 0x79, FRAME(0), 0xff };   /* cmp qword [rcx-FRAME],-1 */
	uint8_t cmp_timer[] = { 0x48, 0x81, 0x79, FRAME(8), D32(timer) };       /* cmp qword [rcx-FRAME+8],T */
	static const uint8_t sp[] = { 0x48, 0x8b, 0x51, FRAME(0),               /* mov rdx,[rcx-FRAME]: its sp */
				      0x48, 0x39, 0xe2 };                       /* cmp rdx,rsp */
	static const uint8_t ret[] = { 0x48, 0x8b, 0x12,                        /* mov rdx,[rdx] */
				       0x48, 0x3b, 0x51, FRAME(40) };           /* cmp rdx,[rcx-FRAME+40]: its ret */
	static const uint8_t yes[] = { 0xb0, 0x01 };                            /* mov al,1 */
	x86_put(w, keep_rcx_rdx, sizeof(keep_rcx_rdx));
	x86_put(w, zero, sizeof(zero));
	x86_put(w, rcx_top, sizeof(rcx_top));
	size_t loop = w->len;
	x86_put(w, sentinel, sizeof(sentinel));
	size_t to_end = x86_jump8(w, 0x74);        /* je: the bottom, none */
	x86_put(w, cmp_timer, sizeof(cmp_timer));
	size_t not_timer = x86_jump8(w, 0x75);     /* jne */
	x86_put(w, sp, sizeof(sp));
	size_t below = x86_jump8(w, 0x72);         /* jb: left below the stack pointer */
	x86_put(w, ret, sizeof(ret));
	size_t to_yes = x86_jump8(w, 0x74);        /* je: still there */
	x86_land8(w, not_timer);
	x86_land8(w, below);
	x86_put(w, prev_frame, sizeof(prev_frame));
	x86_jump8_back(w, 0xeb, loop);
	x86_land8(w, to_yes);
	x86_put(w, yes, sizeof(yes));
	x86_land8(w, to_end);
	x86_put(w, give_rcx_rdx, sizeof(give_rcx_rdx));
}

/* rax := its power-of-two bucket: 0 for 0, K+1 for [2^K, 2^(K+1)), -1
 * below 0. */
static void log2_bucket(struct x86_writer *w)
{
	static const uint8_t test[] = { 0x48, 0x85, 0xc0 };           /* test rax,rax */
	static const uint8_t bsr[] = { 0x48, 0x0f, 0xbd, 0xc0,        /* bsr rax,rax */
				       0x48, 0xff, 0xc0 };            /* inc rax */
	static const uint8_t neg[] = { 0x48, 0xc7, 0xc0, 0xff, 0xff, 0xff, 0xff };   /* mov rax,-1 */
	x86_put(w, test, sizeof(test));
	size_t to_neg = x86_jump8(w, 0x78);     /* js */
	size_t to_zero = x86_jump8(w, 0x74);    /* jz: bucket 0 */
	x86_put(w, bsr, sizeof(bsr));
	size_t to_done = x86_jump8(w, 0xeb);
	x86_land8(w, to_neg);
	x86_put(w, neg, sizeof(neg));
	x86_land8(w, to_zero);
	x86_land8(w, to_done);
}

int x86_load_operand(struct x86_writer *w, const struct rtl_predicate *q)
{
	switch (q->operand) {
	case RTL_OPND_ARG:
		if (q->index >= 6)
			return -RTL_ERR_UNSUPPORTED;
		load(w, arg_reg[q->index], false, q->size, q->is_unsigned);
		break;
	case RTL_OPND_RETVAL:
		load(w, 0, false, q->size, q->is_unsigned);
		break;
	case RTL_OPND_REG:
		if (q->index >= 16 || q->index == 4)
			return -RTL_ERR_UNSUPPORTED;
		load(w, q->index, false, q->size, q->is_unsigned);
		break;
	case RTL_OPND_GLOBAL:
		x86_put_u8(w, 0x48);                                     /* movabs rax,WHERE */
		x86_put_u8(w, 0xb8);
		x86_put_u64(w, q->where);
		load(w, 0, true, q->size, q->is_unsigned);
		break;
	case RTL_OPND_ONSTACK:
		if (q->where < 1 || q->where > RTL_MAX_TIMER_ID)
			return -RTL_ERR_UNSUPPORTED;
		onstack(w, (uint32_t)(TA_WORDS + q->where * sizeof(struct ta_timer)));
		break;
	case RTL_OPND_LATENCY:
		if (q->where < 1 || q->where > RTL_MAX_TIMER_ID)
			return -RTL_ERR_UNSUPPORTED;
		latency(w, (uint32_t)(TA_WORDS + q->where * sizeof(struct ta_timer)));
		break;
	default:
		return -RTL_ERR_UNSUPPORTED;
	}
	if (q->log2)
		log2_bucket(w);
	return w->failed ? -ENOMEM : 0;
}

static int test(struct x86_writer *w, const struct rtl_predicate *q, size_t *skip)
{
	static const uint8_t reload[] = { 0x48, 0x8b, 0x44, 0x24, 0xc0 };   /* mov rax,[rsp-64] */
	/* rax itself: as it was, not as an earlier test left it */
	if (q->operand == RTL_OPND_RETVAL || (q->operand == RTL_OPND_REG && q->index == 0))
		x86_put(w, reload, sizeof(reload));
	int err = x86_load_operand(w, q);
	if (err)
		return err;
	if (q->value == (int32_t)q->value) {
		uint8_t op[] = { 0x48, 0x3d, D32((uint32_t)q->value) };      /* cmp rax,imm32 */
		x86_put(w, op, sizeof(op));
	} else {
		static const uint8_t save[] = { 0x4c, 0x89, 0x5c, 0x24, 0xb8, 0x49, 0xbb };   /* mov [rsp-72],r11; movabs r11, */
		static const uint8_t cmp[] = { 0x4c, 0x39, 0xd8,             /* cmp rax,r11 */
					       0x4c, 0x8b, 0x5c, 0x24, 0xb8 };   /* mov r11,[rsp-72] */
		x86_put(w, save, sizeof(save));
		x86_put_u64(w, (uint64_t)q->value);
		x86_put(w, cmp, sizeof(cmp));
	}
	*skip = x86_jump32(w, fails(q->cmp, q->is_unsigned));
	return 0;
}

int x86_guard_begin(struct x86_writer *w, const struct rtl_predicate *q, size_t n, struct x86_guard *g)
{
	static const uint8_t save[] = { 0x48, 0x89, 0x44, 0x24, 0xc0 };   /* mov [rsp-64],rax */
	if (n > X86_GUARD_MAX)
		return -RTL_ERR_UNSUPPORTED;
	g->n = 0;
	if (!n)
		return 0;
	static const uint8_t restore[] = { 0x48, 0x8b, 0x44, 0x24, 0xc0 };   /* mov rax,[rsp-64] */
	x86_put(w, save, sizeof(save));
	/* alternatives (or_after): a failed test goes on to the next one's
	 * first test, the last one's out; one whose tests all held jumps to
	 * the snippet */
	size_t next[X86_GUARD_MAX], nnext = 0, body[X86_GUARD_MAX], nbody = 0;
	for (size_t i = 0; i < n; i++) {
		bool last = i + 1 == n || q[i].or_after;
		size_t at;
		int err = test(w, &q[i], &at);
		if (err)
			return err;
		if (i + 1 < n && q[i].or_after)
			next[nnext++] = at;   /* landed at the next alternative */
		else
			g->skips[g->n++] = at;
		if (last && i + 1 < n) {
			body[nbody++] = x86_jump32(w, 0xeb);   /* jmp: this alternative held */
			for (size_t k = 0; k < nnext; k++)
				x86_land32(w, next[k]);
			/* the tests of the alternative it held in go to the next one */
			for (size_t k = 0; k < g->n; k++)
				x86_land32(w, g->skips[k]);
			nnext = g->n = 0;
		}
	}
	for (size_t k = 0; k < nbody; k++)
		x86_land32(w, body[k]);
	x86_put(w, restore, sizeof(restore));   /* the snippet sees the registers as they were */
	return w->failed ? -ENOMEM : 0;
}

int x86_guard_end(struct x86_writer *w, const struct x86_guard *g)
{
	static const uint8_t restore[] = { 0x48, 0x8b, 0x44, 0x24, 0xc0 };   /* mov rax,[rsp-64] */
	if (!g->n)
		return 0;
	for (size_t i = 0; i < g->n; i++)
		x86_land32(w, g->skips[i]);
	x86_put(w, restore, sizeof(restore));
	return w->failed ? -ENOMEM : 0;
}
