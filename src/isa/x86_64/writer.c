#include <stdlib.h>
#include <string.h>
#include "isa/x86_64/writer.h"
#include "util/array.h"

void x86_writer_init(struct x86_writer *w, uint64_t base)
{
	*w = (struct x86_writer){ .base = base };
}

void x86_writer_free(struct x86_writer *w)
{
	free(w->buf);
	free(w->fix);
	free(w->rows);
	w->buf = NULL;
	w->fix = NULL;
	w->rows = NULL;
	w->nfix = w->capfix = 0;
	w->nrows = w->caprows = 0;
}

uint32_t x86_sp_below(const struct x86_sp_row *rows, size_t n, uint32_t off)
{
	size_t lo = 0, hi = n;   /* the first row past OFF */
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (rows[mid].off <= off)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? rows[lo - 1].below : 0;
}

void x86_sp_moved(struct x86_writer *w, uint32_t below)
{
	if (rtl_grow(&w->rows, &w->caprows, w->nrows + 1, sizeof(*w->rows))) {
		w->failed = true;
		return;
	}
	w->rows[w->nrows++] = (struct x86_sp_row){ (uint32_t)w->len, below };
}

static void log_fix(struct x86_writer *w, size_t off, enum x86_fix_kind kind, uint64_t base,
		    uint64_t target, uint64_t orig)
{
	if (rtl_grow(&w->fix, &w->capfix, w->nfix + 1, sizeof(*w->fix))) {
		w->failed = true;
		return;
	}
	w->fix[w->nfix++] = (struct x86_fix){ (uint32_t)off, (uint8_t)kind, base, target, orig };
}

bool x86_writer_reserve(struct x86_writer *w, size_t n)
{
	if (rtl_grow(&w->buf, &w->cap, w->len + n, 1)) {
		w->failed = true;
		return false;
	}
	return true;
}

void x86_align(struct x86_writer *w, size_t a, uint8_t fill)
{
	while (x86_writer_pc(w) % a)
		x86_put_u8(w, fill);
}

void x86_patch_u32(struct x86_writer *w, size_t off, uint32_t v)
{
	if (!w->failed)
		memcpy(w->buf + off, &v, 4);
}

int32_t x86_rel32(struct x86_writer *w, uint64_t end, uint64_t target)
{
	int64_t d = (int64_t)(target - end);
	if (d != (int32_t)d)
		w->failed = true;
	return (int32_t)d;
}

void x86_patch_rel32(struct x86_writer *w, size_t off, uint64_t base, uint64_t target)
{
	log_fix(w, off, X86_FIX_REL32, base, target, 0);
	x86_patch_u32(w, off, (uint32_t)x86_rel32(w, base, target));
}

void x86_put_rel32(struct x86_writer *w, uint64_t base, uint64_t target, uint64_t orig)
{
	log_fix(w, w->len, X86_FIX_REL32, base, target, orig);
	x86_put_u32(w, (uint32_t)x86_rel32(w, base, target));
}

void x86_put_abs64(struct x86_writer *w, uint64_t target, uint64_t orig)
{
	log_fix(w, w->len, X86_FIX_ABS64, 0, target, orig);
	x86_put_u64(w, target);
}

void x86_patch_abs32(struct x86_writer *w, size_t off, uint64_t target)
{
	if ((int64_t)target != (int32_t)target)
		w->failed = true;
	log_fix(w, off, X86_FIX_ABS32, 0, target, 0);
	x86_patch_u32(w, off, (uint32_t)target);
}

void x86_put_half(struct x86_writer *w, uint64_t target, enum x86_fix_kind kind)
{
	log_fix(w, w->len, kind, 0, target, 0);
	x86_put_u32(w, (uint32_t)(kind == X86_FIX_HI32 ? target >> 32 : target));
}

/* rel32 to TARGET as the last field of an instruction (not logged: see writer.h) */
static void put_branch_rel32(struct x86_writer *w, uint64_t target)
{
	x86_put_u32(w, (uint32_t)x86_rel32(w, x86_writer_pc(w) + 4, target));
}

size_t x86_jump8(struct x86_writer *w, uint8_t op)
{
	x86_put_u8(w, op);
	x86_put_u8(w, 0);
	return w->len - 1;
}

void x86_land8(struct x86_writer *w, size_t at)
{
	if (w->failed)
		return;
	if (w->len - (at + 1) > 127)
		w->failed = true;
	else
		w->buf[at] = (uint8_t)(w->len - (at + 1));
}

