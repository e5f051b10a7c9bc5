/* Reads numbers, one a line, and answers mix(N); before each read it makes
 * a system call through libc (getppid), whose 'syscall' leaves its return
 * address in rcx, and the read's frame leaves most of a large buffer
 * unwritten, where older words of the stack stay. Prints the lines read at
 * the end. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static long lines;
static long parent;

__attribute__((noinline)) static long next_line(void)
{
	char buf[16384];   /* only its first bytes are written */
	size_t n = 0;
	while (n < 63) {
		ssize_t k = read(0, buf + n, 1);
		if (k <= 0)
			return -1;
		if (buf[n++] == '\n')
			break;
	}
	buf[n] = 0;
	lines++;
	return atol(buf);
}

__attribute__((noinline)) static long mix(long x)
{
	for (int i = 0; i < 5; i++)
		x = (x * 31 + i) % 1000003;
	return x;
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	parent = getppid();
	for (;;) {
		if (getppid() != parent)
			return 2;
		long n = next_line();
		if (n < 0)
			break;
		printf("%ld\n", mix(n));
	}
	printf("lines %ld\n", lines);
	return 0;
}
