/* The timer snippets. Both run where the flags are dead and the red zone is
 * free (a function's entry, a return), so they keep four registers there
 * and never move %rsp: unwind information needs no rows for them. What a
 * thread keeps is in its area, at %gs (runtime/thread_area.h): the top of
 * its frame stack, the frames, the timers' words.
 *
 * Frames pair entries with exits by the stack pointer, not by counting:
 * at an entry, every frame whose stack pointer is at or below the current
 * one was left without its exit (a tail call jumped out of it, longjmp or
 * an exception unwound it) and is closed now; at a return, every frame
 * below the current stack pointer is closed, then the function's own (at
 * it exactly). A frame is published (the top moved) before it is filled,
 * so that a signal handler running in between pushes above it. */
#include <errno.h>
#include "isa/x86_64/timers.h"
#include "runtime/thread_area.h"

static const uint8_t save[] = {
	0x48, 0x89, 0x44, 0x24, 0xf8,   /* mov [rsp-8],rax */
	0x48, 0x89, 0x54, 0x24, 0xf0,   /* mov [rsp-16],rdx */
	0x48, 0x89, 0x4c, 0x24, 0xe8,   /* mov [rsp-24],rcx */
	0x48, 0x89, 0x74, 0x24, 0xe0,   /* mov [rsp-32],rsi */
	0x0f, 0x31,                     /* rdtsc */
	0x48, 0xc1, 0xe2, 0x20,         /* shl rdx,32 */
	0x48, 0x09, 0xd0,               /* or rax,rdx: the time */
	0x65, 0x48, 0x8b, 0x0c, 0x25, TA_TOP, 0, 0, 0,   /* mov rcx,gs:[TOP] */
};
static const uint8_t restore[] = {
	0x65, 0x48, 0x89, 0x0c, 0x25, TA_TOP, 0, 0, 0,   /* mov gs:[TOP],rcx */
	0x48, 0x8b, 0x74, 0x24, 0xe0,   /* mov rsi,[rsp-32] */
	0x48, 0x8b, 0x4c, 0x24, 0xe8,   /* mov rcx,[rsp-24] */
	0x48, 0x8b, 0x54, 0x24, 0xf0,   /* mov rdx,[rsp-16] */
	0x48, 0x8b, 0x44, 0x24, 0xf8,   /* mov rax,[rsp-8] */
};
/* rax the time, rcx the top: the top frame is closed (rcx lowered). */
static const uint8_t pop[] = {
	0x48, 0x83, 0xe9, 0x20,         /* sub rcx,32 */
	0x48, 0x89, 0xc6,               /* mov rsi,rax */
	0x48, 0x2b, 0x71, 0x10,         /* sub rsi,[rcx+16]: elapsed */
	0x48, 0x01, 0x71, 0xf8,         /* add [rcx-8],rsi: the parent's children */
	0x48, 0x8b, 0x51, 0x08,         /* mov rdx,[rcx+8]: its timer */
	0x65, 0x48, 0xff, 0x4a, 0x08,   /* dec qword gs:[rdx+8]: active */
	0x75, 0x05,                     /* jnz: not its outermost frame */
	0x65, 0x48, 0x01, 0x72, 0x10,   /* add gs:[rdx+16],rsi: inclusive */
	0x48, 0x2b, 0x71, 0x18,         /* sub rsi,[rcx+24] */
	0x65, 0x48, 0x01, 0x72, 0x18,   /* add gs:[rdx+24],rsi: exclusive */
};
static const uint8_t cmp_top[] = { 0x48, 0x39, 0x61, 0xe0 };   /* cmp [rcx-32],rsp */

int x86_timer_start(struct x86_writer *w, uint64_t desc)
{
	static const uint8_t mov_rdx[] = { 0x48, 0x8b };
	static const uint8_t push[] = {
		0x65, 0x48, 0xff, 0x02,                          /* inc qword gs:[rdx]: calls */
		0x65, 0x48, 0x3b, 0x0c, 0x25, TA_LIMIT, 0, 0, 0, /* cmp rcx,gs:[LIMIT] */
	};
	static const uint8_t fill[] = {
		0x48, 0x8d, 0x71, 0x20,                          /* lea rsi,[rcx+32] */
		0x65, 0x48, 0x89, 0x34, 0x25, TA_TOP, 0, 0, 0,   /* mov gs:[TOP],rsi: published */
		0x48, 0x89, 0x21,                                /* mov [rcx],rsp */
		0x48, 0x89, 0x51, 0x08,                          /* mov [rcx+8],rdx */
		0x48, 0x89, 0x41, 0x10,                          /* mov [rcx+16],rax */
		0x48, 0xc7, 0x41, 0x18, 0, 0, 0, 0,              /* mov qword [rcx+24],0 */
		0x65, 0x48, 0xff, 0x42, 0x08,                    /* inc qword gs:[rdx+8]: active */
		0x48, 0x89, 0xf1,                                /* mov rcx,rsi */
	};
	x86_put(w, save, sizeof(save));
	size_t stale = w->len;
	x86_put(w, cmp_top, sizeof(cmp_top));
	size_t to_push = x86_jump8(w, 0x77);                           /* ja: the top frame is live */
	x86_put(w, pop, sizeof(pop));
	x86_jump8_back(w, 0xeb, stale);
	x86_land8(w, to_push);
	x86_rip_form(w, mov_rdx, 2, 2, desc, NULL, 0);           /* mov rdx,[rip+desc] */
	x86_put(w, push, sizeof(push));
	size_t to_full = x86_jump8(w, 0x77);                           /* ja: no room */
	x86_put(w, fill, sizeof(fill));
	x86_land8(w, to_full);
	x86_put(w, restore, sizeof(restore));
	return w->failed ? -ENOMEM : 0;
}

int x86_timer_stop(struct x86_writer *w)
{
	static const uint8_t cmp_popped[] = { 0x48, 0x39, 0x21 };   /* cmp [rcx],rsp */
	x86_put(w, save, sizeof(save));
	size_t loop = w->len;
	x86_put(w, cmp_top, sizeof(cmp_top));
	size_t to_out = x86_jump8(w, 0x77);                            /* ja: not ours, not left */
	x86_put(w, pop, sizeof(pop));
	x86_put(w, cmp_popped, sizeof(cmp_popped));
	x86_jump8_back(w, 0x72, loop);                                     /* jb: that one was left below */
	x86_land8(w, to_out);
	x86_put(w, restore, sizeof(restore));
	return w->failed ? -ENOMEM : 0;
}
