/* A bad pointer: the guest must die of SIGSEGV (status 139) after its
 * flushed output, as under Linux and qemu-user. */
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv)
{
	volatile int *p = (int *)(long)(argc * 0 + 0x10);   /* an unmapped page, aligned */
	printf("before the fault\n");
	fflush(stdout);
	return *p;
}
