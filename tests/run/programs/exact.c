/* A deterministic program for the callgrind comparison: recursion, tail
 * calls, a switch table, calls through pointers, loops and libc calls. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NOINLINE __attribute__((noinline))

NOINLINE long fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }

NOINLINE int classify(int op, int x)
{
	switch (op) {
	case 0: return x + 1;
	case 1: return x * 3;
	case 2: return x ^ 0x55;
	case 3: return x - 7;
	case 4: return x / 5;
	case 5: return x % 11;
	case 6: return -x;
	case 7: return x << 2;
	default: return 0;
	}
}

NOINLINE int even(unsigned n);
NOINLINE int odd(unsigned n) { return n == 0 ? 0 : even(n - 1); }
NOINLINE int even(unsigned n) { return n == 0 ? 1 : odd(n - 1); }

static int cmp(const void *a, const void *b)
{
	return *(const int *)a - *(const int *)b;
}

NOINLINE unsigned checksum(const char *s)
{
	unsigned h = 5381;
	while (*s)
		h = h * 33 + (unsigned char)*s++;
	return h;
}

/* rep string instructions: valgrind counts every iteration as executed */
NOINLINE void fill_copy(char *dst, const char *src, unsigned long n)
{
	unsigned long k = n;
	char *d = dst;
	__asm__ volatile("rep stosb" : "+D"(d), "+c"(k) : "a"(0x2a) : "memory");
	k = n / 2;
	d = dst;
	__asm__ volatile("rep movsb" : "+D"(d), "+S"(src), "+c"(k) : : "memory");
}

typedef int (*op_fn)(int, int);
NOINLINE int add(int a, int b) { return a + b; }
NOINLINE int mul(int a, int b) { return a * b; }

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 20;
	long acc = fib(n);
	int arr[512];
	op_fn ops[2] = { add, mul };
	char buf[64];

	for (int i = 0; i < 512; i++)
		arr[i] = classify(i % 9, i * 7919 % 1000);
	qsort(arr, 512, sizeof(arr[0]), cmp);
	for (int i = 0; i < 1000; i++)
		acc += ops[i & 1](i, (int)(acc & 7));
	acc += even(1001) + odd(777);
	static char area[4096], from[4096] = "rep";
	for (int i = 0; i < 20; i++)
		fill_copy(area, from, (unsigned long)i * 37);
	acc += area[3] + area[500];
	snprintf(buf, sizeof(buf), "%ld-%d", acc, arr[100]);
	printf("%s %u\n", buf, checksum(buf));
	return (int)(acc & 1);
}
