/* The timer snippets. Both run where the flags are dead and the red zone is
 * free (a function's entry, a return), so they keep their registers there
 * and never move %rsp: unwind information needs no rows for them. What a
 * thread keeps is in its area, at %gs (runtime/thread_area.h): the top of
 * its frame stack, the frames, the timers' words, the context tree.
 *
 * Frames pair entries with exits by the stack pointer, not by counting:
 * at an entry, every frame whose stack pointer is at or below the current
 * one was left without its exit (a tail call jumped out of it, longjmp or
 * an exception unwound it) and is closed now; at a return, every frame
 * below the current stack pointer is closed, then the function's own (at
 * it exactly). A frame is published (the top moved) once its context is
 * found, before it is filled, so that a signal handler running in between
 * pushes above it; one that runs during the search pushes where this frame
 * will be, under the same caller. */
#include <asm/prctl.h>
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <reticle/error.h>
#include "isa/x86_64/timers.h"
#include "runtime/thread_area.h"

#define D32(v) (uint8_t)(v), (uint8_t)((v) >> 8), (uint8_t)((v) >> 16), (uint8_t)((v) >> 24)
/* disp8 of field OFF of the frame below the one rcx points at */
#define PARENT(off) (uint8_t)(0x100 - TA_FRAME_SIZE + (off))

static const uint8_t save[] = {
	0x48, 0x89, 0x44, 0x24, 0xf8,   /* mov [rsp-8],rax */
	0x48, 0x89, 0x54, 0x24, 0xf0,   /* mov [rsp-16],rdx */
	0x48, 0x89, 0x4c, 0x24, 0xe8,   /* mov [rsp-24],rcx */
	0x48, 0x89, 0x74, 0x24, 0xe0,   /* mov [rsp-32],rsi */
};
static const uint8_t save_more[] = {
	0x48, 0x89, 0x7c, 0x24, 0xd8,   /* mov [rsp-40],rdi */
	0x4c, 0x89, 0x44, 0x24, 0xd0,   /* mov [rsp-48],r8 */
};
/* At a return the words just below %rsp are the callee-saved registers
 * the epilogue popped, which the function's unwind rows may still name
 * (gcc's row at a 'ret' after 'leave' keeps rbp at CFA-16, not restored):
 * an unwind from inside the exit's snippets (a signal handler's
 * backtrace, an asynchronous cancel) reads them there. The exit's
 * snippets keep their registers deeper, where the predicates' words are
 * (free by then: a guard's are given back before the timer's stop). */
static const uint8_t exit_save[] = {
	0x48, 0x89, 0x44, 0x24, 0xc0,   /* mov [rsp-64],rax */
	0x48, 0x89, 0x54, 0x24, 0xb8,   /* mov [rsp-72],rdx */
	0x48, 0x89, 0x4c, 0x24, 0xb0,   /* mov [rsp-80],rcx */
	0x48, 0x89, 0x74, 0x24, 0xa8,   /* mov [rsp-88],rsi */
};
static const uint8_t exit_restore[] = {
	0x65, 0x48, 0x89, 0x0c, 0x25, D32(TA_TOP),   /* mov gs:[TOP],rcx */
	0x48, 0x8b, 0x74, 0x24, 0xa8,   /* mov rsi,[rsp-88] */
	0x48, 0x8b, 0x4c, 0x24, 0xb0,   /* mov rcx,[rsp-80] */
	0x48, 0x8b, 0x54, 0x24, 0xb8,   /* mov rdx,[rsp-72] */
	0x48, 0x8b, 0x44, 0x24, 0xc0,   /* mov rax,[rsp-64] */
};
static const uint8_t now[] = {
	0x0f, 0x31,                     /* rdtsc */
	0x48, 0xc1, 0xe2, 0x20,         /* shl rdx,32 */
	0x48, 0x09, 0xd0,               /* or rax,rdx: the time */
};
static const uint8_t top[] = { 0x65, 0x48, 0x8b, 0x0c, 0x25, D32(TA_TOP) };   /* mov rcx,gs:[TOP] */