void x86_jump8_back(struct x86_writer *w, uint8_t op, size_t to)
{
	long rel = (long)to - (long)(w->len + 2);
	if (rel < -128)
		w->failed = true;
	x86_put_u8(w, op);
	x86_put_u8(w, (uint8_t)(int8_t)rel);
}

size_t x86_jump32(struct x86_writer *w, uint8_t op)
{
	if (op == 0xeb)
		x86_put_u8(w, 0xe9);
	else {
		x86_put_u8(w, 0x0f);
		x86_put_u8(w, (uint8_t)(op + 0x10));
	}
	x86_put_u32(w, 0);
	return w->len - 4;
}

void x86_land32(struct x86_writer *w, size_t at)
{
	if (!w->failed) {
		uint32_t rel = (uint32_t)(w->len - (at + 4));
		memcpy(w->buf + at, &rel, 4);
	}
}

size_t x86_jmp(struct x86_writer *w, uint64_t target)
{
	x86_put_u8(w, 0xe9);
	size_t off = w->len;
	put_branch_rel32(w, target);
	return off;
}

size_t x86_lea_rip(struct x86_writer *w, int reg)
{
	uint8_t op[3] = { (uint8_t)(0x48 | (reg >= 8 ? 0x04 : 0)), 0x8d, (uint8_t)(((reg & 7) << 3) | 0x05) };
	x86_put(w, op, 3);
	size_t off = w->len;
	x86_put_u32(w, 0);
	return off;
}

size_t x86_jcc(struct x86_writer *w, unsigned cc, uint64_t target)
{
	uint8_t op[2] = { 0x0f, 0x80 | (cc & 15) };
	x86_put(w, op, 2);
	size_t off = w->len;
	put_branch_rel32(w, target);
	return off;
}

size_t x86_call(struct x86_writer *w, uint64_t target)
{
	x86_put_u8(w, 0xe8);
	size_t off = w->len;
	put_branch_rel32(w, target);
	return off;
}

/* rip-relative modrm form (mod=00 rm=101) with the given opcode bytes, then
 * TRAIL bytes of immediate after the displacement. */
void x86_rip_form(struct x86_writer *w, const uint8_t *op, size_t n, uint8_t reg,
		     uint64_t addr, const uint8_t *imm, size_t trail)
{
	x86_put(w, op, n);
	x86_put_u8(w, (uint8_t)(0x05 | (reg << 3)));
	uint64_t end = x86_writer_pc(w) + 4 + trail;
	log_fix(w, w->len, X86_FIX_REL32, end, addr, 0);
	x86_put_u32(w, (uint32_t)x86_rel32(w, end, addr));
	x86_put(w, imm, trail);
}

const uint8_t x86_switch_keep_flags[2] = { 0xeb, 0x23 };   /* jmp +35: the atomic path */

void x86_switch_atomic(uint8_t *site, bool keep_flags)
{
	if (keep_flags)
		memcpy(site, x86_switch_keep_flags, 2);
	else
		site[0] = X86_SWITCH_LOCK;
}

/* The flags-live form: its atomic path's 'lock add [rip+X], 1' is this
 * far from the site (the switch, the plain path, the jump over the atomic
 * path, then 'lea rsp,[rsp-128]; pushfq') */
enum { KEEP_FLAGS_LOCKED_ADD = 2 + 33 + 2 + 5 + 1 };

/* The counter of the 9-byte 'P 48 83 05 X 01' at SITE (run-time AT),
 * whose prefix is P; 0 otherwise. */
static uint64_t rip_add_one(const uint8_t *site, uint64_t at, uint8_t prefix)
{
	if (site[0] != prefix || site[1] != 0x48 || site[2] != 0x83 || site[3] != 0x05 || site[8] != 1)
		return 0;
	int32_t disp;
	memcpy(&disp, site + 4, 4);
	return at + 9 + (int64_t)disp;
}

uint64_t x86_switch_counter(const uint8_t *site, uint64_t at, bool keep_flags)
{
	if (!keep_flags)
		return rip_add_one(site, at, 0x3e);
	if (site[0] != 0x66 || site[1] != 0x90)
		return 0;
	return rip_add_one(site + KEEP_FLAGS_LOCKED_ADD, at + KEEP_FLAGS_LOCKED_ADD, X86_SWITCH_LOCK);
}

