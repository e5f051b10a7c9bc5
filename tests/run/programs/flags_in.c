/* Functions entered with the flags live, as reticle must not assume they
 * are dead at an entry: Go's asyncPreempt (called by its signal handler's
 * injected call, with every register of the interrupted code live) saves
 * them with pushfq and gives them back at its return; a .cold part is
 * reached by a jump with its conditions still in the flags. The probes at
 * such an entry or return (a counter's add, a timer's cmp) changed them:
 * a goroutine preempted between a test and its jump took the wrong branch
 * (index out of range with a valid index, recursion past its end). */
#include <stdio.h>

/* carry_in(): the carry flag at its entry. keeps_flags(): adds 1 to rdi
 * with the caller's flags kept and given back. x is 0 or 1; CF is set
 * when x is 0 (cmp $1), then: carry_test(x) enters carry_in as a signal
 * handler's injected call does (the return address pushed, a jump),
 * keep_test(x) enters keeps_flags so and reads the flags it gives back,
 * jump_test(x) jumps to carry_in as to a .cold part. */
__asm__(".text\n"
	".globl carry_in\n.type carry_in,@function\ncarry_in:\n"
	"\tsetc %al\n\tmovzbl %al,%eax\n\tret\n.size carry_in,.-carry_in\n"
	".globl keeps_flags\n.type keeps_flags,@function\nkeeps_flags:\n"
	"\tpushfq\n\tadd $1,%rdi\n\tpopfq\n\tret\n.size keeps_flags,.-keeps_flags\n"
	".globl carry_test\n.type carry_test,@function\ncarry_test:\n"
	"\tlea 1f(%rip),%rax\n\tcmp $1,%edi\n\tpush %rax\n\tjmp carry_in\n1:\tret\n"
	".size carry_test,.-carry_test\n"
	".globl keep_test\n.type keep_test,@function\nkeep_test:\n"
	"\tlea 1f(%rip),%rax\n\tcmp $1,%edi\n\tpush %rax\n\tjmp keeps_flags\n"
	"1:\tsetc %al\n\tmovzbl %al,%eax\n\tret\n.size keep_test,.-keep_test\n"
	".globl jump_test\n.type jump_test,@function\njump_test:\n"
	"\tcmp $1,%edi\n\tjmp carry_in\n.size jump_test,.-jump_test\n");

int carry_test(int x), keep_test(int x), jump_test(int x);

int main(void)
{
	int wrong = 0, ones = 0;
	for (int i = 0; i < 3000; i++) {
		int want = (i & 1) == 0, x = i & 1;
		int got[3] = { carry_test(x), keep_test(x), jump_test(x) };
		for (int k = 0; k < 3; k++) {
			wrong += got[k] != want;
			ones += got[k];
		}
	}
	printf("carry seen %d times, %d wrong\n", ones, wrong);
	return wrong != 0;
}