/* rax the time, rcx the top */
static void put_now_top(struct x86_writer *w)
{
	x86_put(w, now, sizeof(now));
	x86_put(w, top, sizeof(top));
}
static const uint8_t restore_more[] = {
	0x4c, 0x8b, 0x44, 0x24, 0xd0,   /* mov r8,[rsp-48] */
	0x48, 0x8b, 0x7c, 0x24, 0xd8,   /* mov rdi,[rsp-40] */
};
static const uint8_t restore[] = {
	0x65, 0x48, 0x89, 0x0c, 0x25, D32(TA_TOP),   /* mov gs:[TOP],rcx */
	0x48, 0x8b, 0x74, 0x24, 0xe0,   /* mov rsi,[rsp-32] */
	0x48, 0x8b, 0x4c, 0x24, 0xe8,   /* mov rcx,[rsp-24] */
	0x48, 0x8b, 0x54, 0x24, 0xf0,   /* mov rdx,[rsp-16] */
	0x48, 0x8b, 0x44, 0x24, 0xf8,   /* mov rax,[rsp-8] */
};
/* rax the time, rcx the top: the top frame is closed (rcx lowered), its
 * ticks added to its timer and to its context. */
static const uint8_t pop[] = {
	0x48, 0x83, 0xe9, TA_FRAME_SIZE,   /* sub rcx,FRAME */
	0x48, 0x89, 0xc6,               /* mov rsi,rax */
	0x48, 0x2b, 0x71, 0x10,         /* sub rsi,[rcx+16]: elapsed */
	/* a frame pushed at the same entry as its parent (numbered timers)
	 * is the parent's own time, not a child's: its children are the
	 * parent's too */
	0x48, 0x8b, 0x11,               /* mov rdx,[rcx] */
	0x48, 0x3b, 0x51, 0x100 - TA_FRAME_SIZE,   /* cmp rdx,[rcx-FRAME]: the parent's sp */
	0x75, 0x0a,                     /* jne: a child */
	0x48, 0x8b, 0x51, 0x18,         /* mov rdx,[rcx+24]: its children */
	0x48, 0x01, 0x51, PARENT(24),   /* add [rcx-FRAME+24],rdx */
	0xeb, 0x04,
	0x48, 0x01, 0x71, PARENT(24),   /* add [rcx-FRAME+24],rsi: the parent's children */
	0x48, 0x8b, 0x51, 0x20,         /* mov rdx,[rcx+32]: its node */
	0x65, 0x48, 0x01, 0x72, 0x10,   /* add gs:[rdx+16],rsi: the context's inclusive */
	0x48, 0x8b, 0x51, 0x08,         /* mov rdx,[rcx+8]: its timer */
	0x65, 0x48, 0xff, 0x4a, 0x08,   /* dec qword gs:[rdx+8]: active */
	0x75, 0x05,                     /* jnz: not its outermost frame */
	0x65, 0x48, 0x01, 0x72, 0x10,   /* add gs:[rdx+16],rsi: inclusive */
	0x48, 0x2b, 0x71, 0x18,         /* sub rsi,[rcx+24] */
	/* below zero when a signal's handler ran between this snippet's
	 * clock read and the pop, its frames closed into this one's children
	 * meanwhile: none of its own then */
	0x79, 0x02,                     /* jns */
	0x31, 0xf6,                     /* xor esi,esi */
	0x65, 0x48, 0x01, 0x72, 0x18,   /* add gs:[rdx+24],rsi: exclusive */
	0x48, 0x8b, 0x51, 0x20,         /* mov rdx,[rcx+32] */
	0x65, 0x48, 0x01, 0x72, 0x18,   /* add gs:[rdx+24],rsi: the context's exclusive */
};
static const uint8_t cmp_top[] = { 0x48, 0x39, 0x61, 0x100 - TA_FRAME_SIZE };   /* cmp [rcx-FRAME],rsp */

/* rcx the free frame, rdx the timer: rdi the offset of the node of the
 * timer's function under the caller's context (taken if new; the lost node
 * when the tree is full). r8 and rsi are clobbered. */
