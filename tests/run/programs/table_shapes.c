/* Jump tables as compilers other than gcc lay them out, written in assembly
 * so that the shape does not depend on the compiler that builds the test:
 * - tbl_end: clang's switch on an enum without a bounds check sends an
 *   unreachable case to a label at the function's very end (not code: the
 *   padding after it), and the table goes on after that entry
 *   (llvm::opt::Option::acceptInternal in libLLVM);
 * - tbl_data: rustc loads the address of a data array with the same
 *   'lea reg,[rip+X]' as a table base, in a function that has a real
 *   table, and the array's words read as offsets land on instructions of
 *   the function (rustc_resolve's Resolver::new). A copy must not treat the
 *   array as a table, or the program reads changed data.
 * The native run is the oracle: same output, same exit status. */
#include <stdio.h>

int tbl_end(int i);
int tbl_data(int i);

__asm__(
	".text\n"
	".globl tbl_end\n"
	".type tbl_end,@function\n"
	"tbl_end:\n"
	"	lea tbl_end_table(%rip), %rdx\n"
	"	mov %edi, %eax\n"
	"	movslq (%rdx,%rax,4), %rax\n"
	"	add %rdx, %rax\n"
	"	jmp *%rax\n"
	".Le0:	mov $10, %eax\n"
	"	ret\n"
	".Le1:	mov $11, %eax\n"
	"	ret\n"
	".Le3:	mov $13, %eax\n"
	"	ret\n"
	".Le4:	mov $14, %eax\n"
	"	ret\n"
	".Lend:\n"
	".size tbl_end, .Lend - tbl_end\n"
	"	int3\n"
	"	int3\n"
	".p2align 4, 0xcc\n"
	".globl tbl_data\n"
	".type tbl_data,@function\n"
	"tbl_data:\n"
	"	lea tbl_data_words(%rip), %r8\n"
	"	lea tbl_data_table(%rip), %r9\n"
	"	mov (%r8,%rdi,4), %ecx\n"
	"	movslq (%r9,%rdi,4), %rax\n"
	"	add %r9, %rax\n"
	"	jmp *%rax\n"
	".Ld0:	lea 100(%rcx), %eax\n"
	"	ret\n"
	".Ld1:	lea 200(%rcx), %eax\n"
	"	ret\n"
	".size tbl_data, . - tbl_data\n"
	".section .rodata\n"
	".p2align 2\n"
	"tbl_end_table:\n"
	"	.long .Le0 - tbl_end_table, .Le1 - tbl_end_table\n"
	"	.long .Lend - tbl_end_table, .Le3 - tbl_end_table\n"
	"	.long .Le4 - tbl_end_table\n"
	"tbl_data_words:\n"
	"	.long .Ld0 - tbl_data_words, .Ld1 - tbl_data_words\n"
	"tbl_data_table:\n"
	"	.long .Ld0 - tbl_data_table, .Ld1 - tbl_data_table\n"
	".text\n");

int main(void)
{
	static const int cases[] = { 0, 1, 3, 4 };
	long s = 0, d = 0;
	for (int i = 0; i < 1000; i++) {
		s += tbl_end(cases[i % 4]);
		d += tbl_data(i & 1);
	}
	printf("%ld %ld\n", s, d);
	return 0;
}
