/* Smallest stdio program: start-up, printf, exit status. */
#include <stdio.h>
int main(int argc, char **argv)
{
	printf("hello from %s with %d args\n", argv[0], argc);
	for (int i = 1; i < argc; i++)
		printf("arg %d: %s\n", i, argv[i]);
	return 3;
}