static void find_context(struct x86_writer *w)
{
	static const uint8_t key[] = {
		0x48, 0x8b, 0x71, PARENT(32),   /* mov rsi,[rcx-FRAME+32]: the caller's node */
		0x48, 0xc1, 0xe6, TA_KEY_SHIFT, /* shl rsi,22 */
		0x48, 0x09, 0xd6,               /* or rsi,rdx: the key */
		0x48, 0x89, 0xf7,               /* mov rdi,rsi */
		0x49, 0xb8,                     /* movabs r8,TA_HASH_MUL */
	};
	static const uint8_t hash[] = {
		0x49, 0x0f, 0xaf, 0xf8,         /* imul rdi,r8 */
		0x48, 0xc1, 0xef, 64 - TA_INDEX_BITS,   /* shr rdi,64-BITS: the slot */
	};
	static const uint8_t probe[] = {
		0x65, 0x44, 0x8b, 0x04, 0xbd, D32(TA_INDEX),   /* mov r8d,gs:[rdi*4+INDEX] */
		0x45, 0x85, 0xc0,               /* test r8d,r8d */
	};
	static const uint8_t compare[] = {
		0x49, 0xc1, 0xe0, 0x05,         /* shl r8,5 */
		0x65, 0x49, 0x39, 0xb0, D32(TA_NODES),   /* cmp gs:[r8+NODES],rsi */
	};
	static const uint8_t next[] = {
		0xff, 0xc7,                     /* inc edi */
		0x81, 0xe7, D32((1u << TA_INDEX_BITS) - 1),   /* and edi,mask */
	};
	static const uint8_t room[] = {
		0x65, 0x4c, 0x8b, 0x04, 0x25, D32(TA_NODES_USED),   /* mov r8,gs:[USED] */
		0x49, 0x81, 0xf8, D32(TA_MAX_NODES),   /* cmp r8,MAX */
	};
	/* the index names the node before its key is set: a signal handler
	 * that searches in between passes over it */
	static const uint8_t take[] = {
		0x49, 0xff, 0xc0,               /* inc r8 */
		0x65, 0x4c, 0x89, 0x04, 0x25, D32(TA_NODES_USED),   /* mov gs:[USED],r8 */
		0x65, 0x44, 0x89, 0x04, 0xbd, D32(TA_INDEX),   /* mov gs:[rdi*4+INDEX],r8d */
		0x49, 0xc1, 0xe0, 0x05,         /* shl r8,5 */
		0x65, 0x49, 0x89, 0xb0, D32(TA_NODES),   /* mov gs:[r8+NODES],rsi */
	};
	static const uint8_t lost[] = {
		0x49, 0xc7, 0xc0, D32((uint32_t)(TA_LOST - TA_NODES)),   /* mov r8,LOST-NODES */
	};
	static const uint8_t found[] = {
		0x49, 0x8d, 0xb8, D32(TA_NODES), /* lea rdi,[r8+NODES]: the node */
		0x65, 0x48, 0xff, 0x47, 0x08,   /* inc qword gs:[rdi+8]: its calls */
	};
	x86_put(w, key, sizeof(key));
	x86_put_u64(w, TA_HASH_MUL);
	x86_put(w, hash, sizeof(hash));
	size_t loop = w->len;
	x86_put(w, probe, sizeof(probe));
	size_t to_empty = x86_jump8(w, 0x74);                      /* jz: a free slot */
	x86_put(w, compare, sizeof(compare));
	size_t to_hit = x86_jump8(w, 0x74);                        /* je: found */
	x86_put(w, next, sizeof(next));
	x86_jump8_back(w, 0xeb, loop);
	x86_land8(w, to_empty);
	x86_put(w, room, sizeof(room));
	size_t to_lost = x86_jump8(w, 0x73);                       /* jae: the tree is full */
	x86_put(w, take, sizeof(take));
	size_t to_taken = x86_jump8(w, 0xeb);
	x86_land8(w, to_lost);
	x86_put(w, lost, sizeof(lost));
	x86_land8(w, to_hit);
	x86_land8(w, to_taken);
	x86_put(w, found, sizeof(found));
}

