/* Integer division by zero: RISC-V gives -1 (no trap); on MIPS GCC emits
 * "teq divisor, $0, 7" and Linux sends SIGFPE for break code 7
 * (arch/mips/kernel/traps.c, BRK_DIVZERO): status 128 + 8. qemu-mipsel 7.2
 * sends SIGTRAP instead, so the MIPS check follows the kernel. */
#include <stdio.h>
int main(int argc, char **argv)
{
	printf("dividing\n");
	fflush(stdout);
	return 10 / (argc - 1);
}
