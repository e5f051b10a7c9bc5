/* The record snippet. A buffer's free words are counted down, so that a
 * full buffer is found with lea and jrcxz, which leave the flags alone: no
 * pushf, no liveness needed. Records go from the top of the buffer down,
 * the newest at the lowest address. */
#include <errno.h>
#include <string.h>
#include <reticle/error.h>
#include "isa/x86_64/memtrace.h"
#include "runtime/thread_area.h"

#define D32(v) (uint8_t)(v), (uint8_t)((v) >> 8), (uint8_t)((v) >> 16), (uint8_t)((v) >> 24)

/* A snippet's first and last two instructions, the same in records and
 * clocks: rax and rcx wait in the area while it borrows them. */
static const uint8_t head[] = {
	0x65, 0x48, 0x89, 0x04, 0x25, D32(TA_MT_SAVE0),   /* mov gs:[SAVE0],rax */
	0x65, 0x48, 0x89, 0x0c, 0x25, D32(TA_MT_SAVE1),   /* mov gs:[SAVE1],rcx */
};
static const uint8_t tail[] = {
	0x65, 0x48, 0x8b, 0x0c, 0x25, D32(TA_MT_SAVE1),   /* mov rcx,gs:[SAVE1] */
	0x65, 0x48, 0x8b, 0x04, 0x25, D32(TA_MT_SAVE0),   /* mov rax,gs:[SAVE0] */
};

/* lea rax,[base + index*scale + disp] for an operand without rip. */
static int lea_rax(struct x86_writer *w, const struct x86_mem *m)
{
	if (m->disp != (int32_t)m->disp)
		return -RTL_ERR_UNSUPPORTED;
	int32_t disp = (int32_t)m->disp;
	uint8_t ss = m->scale == 8 ? 3 : m->scale == 4 ? 2 : m->scale == 2 ? 1 : 0;
	uint8_t rex = 0x48 | (m->index >= 8 ? 2 : 0) | (m->base >= 8 ? 1 : 0);
	uint8_t buf[8], n = 0;
	buf[n++] = rex;
	buf[n++] = 0x8d;
	if (m->base < 0) {   /* no base: SIB with base 101, mod 00, disp32 */
		buf[n++] = 0x04;
		buf[n++] = (uint8_t)(ss << 6 | (m->index >= 0 ? (m->index & 7) : 4) << 3 | 5);
		x86_put(w, buf, n);
		x86_put_u32(w, (uint32_t)disp);
		return 0;
	}
	uint8_t mod = disp == 0 && (m->base & 7) != 5 ? 0 : disp == (int8_t)disp ? 1 : 2;
	if (m->index < 0 && (m->base & 7) != 4) {
		buf[n++] = (uint8_t)(mod << 6 | (m->base & 7));
	} else {
		buf[n++] = (uint8_t)(mod << 6 | 4);
		buf[n++] = (uint8_t)(ss << 6 | (m->index >= 0 ? (m->index & 7) : 4) << 3 | (m->base & 7));
	}
	x86_put(w, buf, n);
	if (mod == 1)
		x86_put_u8(w, (uint8_t)(int8_t)disp);
	else if (mod == 2)
		x86_put_u32(w, (uint32_t)disp);
	return 0;
}

int x86_memtrace_record(struct x86_writer *w, const struct x86_access *a, uint32_t id, bool fsgsbase)
{
	static const uint8_t add_fs[] = {
		0xf3, 0x48, 0x0f, 0xae, 0xc1,                     /* rdfsbase rcx */
		0x48, 0x8d, 0x04, 0x08,                           /* lea rax,[rax+rcx] */
	};
	static const uint8_t append[] = {
		0x65, 0x48, 0x8b, 0x0c, 0x25, D32(TA_MT_LEFT),    /* mov rcx,gs:[LEFT] */
		0x65, 0x48, 0x89, 0x04, 0xcd, D32(TA_MT_RECS - 16),   /* mov gs:[rcx*8+RECS-16],rax */
		0x65, 0x48, 0xc7, 0x04, 0xcd, D32(TA_MT_RECS - 8),    /* mov qword gs:[rcx*8+RECS-8],ID */
	};
	/* a rep string's record: the count (rcx, waiting in SAVE1) in the
	 * record's upper half */
	static const uint8_t count[] = {
		0x65, 0x48, 0x8b, 0x04, 0x25, D32(TA_MT_SAVE1),   /* mov rax,gs:[SAVE1] */
		0x65, 0x89, 0x04, 0xcd, D32(TA_MT_RECS - 4),      /* mov gs:[rcx*8+RECS-4],eax */
	};
	static const uint8_t advance[] = {
		0x48, 0x8d, 0x49, 0xfe,                           /* lea rcx,[rcx-2] */
		0x65, 0x48, 0x89, 0x0c, 0x25, D32(TA_MT_LEFT),    /* mov gs:[LEFT],rcx */
		0xe3, 0x02,                                       /* jrcxz full */
		0xeb, 0x01,                                       /* jmp on */
		0xcc,                                             /* full: int3 (reticle drains) */
	};                                                        /* on: the tail */
	if (id > INT32_MAX || (a->fs && !fsgsbase))
		return -RTL_ERR_UNSUPPORTED;
	x86_put(w, head, sizeof(head));
	if (a->mem.base == 16) {
		x86_put_u8(w, 0x48);
		x86_put_u8(w, 0xb8);   /* mov rax,imm64 */
		x86_put_u64(w, a->abs);
	} else {
		int err = lea_rax(w, &a->mem);
		if (err)
			return err;
	}
	if (a->fs)
		x86_put(w, add_fs, sizeof(add_fs));
	x86_put(w, append, sizeof(append));
	x86_put_u32(w, id);
	if (a->rep)
		x86_put(w, count, sizeof(count));
	x86_put(w, advance, sizeof(advance));
	x86_put(w, tail, sizeof(tail));
	return w->failed ? -ENOMEM : 0;
}

