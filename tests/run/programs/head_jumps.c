/* 256 pairs of functions like ld.so's mempcpy and memcpy: tail_I goes on
 * three bytes into head_I (inside the bytes an entry jump takes), after
 * I % 64 nops, so that the jump's field falls at every offset of a cache
 * line in one copy or another. Reads numbers, one a line; for each N
 * prints the sum over I of tail_I(N) and head_I(N). */
#include <stdio.h>
#include <stdlib.h>

#define NPAIRS 256
__asm__(
	".text\n"
	".macro PAIR i\n"
	"  .globl tail_\\i\n"
	"  .type tail_\\i,@function\n"
	"tail_\\i:\n"
	"  mov %rdi,%rax\n"
	"  .rept (\\i % 64)\n"
	"  nop\n"
	"  .endr\n"
	"  add $\\i,%rax\n"
	"  jmp head_\\i+3\n"
	"  .size tail_\\i,.-tail_\\i\n"
	"  .globl head_\\i\n"
	"  .type head_\\i,@function\n"
	"head_\\i:\n"
	"  mov %rdi,%rax\n"
	"  add $1000,%rax\n"
	"  ret\n"
	"  .size head_\\i,.-head_\\i\n"
	".endm\n"
	".macro ADDRS i\n"
	"  .quad tail_\\i, head_\\i\n"
	".endm\n"
	".altmacro\n"
	".set pair,0\n"
	".rept 256\n"
	"PAIR %pair\n"
	".set pair,pair+1\n"
	".endr\n"
	".section .data.rel.ro,\"aw\"\n"
	".p2align 3\n"
	".globl pair_table\n"
	"pair_table:\n"
	".set pair,0\n"
	".rept 256\n"
	"ADDRS %pair\n"
	".set pair,pair+1\n"
	".endr\n"
	".noaltmacro\n"
	".text\n");

extern long (*const pair_table[2 * NPAIRS])(long);

int main(void)
{
	char line[64];
	setvbuf(stdout, NULL, _IOLBF, 0);
	while (fgets(line, sizeof(line), stdin)) {
		long n = atol(line), sum = 0;
		for (int i = 0; i < 2 * NPAIRS; i++)
			sum += pair_table[i](n);
		printf("%ld\n", sum);
	}
	return 0;
}
