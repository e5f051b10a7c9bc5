/* The snippet that counts an indirect call's targets in the arc table
 * (runtime/arc_table.h). It runs where flags are dead (before a call) and
 * the red zone is free (the call's push and the callee overwrite it), so it
 * keeps three registers there and never moves %rsp: unwind information
 * needs no rows for it. The target is read first, before any register
 * changes: a fault there (a null function pointer) leaves the thread as
 * the call itself would have. */
#include <errno.h>
#include <reticle/error.h>
#include "isa/x86_64/arcs.h"
#include "isa/x86_64/predicate.h"
#include "runtime/arc_table.h"

/* 'mov rax, OPERAND' of the 'call r/m64' or 'jmp r/m64' IN (BYTES): its
 * segment prefixes, REX.W with the operand's X and B bits, 8b, the ModRM
 * with register field 0, the rest as it is (rip-relative: re-aimed). */
static int load_operand(struct x86_writer *w, const struct x86_insn *in, const uint8_t *bytes)
{
	size_t p = 0;
	uint8_t rex = 0;
	/* legacy prefixes, then REX (which the decoder may count as a prefix) */
	for (; p < in->len && p < 15; p++) {
		if (bytes[p] == 0x64 || bytes[p] == 0x65)
			x86_put_u8(w, bytes[p]);
		else if ((bytes[p] & 0xf0) == 0x40)
			rex = bytes[p];
		else if (p >= in->prefix_len)
			break;
	}
	if (p + 1 >= in->len || bytes[p] != 0xff || (((bytes[p + 1] >> 3) & 7) != 2 &&
						    ((bytes[p + 1] >> 3) & 7) != 4))
		return -RTL_ERR_UNSUPPORTED;
	uint8_t head[3] = { (uint8_t)(0x48 | (rex & 0x03)), 0x8b, (uint8_t)(bytes[p + 1] & ~0x38) };
	x86_put(w, head, sizeof(head));
	x86_put(w, bytes + p + 2, in->len - (p + 2));
	if (in->rip_rel) {
		if (in->len < p + 6)
			return -RTL_ERR_UNSUPPORTED;
		x86_patch_rel32(w, w->len - 4, x86_writer_pc(w), in->target);
	}
	return 0;
}

static void count_key(struct x86_writer *w, uint64_t words, bool atomic, size_t switches[2]);

int x86_count_target(struct x86_writer *w, const struct x86_insn *in, const uint8_t *bytes,
		     uint64_t words, bool atomic, size_t switches[2])
{
	static const uint8_t save_rax[] = { 0x48, 0x89, 0x44, 0x24, 0xf8 };   /* mov [rsp-8],rax */
	x86_put(w, save_rax, sizeof(save_rax));
	int err = load_operand(w, in, bytes);
	if (err)
		return err;
	count_key(w, words, atomic, switches);
	return w->failed ? -ENOMEM : 0;
}

int x86_count_value(struct x86_writer *w, const struct rtl_predicate *key, uint64_t words, bool atomic,
		    size_t switches[2])
{
	static const uint8_t save_rax[] = { 0x48, 0x89, 0x44, 0x24, 0xf8 };   /* mov [rsp-8],rax */
	static const uint8_t to47[] = { 0x48, 0xc1, 0xe0, 64 - ARC_SITE_SHIFT,     /* shl rax,17 */
					0x48, 0xc1, 0xe8, 64 - ARC_SITE_SHIFT };   /* shr rax,17 */
	x86_put(w, save_rax, sizeof(save_rax));
	int err = x86_load_operand(w, key);
	if (err)
		return err;
	x86_put(w, to47, sizeof(to47));
	count_key(w, words, atomic, switches);
	return w->failed ? -ENOMEM : 0;
}

