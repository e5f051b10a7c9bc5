/* A misaligned word load: RISC-V Linux completes it (the kernel emulates
 * it), MIPS Linux kills the program with SIGBUS (status 135 on the host). */
#include <stdio.h>
int main(int argc, char **argv)
{
	char b[16] = "abcdefghijklmno";
	volatile int *p = (int *)(b + argc);
	printf("loading\n");
	fflush(stdout);
	return *p & 0xff;
}
