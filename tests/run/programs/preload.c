/* Run with LD_PRELOAD=./shim.so (tests/run/plugins/shim.c): every line
 * goes through the interposer, which must find the real puts. */
#include <stdio.h>

__attribute__((noinline)) static void say(int i)
{
	char line[32];
	snprintf(line, sizeof(line), "line %d", i);
	puts(line);
}

int main(void)
{
	for (int i = 0; i < 7; i++)
		say(i);
	return 0;
}