int x86_signal_set(struct x86_writer *w, uint64_t entry, uint32_t id)
{
	static const uint8_t mov_imm[] = { 0x65, 0x48, 0xc7, 0x04, 0x25, D32(TA_SIGNAL) };   /* mov gs:[SIGNAL],imm32 */
	if (id) {
		x86_put(w, mov_imm, sizeof(mov_imm));
		x86_put(w, &id, 4);
		return w->failed ? -ENOMEM : 0;
	}
	static const uint8_t keep[] = { 0x48, 0x89, 0x44, 0x24, 0xf8 };      /* mov [rsp-8],rax */
	static const uint8_t lea[] = { 0x48, 0x8d, 0x05 };                   /* lea rax,[rip+d32] */
	static const uint8_t store[] = {
		0x65, 0x48, 0x89, 0x04, 0x25, D32(TA_SIGNAL),                /* mov gs:[SIGNAL],rax */
		0x48, 0x8b, 0x44, 0x24, 0xf8,                                /* mov rax,[rsp-8] */
	};
	x86_put(w, keep, sizeof(keep));
	/* within the copy: it moves as one when placed again */
	int64_t d = (int64_t)entry - (int64_t)(x86_writer_pc(w) + sizeof(lea) + 4);
	if (d != (int32_t)d)
		return -RTL_ERR_UNSUPPORTED;
	x86_put(w, lea, sizeof(lea));
	int32_t d32 = (int32_t)d;
	x86_put(w, &d32, 4);
	x86_put(w, store, sizeof(store));
	return w->failed ? -ENOMEM : 0;
}

/* rax the time, rcx the free frame, rdx the timer: counts the call,
 * pushes its frame (when there is room) with its context. */
static void push_frame(struct x86_writer *w)
{
	static const uint8_t push[] = {
		0x65, 0x48, 0xff, 0x02,                          /* inc qword gs:[rdx]: calls */
		0x65, 0x48, 0x3b, 0x0c, 0x25, D32(TA_LIMIT),     /* cmp rcx,gs:[LIMIT] */
	};
	static const uint8_t fill[] = {
		0x48, 0x8b, 0x34, 0x24,                          /* mov rsi,[rsp]: the return address */
		0x48, 0x89, 0x71, 40,                            /* mov [rcx+40],rsi */
		0x48, 0x8d, 0x71, TA_FRAME_SIZE,                 /* lea rsi,[rcx+FRAME] */
		0x65, 0x48, 0x89, 0x34, 0x25, D32(TA_TOP),       /* mov gs:[TOP],rsi: published */
		0x48, 0x89, 0x21,                                /* mov [rcx],rsp */
		0x48, 0x89, 0x51, 0x08,                          /* mov [rcx+8],rdx */
		0x48, 0x89, 0x41, 0x10,                          /* mov [rcx+16],rax */
		0x48, 0xc7, 0x41, 0x18, 0, 0, 0, 0,              /* mov qword [rcx+24],0 */
		0x48, 0x89, 0x79, 0x20,                          /* mov [rcx+32],rdi */
		0x65, 0x48, 0xff, 0x42, 0x08,                    /* inc qword gs:[rdx+8]: active */
		0x48, 0x89, 0xf1,                                /* mov rcx,rsi */
	};
	x86_put(w, push, sizeof(push));
	size_t to_full = x86_jump32(w, 0x77);                          /* ja: no room */
	find_context(w);
	x86_put(w, fill, sizeof(fill));
	x86_land32(w, to_full);
}

/* rax the time, rcx the top: closes the frames at or below the stack
 * pointer (left without their exits), or with BELOW_ONLY those below it
 * (before a return: the frames at it are the function's own). */
static void close_left(struct x86_writer *w, bool below_only)
{
	size_t stale = w->len;
	x86_put(w, cmp_top, sizeof(cmp_top));
	size_t to_live = x86_jump8(w, below_only ? 0x73 : 0x77);       /* jae / ja: the top frame is live */
	x86_put(w, pop, sizeof(pop));
	x86_jump8_back(w, 0xeb, stale);
	x86_land8(w, to_live);
}

/* A sampled leaf's call that pushes no frame: rcx the top (no frame left
 * below the stack pointer), rdx the timer. Counts the call in the timer and
 * in its context's node, and in the node's untimed count (none for the
 * lost node, whose offset from the nodes is negative). */
static void count_untimed(struct x86_writer *w)
{
	static const uint8_t call[] = {
		0x65, 0x48, 0xff, 0x02,                          /* inc qword gs:[rdx]: calls */
		0x65, 0x48, 0x3b, 0x0c, 0x25, D32(TA_LIMIT),     /* cmp rcx,gs:[LIMIT] */
	};
	static const uint8_t untimed[] = {
		0x4d, 0x85, 0xc0,                                /* test r8,r8 */
		0x78, 0x0c,                                      /* js: the lost node */
		0x49, 0xc1, 0xe8, 0x02,                          /* shr r8,2: node K's untimed word */
		0x65, 0x49, 0xff, 0x80, D32(TA_UNTIMED),         /* inc qword gs:[r8+UNTIMED] */
	};
	x86_put(w, call, sizeof(call));
	size_t to_full = x86_jump32(w, 0x77);                          /* ja: no room, no node */
	find_context(w);
	x86_put(w, untimed, sizeof(untimed));
	x86_land32(w, to_full);
}

