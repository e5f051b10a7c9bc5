/* abort(): glibc raises SIGABRT with tgkill; the exit status must be
 * 128 + 6 as for a real process (qemu-user's is), after flushed output. */
#include <stdio.h>
#include <stdlib.h>
int main(void)
{
	printf("about to abort\n");
	fflush(stdout);
	abort();
}