void x86_switch_per_thread(uint8_t *site, bool keep_flags, int32_t disp)
{
	/* inc, not add: 'add qword gs:[disp32], 1' takes 10 bytes (the SIB
	 * byte of an absolute address); inc leaves CF, and the flags are dead
	 * here or saved around it */
	uint8_t gs_inc[9] = { 0x65, 0x48, 0xff, 0x04, 0x25 };   /* inc qword gs:[disp32] */
	memcpy(gs_inc + 5, &disp, 4);
	memcpy(keep_flags ? site + KEEP_FLAGS_LOCKED_ADD : site, gs_inc, sizeof(gs_inc));
	if (keep_flags)
		memcpy(site, x86_switch_keep_flags, 2);
}

bool x86_increment_off(const uint8_t *site, uint64_t at, size_t len, struct x86_live_store *st)
{
	unsigned col = (unsigned)(at & 15);
	if (len < 3 || len > 129)
		return false;
	if (len == 9 && col <= 12)
		*st = (struct x86_live_store){ 0, 4, { 0x66, 0x0f, 0x1f, 0x84 } };
	else if (col <= 14)
		*st = (struct x86_live_store){ 0, 2, { 0xeb, (uint8_t)(len - 2) } };
	else if (site[0] == 0x3e)   /* a segment prefix on a jump does nothing */
		*st = (struct x86_live_store){ 1, 2, { 0xeb, (uint8_t)(len - 3) } };
	else
		return false;
	return true;
}

size_t x86_inc_counter(struct x86_writer *w, uint64_t counter, bool atomic)
{
	static const uint8_t op[] = { 0x48, 0x83 }, one = 1;
	size_t at = w->len;
	x86_put_u8(w, atomic ? X86_SWITCH_LOCK : 0x3e);    /* lock, or a ds prefix (no effect) */
	x86_rip_form(w, op, 2, 0, counter, &one, 1);          /* add qword [rip+X], 1 */
	return at;
}

static const uint8_t lea_down[] = { 0x48, 0x8d, 0x64, 0x24, 0x80 };        /* lea rsp,[rsp-128] */
static const uint8_t lea_up[] = { 0x48, 0x8d, 0xa4, 0x24, 0x80, 0, 0, 0 }; /* lea rsp,[rsp+128] */

void x86_below_red_zone(struct x86_writer *w, uint8_t push)
{
	x86_put(w, lea_down, sizeof(lea_down));
	x86_sp_moved(w, 128);
	x86_put_u8(w, push);
	x86_sp_moved(w, 136);
}

void x86_back_from_below(struct x86_writer *w, uint8_t pop)
{
	x86_put_u8(w, pop);
	x86_sp_moved(w, 128);
	x86_put(w, lea_up, sizeof(lea_up));
	x86_sp_moved(w, 0);
}

void x86_flags_stash(struct x86_writer *w)
{
	static const uint8_t stash[] = {
		0x48, 0x89, 0x44, 0x24, 0xa0,   /* mov [rsp-96],rax */
		0x9f,                           /* lahf: SF ZF AF PF CF */
		0x0f, 0x90, 0xc0,               /* seto al */
		0x48, 0x89, 0x44, 0x24, 0x98,   /* mov [rsp-104],rax */
		0x48, 0x8b, 0x44, 0x24, 0xa0,   /* mov rax,[rsp-96] */
	};
	x86_put(w, stash, sizeof(stash));
}

void x86_flags_unstash(struct x86_writer *w)
{
	static const uint8_t unstash[] = {
		0x48, 0x89, 0x44, 0x24, 0xa0,   /* mov [rsp-96],rax */
		0x48, 0x8b, 0x44, 0x24, 0x98,   /* mov rax,[rsp-104] */
		0x04, 0x7f,                     /* add al,0x7f: OF set when al was 1 */
		0x9e,                           /* sahf */
		0x48, 0x8b, 0x44, 0x24, 0xa0,   /* mov rax,[rsp-96] */
	};
	x86_put(w, unstash, sizeof(unstash));
}

/* pushfq; lock add qword [rip+X], 1; popfq, below the red zone */
static void inc_atomic_keep_flags(struct x86_writer *w, uint64_t counter)
{
	static const uint8_t op[] = { 0x48, 0x83 }, one = 1;
	x86_below_red_zone(w, 0x9c);
	x86_put_u8(w, X86_SWITCH_LOCK);
	x86_rip_form(w, op, 2, 0, counter, &one, 1);
	x86_back_from_below(w, 0x9d);
}