static void gs_rcx(struct x86_writer *w, uint8_t op, uint32_t disp)   /* op rcx <-> gs:[disp] */
{
	const uint8_t b[] = { 0x65, 0x48, op, 0x0c, 0x25, D32(disp) };
	x86_put(w, b, sizeof(b));
}

int x86_memtrace_clock(struct x86_writer *w, uint32_t n, unsigned word, bool check, bool keep_flags)
{
	static const uint8_t sign[] = {
		0x65, 0x48, 0x0f, 0xbe, 0x0c, 0x25, D32(TA_BBV_LEFT + 7),   /* movsx rcx,byte gs:[LEFT+7] */
		0x48, 0x8d, 0x49, 0x01,                           /* lea rcx,[rcx+1]: 0 when it was negative */
		0xe3, 0x02, 0xeb, 0x01, 0xcc,                     /* jrcxz ended; jmp on; ended: int3; on: */
	};
	static const uint8_t add_rax[] = { 0x48, 0x8d, 0x0c, 0x01 };   /* lea rcx,[rcx+rax] */
	uint32_t at = TA_MT_CLOCK + 8 * (word % TA_MT_CLOCKS);
	if (n > INT32_MAX)
		return -RTL_ERR_UNSUPPORTED;
	if (!keep_flags) {
		const uint8_t sub[] = { 0x65, 0x48, 0x81, 0x2c, 0x25, D32(at) };   /* sub qword gs:[at],imm32 */
		x86_put(w, sub, sizeof(sub));
		x86_put_u32(w, n);
		if (!check)
			return w->failed ? -ENOMEM : 0;
		x86_put(w, head, sizeof(head));
		gs_rcx(w, 0x8b, TA_MT_CLOCK);                     /* mov rcx,gs:[W0] */
		for (int k = 1; k < TA_MT_CLOCKS; k++) {          /* add rcx,gs:[Wk] */
			const uint8_t add[] = { 0x65, 0x48, 0x03, 0x0c, 0x25, D32(TA_MT_CLOCK + 8 * k) };
			x86_put(w, add, sizeof(add));
		}
		gs_rcx(w, 0x89, TA_BBV_LEFT);                     /* mov gs:[LEFT],rcx: the commit */
		static const uint8_t ended[] = { 0x79, 0x01, 0xcc };   /* jns on; int3; on: */
		x86_put(w, ended, sizeof(ended));
		x86_put(w, tail, sizeof(tail));
		return w->failed ? -ENOMEM : 0;
	}
	x86_put(w, head, sizeof(head));
	gs_rcx(w, 0x8b, at);                                      /* mov rcx,gs:[at] */
	static const uint8_t lea[] = { 0x48, 0x8d, 0x89 };        /* lea rcx,[rcx-N] */
	x86_put(w, lea, sizeof(lea));
	x86_put_u32(w, (uint32_t)-(int32_t)n);
	gs_rcx(w, 0x89, at);                                      /* mov gs:[at],rcx: the commit */
	if (check) {
		gs_rcx(w, 0x8b, TA_MT_CLOCK);
		for (int k = 1; k < TA_MT_CLOCKS; k++) {          /* mov rax,gs:[Wk]; lea rcx,[rcx+rax] */
			const uint8_t mov[] = { 0x65, 0x48, 0x8b, 0x04, 0x25, D32(TA_MT_CLOCK + 8 * k) };
			x86_put(w, mov, sizeof(mov));
			x86_put(w, add_rax, sizeof(add_rax));
		}
		gs_rcx(w, 0x89, TA_BBV_LEFT);                     /* the sum, for its sign byte */
		x86_put(w, sign, sizeof(sign));
	}
	x86_put(w, tail, sizeof(tail));
	return w->failed ? -ENOMEM : 0;
}

