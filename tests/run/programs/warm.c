/* Warm-start fixture: only_with_arg runs when the program has an argument,
 * so a run without one leaves it on the warm-start list unused. */
#include <stdio.h>

__attribute__((noinline)) int only_with_arg(int x) { return x * 3 + 1; }
__attribute__((noinline)) int common(int x) { return x + 2; }

int main(int argc, char **argv)
{
	int v = common(argc);
	if (argc > 1)
		v += only_with_arg(v);
	printf("%d\n", v);
	return argc > 1 ? 7 : 0;
}