int x86_timer_start(struct x86_writer *w, uint64_t desc, bool sampled)
{
	static const uint8_t mov_rdx[] = { 0x48, 0x8b };
	static const uint8_t first[] = {
		0x65, 0x48, 0x81, 0x3a, D32(TA_LEAF_FIRST - 1),  /* cmp qword gs:[rdx],FIRST-1: calls so far */
	};
	static const uint8_t left[] = { 0x65, 0x48, 0xff, 0x0c, 0x25, D32(TA_LEAF_LEFT) };   /* dec qword gs:[LEFT] */
	/* the next timed call 9 to 24 calls on, by the low bits of this
	 * timer's calls: no fixed stride for a loop's pattern of calls to fall in with */
	static const uint8_t reset[] = {
		0x65, 0x48, 0x8b, 0x02,                          /* mov rax,gs:[rdx] */
		0x83, 0xe0, 0x0f,                                /* and eax,15 */
		0x83, 0xc0, 0x08,                                /* add eax,8 */
		0x65, 0x48, 0x89, 0x04, 0x25, D32(TA_LEAF_LEFT), /* mov gs:[LEFT],rax */
	};
	size_t to_timed = 0, to_timed2 = 0, to_done = 0;
	x86_put(w, save, sizeof(save));
	x86_put(w, save_more, sizeof(save_more));
	if (sampled) {
		/* untimed unless frames were left below (closing them needs the
		 * clock), the thread's first calls of it, or the countdown ends */
		x86_put(w, top, sizeof(top));
		x86_put(w, cmp_top, sizeof(cmp_top));
		to_timed = x86_jump32(w, 0x76);                        /* jbe: frames to close */
		x86_rip_form(w, mov_rdx, 2, 2, desc, NULL, 0);           /* mov rdx,[rip+desc] */
		x86_put(w, first, sizeof(first));
		to_timed2 = x86_jump32(w, 0x76);                       /* jbe: one of the first */
		x86_put(w, left, sizeof(left));
		size_t to_reset = x86_jump32(w, 0x78);                 /* js: this one is timed */
		count_untimed(w);
		to_done = x86_jump32(w, 0xeb);
		x86_land32(w, to_reset);
		x86_put(w, reset, sizeof(reset));
		x86_land32(w, to_timed);
		x86_land32(w, to_timed2);
	}
	put_now_top(w);
	close_left(w, false);
	x86_rip_form(w, mov_rdx, 2, 2, desc, NULL, 0);           /* mov rdx,[rip+desc] */
	push_frame(w);
	if (sampled)
		x86_land32(w, to_done);
	x86_put(w, restore, sizeof(restore));
	x86_put(w, restore_more, sizeof(restore_more));
	return w->failed ? -ENOMEM : 0;
}

int x86_timer_close_left(struct x86_writer *w, bool at_exit)
{
	/* the pops need rax, rdx, rcx and rsi only */
	x86_put(w, at_exit ? exit_save : save, at_exit ? sizeof(exit_save) : sizeof(save));
	put_now_top(w);
	close_left(w, at_exit);
	x86_put(w, at_exit ? exit_restore : restore, at_exit ? sizeof(exit_restore) : sizeof(restore));
	return w->failed ? -ENOMEM : 0;
}

int x86_timer_push_numbered(struct x86_writer *w, uint32_t number, bool close)
{
	if (number < 1 || number >= TA_MAX_TIMERS)
		return -RTL_ERR_UNSUPPORTED;
	uint32_t off = (uint32_t)(TA_WORDS + number * sizeof(struct ta_timer));
	uint8_t mov_rdx[] = { 0x48, 0xc7, 0xc2, D32(off) };      /* mov rdx,OFF */
	x86_put(w, save, sizeof(save));
	x86_put(w, save_more, sizeof(save_more));
	put_now_top(w);
	if (close)
		close_left(w, false);
	x86_put(w, mov_rdx, sizeof(mov_rdx));
	push_frame(w);
	x86_put(w, restore, sizeof(restore));
	x86_put(w, restore_more, sizeof(restore_more));
	return w->failed ? -ENOMEM : 0;
}