int x86_memtrace_clock_free(struct x86_writer *w, uint32_t n, unsigned word, int free)
{
	if (free < 0 || free > 15 || free == 4)
		return -RTL_ERR_UNSUPPORTED;
	int err = x86_memtrace_clock(w, n, word, false, false);   /* the word's update */
	if (err)
		return err;
	uint8_t rex = (uint8_t)(0x48 | (free >= 8 ? 4 : 0)), modrm = (uint8_t)((free & 7) << 3 | 4);
	for (int k = 0; k < TA_MT_CLOCKS; k++) {   /* mov FREE,gs:[W0]; add FREE,gs:[Wk] */
		const uint8_t op[] = { 0x65, rex, k ? 0x03 : 0x8b, modrm, 0x25, D32(TA_MT_CLOCK + 8 * k) };
		x86_put(w, op, sizeof(op));
	}
	static const uint8_t ended[] = { 0x79, 0x01, 0xcc };   /* jns on; int3; on: */
	x86_put(w, ended, sizeof(ended));
	return w->failed ? -ENOMEM : 0;
}

size_t x86_twin_check(struct x86_writer *w, uint32_t slot)
{
	const uint8_t cmp[] = { 0x65, 0x48, 0x83, 0x3c, 0x25, D32(slot), 0x00, 0x0f, 0x85 };
	x86_put(w, cmp, sizeof(cmp));
	size_t at = w->len;
	x86_put_u32(w, 0);
	return at;
}

/* The store that commits a record (then jrcxz, jmp, int3): with head and
 * tail, how a PC inside a snippet is told from the program's code around
 * it (%gs operands at these offsets are reticle's alone). */
static const uint8_t commit[] = {
	0x65, 0x48, 0x89, 0x0c, 0x25, D32(TA_MT_LEFT), 0xe3, 0x02, 0xeb, 0x01, 0xcc,
};
/* the clock's commits (x86_memtrace_clock): a store of rcx to one of its
 * words or to the sum's */
static long find_clock_commit(const uint8_t *code, size_t from, size_t to)
{
	static const uint8_t store[] = { 0x65, 0x48, 0x89, 0x0c, 0x25 };
	for (size_t i = from; i + sizeof(store) + 4 <= to; i++) {
		if (memcmp(code + i, store, sizeof(store)))
			continue;
		uint32_t d;
		memcpy(&d, code + i + sizeof(store), 4);
		if (d == TA_BBV_LEFT || (d >= TA_MT_CLOCK && d < TA_MT_CLOCK + 8 * TA_MT_CLOCKS && d % 8 == 0))
			return (long)i;
	}
	return -1;
}

static long find(const uint8_t *code, size_t from, size_t to, const uint8_t *pat, size_t len, bool last)
{
	long found = -1;
	for (size_t i = from; i + len <= to; i++)
		if (!memcmp(code + i, pat, len)) {
			found = (long)i;
			if (!last)
				break;
		}
	return found;
}

bool x86_memtrace_locate(const uint8_t *code, size_t len, size_t at, struct x86_memtrace_span *out)
{
	/* the last snippet start at or before AT, then its commit and end */
	long s = find(code, at > X86_MEMTRACE_MAX ? at - X86_MEMTRACE_MAX : 0, at + sizeof(head), head,
		      sizeof(head), true);
	if (s < 0 || (size_t)s > at)
		return false;
	long c = find(code, (size_t)s + sizeof(head), len, commit, sizeof(commit), false);
	long c2 = find_clock_commit(code, (size_t)s + sizeof(head), len);
	if (c2 >= 0 && (c < 0 || c2 < c))
		c = c2;   /* a clock's: its store is as long as a record's */
	long e = c < 0 ? -1 : find(code, (size_t)c + 9, len, tail, sizeof(tail), false);
	if (e < 0 || (size_t)e + sizeof(tail) - (size_t)s > X86_MEMTRACE_MAX || at >= (size_t)e + sizeof(tail))
		return false;
	*out = (struct x86_memtrace_span){ (size_t)s, (size_t)c + 9, (size_t)e + sizeof(tail) };
	return true;
}