size_t x86_inc_counter_keep_flags(struct x86_writer *w, uint64_t counter, bool atomic)
{
	static const uint8_t nop2[] = { 0x66, 0x90 }, skip[] = { 0xeb, 24 };
	static const uint8_t lea_inc[] = { 0x48, 0x8d, 0x40, 0x01 };          /* lea rax,[rax+1] */
	static const uint8_t mov_load[] = { 0x48, 0x8b }, mov_store[] = { 0x48, 0x89 };
	size_t at = w->len;

	if (atomic) {
		inc_atomic_keep_flags(w, counter);
		return at;
	}
	x86_put(w, nop2, 2);                              /* the switch */
	x86_below_red_zone(w, 0x50);                          /* push rax */
	x86_rip_form(w, mov_load, 2, 0, counter, NULL, 0);    /* mov rax,[rip+X] */
	x86_put(w, lea_inc, sizeof(lea_inc));
	x86_rip_form(w, mov_store, 2, 0, counter, NULL, 0);   /* mov [rip+X],rax */
	x86_back_from_below(w, 0x58);                         /* pop rax */
	x86_put(w, skip, 2);                              /* over the atomic path */
	inc_atomic_keep_flags(w, counter);
	return at;
}

void x86_align_nops(struct x86_writer *w, size_t a)
{
	static const uint8_t nops[9][9] = {
		{ 0x90 }, { 0x66, 0x90 }, { 0x0f, 0x1f, 0x00 }, { 0x0f, 0x1f, 0x40, 0x00 },
		{ 0x0f, 0x1f, 0x44, 0x00, 0x00 }, { 0x66, 0x0f, 0x1f, 0x44, 0x00, 0x00 },
		{ 0x0f, 0x1f, 0x80, 0x00, 0x00, 0x00, 0x00 },
		{ 0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00 },
		{ 0x66, 0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00 },
	};
	size_t pad = (a - x86_writer_pc(w) % a) % a;
	while (pad) {
		size_t n = pad > 9 ? 9 : pad;
		x86_put(w, nops[n - 1], n);
		pad -= n;
	}
}

size_t x86_add_rcx_to_counter(struct x86_writer *w, uint64_t counter, bool atomic)
{
	static const uint8_t op[] = { 0x48, 0x01 };   /* add [rip+X], rcx (reg field 1) */
	x86_below_red_zone(w, 0x9c);                      /* pushfq */
	size_t at = w->len;
	x86_put_u8(w, atomic ? X86_SWITCH_LOCK : 0x3e);
	x86_rip_form(w, op, 2, 1, counter, NULL, 0);
	x86_back_from_below(w, 0x9d);                     /* popfq */
	return at;
}

/* Sets the rel8 at offset OFF so that it reaches offset TO. */
static void patch_rel8(struct x86_writer *w, size_t off, size_t to)
{
	if (!w->failed)
		w->buf[off] = (uint8_t)(int8_t)((long)to - (long)(off + 1));
}

size_t x86_rep_cond_skip(struct x86_writer *w)
{
	static const uint8_t jrcxz[] = { 0xe3, 0 };
	x86_put(w, jrcxz, 2);
	return w->len - 1;
}

void x86_rep_cond_land(struct x86_writer *w, size_t skip)
{
	patch_rel8(w, skip, w->len);
}

size_t x86_sub_rcx_after_rep_cond(struct x86_writer *w, uint64_t counter, bool atomic, bool repne)
{
	static const uint8_t not_rcx[] = { 0x48, 0xf7, 0xd1 };   /* not rcx: flags unchanged */
	x86_put_u8(w, 0xe3);                          /* jrcxz check */
	size_t to_check = w->len;
	x86_put_u8(w, 0);
	size_t sub = w->len;
	x86_put(w, not_rcx, sizeof(not_rcx));         /* counter += ~rcx, that is -rcx - 1 */
	size_t at = x86_add_rcx_to_counter(w, counter, atomic);
	x86_put(w, not_rcx, sizeof(not_rcx));
	x86_put_u8(w, 0xeb);                          /* jmp done */
	size_t to_done = w->len;
	x86_put_u8(w, 0);
	patch_rel8(w, to_check, w->len);
	/* check: rcx is 0; the condition failed on the last iteration (repe:
	 * ZF 0, jnz; repne: ZF 1, jz) means no extra pass, so back to sub */
	x86_put_u8(w, repne ? 0x74 : 0x75);
	x86_put_u8(w, 0);
	patch_rel8(w, w->len - 1, sub);
	patch_rel8(w, to_done, w->len);
	return at;
}