int x86_timer_stop(struct x86_writer *w)
{
	x86_put(w, exit_save, sizeof(exit_save));
	x86_put(w, top, sizeof(top));
	x86_put(w, cmp_top, sizeof(cmp_top));
	/* no frame of its own (a sampled leaf's untimed call), none left
	 * below: no clock to read */
	size_t to_out = x86_jump8(w, 0x77);                            /* ja */
	x86_put(w, now, sizeof(now));
	/* the frames left below the stack pointer, then the function's own
	 * (those whose entry had this stack pointer) */
	size_t loop = w->len;
	x86_put(w, pop, sizeof(pop));
	x86_put(w, cmp_top, sizeof(cmp_top));
	x86_jump8_back(w, 0x76, loop);                                 /* jbe */
	x86_land8(w, to_out);
	x86_put(w, exit_restore, sizeof(exit_restore));
	return w->failed ? -ENOMEM : 0;
}

int x86_countdown(struct x86_writer *w, uint32_t n, bool keep_flags)
{
	static const uint8_t sub[] = { 0x65, 0x48, 0x81, 0x2c, 0x25, D32(TA_BBV_LEFT) };   /* sub qword gs:[LEFT],imm32 */
	static const uint8_t ended[] = { 0x79, 0x01, 0xcc };   /* jns on; int3 (reticle ends the interval); on: */
	/* below the red zone, as the counters' flag-keeping form */
	if (n > INT32_MAX)
		return -RTL_ERR_UNSUPPORTED;
	if (keep_flags)
		x86_below_red_zone(w, 0x9c);   /* pushfq */
	x86_put(w, sub, sizeof(sub));
	x86_put_u32(w, n);
	x86_put(w, ended, sizeof(ended));
	if (keep_flags)
		x86_back_from_below(w, 0x9d);   /* popfq */
	return w->failed ? -ENOMEM : 0;
}

/* What a timed call of an empty function measures: the snippets' work
 * between the two clock reads. Run here, in reticle, on a thread area of
 * its own (this thread's %gs base set to it for the while: reticle's own
 * code leaves %gs unused, as programs do); the least mean of a few rounds. */
uint64_t x86_timer_call_cost(void)
{
	enum { ROUNDS = 5, CALLS = 2000, CODE = 4096 };
	uint8_t *a = mmap(NULL, TA_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
			  -1, 0);
	uint8_t *code = mmap(NULL, CODE, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint64_t best = 0, base = (uint64_t)(uintptr_t)a, old_gs = 0;
	struct x86_writer w;
	if (a == MAP_FAILED || code == MAP_FAILED)
		goto out;
	thread_area_init(a, base, false);
	uint64_t *desc = (uint64_t *)(code + CODE - 8);
	*desc = TA_WORDS;
	x86_writer_init(&w, (uint64_t)(uintptr_t)code);
	x86_timer_start(&w, (uint64_t)(uintptr_t)desc, false);
	x86_timer_stop(&w);
	x86_put_u8(&w, 0xc3);   /* ret */
	bool ok = !w.failed && w.len < CODE - 8;
	if (ok)
		memcpy(code, w.buf, w.len);
	x86_writer_free(&w);
	if (!ok || syscall(SYS_arch_prctl, ARCH_GET_GS, &old_gs) || syscall(SYS_arch_prctl, ARCH_SET_GS, base))
		goto out;
	void (*fn)(void) = (void (*)(void))(uintptr_t)code;
	const struct ta_timer *t = (const struct ta_timer *)(a + TA_WORDS);
	for (int r = 0; r < ROUNDS; r++) {
		uint64_t before = t->inclusive;
		for (int i = 0; i < CALLS; i++)
			fn();
		uint64_t mean = (t->inclusive - before) / CALLS;
		if (r && (!best || mean < best))   /* the first round warms up */
			best = mean;
	}
	syscall(SYS_arch_prctl, ARCH_SET_GS, old_gs);
out:
	if (a != MAP_FAILED)
		munmap(a, TA_SIZE);
	if (code != MAP_FAILED)
		munmap(code, CODE);
	return best;
}