/* rax the key (below 2^47), saved at [rsp-8]: its count in the table. */
static void count_key(struct x86_writer *w, uint64_t words, bool atomic, size_t switches[2])
{
	static const uint8_t save[] = { 0x48, 0x89, 0x4c, 0x24, 0xf0,         /* mov [rsp-16],rcx */
					0x48, 0x89, 0x54, 0x24, 0xe8 };       /* mov [rsp-24],rdx */
	static const uint8_t restore[] = { 0x48, 0x8b, 0x54, 0x24, 0xe8,      /* mov rdx,[rsp-24] */
					   0x48, 0x8b, 0x4c, 0x24, 0xf0,      /* mov rcx,[rsp-16] */
					   0x48, 0x8b, 0x44, 0x24, 0xf8 };    /* mov rax,[rsp-8] */
	static const uint8_t or_rax[] = { 0x48, 0x0b }, mov_rcx[] = { 0x48, 0x8b };
	static const uint8_t hash[] = { 0x48, 0x69, 0xd0, ARC_MULT & 0xff, (ARC_MULT >> 8) & 0xff,
					(ARC_MULT >> 16) & 0xff, ARC_MULT >> 24,   /* imul rdx,rax,K */
					0x48, 0xc1, 0xea, ARC_HASH_SHIFT };        /* shr rdx,S */
	static const uint8_t mask[] = { 0x81, 0xe2, ARC_OFFSET_MASK & 0xff, (ARC_OFFSET_MASK >> 8) & 0xff,
					(ARC_OFFSET_MASK >> 16) & 0xff, 0 };       /* and edx,M */
	static const uint8_t cmp_key[] = { 0x48, 0x3b, 0x04, 0x11 };          /* cmp rax,[rcx+rdx] */
	static const uint8_t cmp_free[] = { 0x48, 0x83, 0x3c, 0x11, 0x00 };   /* cmp qword [rcx+rdx],0 */
	static const uint8_t next[] = { 0x48, 0x83, 0xc2, 0x10 };             /* add rdx,16 */
	static const uint8_t full[] = { 0x48, 0x81, 0x79, 0xf0, ARC_LIMIT & 0xff, (ARC_LIMIT >> 8) & 0xff,
					(ARC_LIMIT >> 16) & 0xff, 0 };             /* cmp qword [rcx-16],LIMIT */
	static const uint8_t claim[] = { 0x48, 0x01, 0xd1,                    /* add rcx,rdx */
					 0x48, 0x89, 0xc2,                    /* mov rdx,rax */
					 0x31, 0xc0,                          /* xor eax,eax */
					 0xf0, 0x48, 0x0f, 0xb1, 0x11,        /* lock cmpxchg [rcx],rdx */
					 0x48, 0x89, 0xd0,                    /* mov rax,rdx */
					 0x48, 0x89, 0xca };                  /* mov rdx,rcx */
	static const uint8_t filled[] = { 0xf0, 0x48, 0xff, 0x41, 0xf0 };     /* lock inc qword [rcx-16] */
	static const uint8_t offset[] = { 0x48, 0x29, 0xca };                 /* sub rdx,rcx */
	static const uint8_t lost[] = { 0x48, 0xff, 0x41, 0xf8 };             /* inc qword [rcx-8] */
	static const uint8_t hit[] = { 0x48, 0xff, 0x44, 0x11, 0x08 };        /* inc qword [rcx+rdx+8] */
	uint8_t lock = atomic ? X86_SWITCH_LOCK : 0x3e;

	x86_put(w, save, sizeof(save));
	x86_rip_form(w, or_rax, 2, 0, words, NULL, 0);           /* or rax,[rip+prefix] */
	x86_put(w, hash, sizeof(hash));
	x86_put(w, mask, sizeof(mask));
	x86_rip_form(w, mov_rcx, 2, 1, words + 8, NULL, 0);      /* mov rcx,[rip+table] */
	size_t probe = w->len;
	x86_put(w, cmp_key, sizeof(cmp_key));
	size_t to_hit = x86_jump8(w, 0x74);
	x86_put(w, cmp_free, sizeof(cmp_free));
	size_t to_claim = x86_jump8(w, 0x74);
	x86_put(w, next, sizeof(next));
	x86_put(w, mask, sizeof(mask));
	x86_jump8_back(w, 0xeb, probe);
	/* claim: a free slot, while the table has room */
	x86_land8(w, to_claim);
	x86_put(w, full, sizeof(full));
	size_t to_full = x86_jump8(w, 0x73);
	x86_put(w, claim, sizeof(claim));
	x86_rip_form(w, mov_rcx, 2, 1, words + 8, NULL, 0);      /* rcx: the table again */
	size_t to_taken = x86_jump8(w, 0x75);                          /* another thread took it */
	x86_put(w, filled, sizeof(filled));
	x86_land8(w, to_taken);
	x86_put(w, offset, sizeof(offset));
	x86_jump8_back(w, 0xeb, probe);                                    /* and look again: ours now, or not */
	x86_land8(w, to_full);
	switches[1] = w->len;
	x86_put_u8(w, lock);
	x86_put(w, lost, sizeof(lost));
	size_t to_done = x86_jump8(w, 0xeb);
	x86_land8(w, to_hit);
	switches[0] = w->len;
	x86_put_u8(w, lock);
	x86_put(w, hit, sizeof(hit));
	x86_land8(w, to_done);
	x86_put(w, restore, sizeof(restore));
}
