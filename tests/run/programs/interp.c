/* Two interpreters of the same bytecode: one dispatches with a switch (a
 * jump table), one with computed gotos (a table of label addresses). */
#include <stdio.h>
#include <stdlib.h>

#define NOINLINE __attribute__((noinline))
enum { PUSH, ADD, MUL, DUP, SWAP, DROP, JNZ, DEC, HALT, NOP1, NOP2, NOP3 };

static const unsigned char prog[] = {
	PUSH, 200, PUSH, 1, SWAP, DUP, JNZ, 10, DROP, HALT,
	SWAP, PUSH, 3, MUL, PUSH, 7, ADD, NOP1, NOP2, NOP3, SWAP, DEC, DUP, JNZ, 10, DROP, HALT
};

NOINLINE long run_switch(void)
{
	long st[16], *sp = st;
	const unsigned char *pc = prog;
	for (;;) {
		switch (*pc++) {
		case PUSH: *sp++ = *pc++; break;
		case ADD: sp--; sp[-1] = (sp[-1] + sp[0]) % 1000003; break;
		case MUL: sp--; sp[-1] = (sp[-1] * sp[0]) % 1000003; break;
		case DUP: *sp = sp[-1]; sp++; break;
		case SWAP: { long t = sp[-1]; sp[-1] = sp[-2]; sp[-2] = t; break; }
		case DROP: sp--; break;
		case JNZ: { int to = *pc++; if (*--sp) pc = prog + to; break; }
		case DEC: sp[-1]--; break;
		case NOP1: case NOP2: case NOP3: break;
		case HALT: return sp[-1];
		default: abort();
		}
	}
}

NOINLINE long run_goto(void)
{
	static const void *const ops[] = { &&push, &&add, &&mul, &&dup, &&swap, &&drop, &&jnz,
					   &&dec, &&halt, &&nop, &&nop, &&nop };
	long st[16], *sp = st;
	const unsigned char *pc = prog;
#define NEXT goto *ops[*pc++]
	NEXT;
push: *sp++ = *pc++; NEXT;
add: sp--; sp[-1] = (sp[-1] + sp[0]) % 1000003; NEXT;
mul: sp--; sp[-1] = (sp[-1] * sp[0]) % 1000003; NEXT;
dup: *sp = sp[-1]; sp++; NEXT;
swap: { long t = sp[-1]; sp[-1] = sp[-2]; sp[-2] = t; } NEXT;
drop: sp--; NEXT;
jnz: { int to = *pc++; if (*--sp) pc = prog + to; } NEXT;
dec: sp[-1]--; NEXT;
nop: NEXT;
halt: return sp[-1];
}

/* Labels as offsets from a base label (OCaml's bytecode interpreter does
 * this on 64-bit hosts): the base's address is added to, so the copy must
 * leave it alone. */
NOINLINE long run_offsets(void)
{
	static const int ops[] = { &&push - &&push, &&add - &&push, &&mul - &&push, &&dup - &&push,
				   &&swap - &&push, &&drop - &&push, &&jnz - &&push, &&dec - &&push,
				   &&halt - &&push, &&nop - &&push, &&nop - &&push, &&nop - &&push };
	long st[16], *sp = st;
	const unsigned char *pc = prog;
#undef NEXT
#define NEXT goto *(&&push + ops[*pc++])
	NEXT;
push: *sp++ = *pc++; NEXT;
add: sp--; sp[-1] = (sp[-1] + sp[0]) % 1000003; NEXT;
mul: sp--; sp[-1] = (sp[-1] * sp[0]) % 1000003; NEXT;
dup: *sp = sp[-1]; sp++; NEXT;
swap: { long t = sp[-1]; sp[-1] = sp[-2]; sp[-2] = t; } NEXT;
drop: sp--; NEXT;
jnz: { int to = *pc++; if (*--sp) pc = prog + to; } NEXT;
dec: sp[-1]--; NEXT;
nop: NEXT;
halt: return sp[-1];
}

int main(void)
{
	long a = 0, b = 0, c = 0;
	for (int i = 0; i < 200; i++) {
		a += run_switch();
		b += run_goto();
		c += run_offsets();
	}
	printf("switch %ld goto %ld offsets %ld\n", a, b, c);
	return a == b && b == c ? 0 : 1;
}
