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

/* repe/repne string instructions may stop before rcx runs out: valgrind
 * counts each iteration run, one more when rcx reaches 0 with the condition
 * still holding, and one when rcx starts at 0. The results use the flags,
 * rcx, rsi and rdi the instruction leaves, so a run that clobbers any of
 * them prints something else than the native run. With rcx 0 the flags
 * stay as they were: the test before sets them (ZF 1). */
NOINLINE unsigned long cmp_bytes(const char *a, const char *b, unsigned long n)
{
	const char *a0 = a;
	unsigned char eq;
	__asm__ volatile("test %%rcx, %%rcx\n\trepe cmpsb" : "+S"(a), "+D"(b), "+c"(n), "=@ccz"(eq) : : "memory");
	return n * 1000 + (unsigned long)(a - a0) * 2 + eq;
}

NOINLINE unsigned long find_byte(const char *s, int c, unsigned long n)
{
	const char *s0 = s;
	unsigned char found;
	__asm__ volatile("test %%rcx, %%rcx\n\trepne scasb" : "+D"(s), "+c"(n), "=@ccz"(found) : "a"(c) : "memory");
	return n * 1000 + (unsigned long)(s - s0) * 2 + found;
}

NOINLINE unsigned long cmp_quads(const unsigned long *a, const unsigned long *b, unsigned long n)
{
	const unsigned long *a0 = a;
	unsigned char eq;
	__asm__ volatile("test %%rcx, %%rcx\n\trepe cmpsq" : "+S"(a), "+D"(b), "+c"(n), "=@ccz"(eq) : : "memory");
	return n * 1000 + (unsigned long)(a - a0) * 2 + eq;
}

NOINLINE unsigned long find_quad(const unsigned long *s, unsigned long v, unsigned long n)
{
	const unsigned long *s0 = s;
	unsigned char found;
	__asm__ volatile("test %%rcx, %%rcx\n\trepne scasq" : "+D"(s), "+c"(n), "=@ccz"(found) : "a"(v) : "memory");
	return n * 1000 + (unsigned long)(s - s0) * 2 + found;
}

/* Byte and quad arrays equal but for element 30, whose values are unique:
 * lengths 0 (rcx 0), 20 (full run), 31 (stops on the last), 100 (early),
 * each case a different number of times so that miscounts of two cases
 * cannot cancel out in the function's total. */
NOINLINE unsigned long scan_strings(void)
{
	static char s1[128], s2[128];
	static unsigned long q1[128], q2[128];
	static const unsigned long lens[] = { 0, 20, 31, 100, 20, 0, 20 };
	unsigned long r = 0;
	for (int k = 0; k < 128; k++) {
		s1[k] = s2[k] = (char)k;
		q1[k] = q2[k] = (unsigned long)k * 3 + 1;
	}
	s2[30] = (char)0xff;
	q2[30] = 7;
	for (size_t k = 0; k < sizeof(lens) / sizeof(lens[0]); k++) {
		unsigned long n = lens[k];
		r = r * 31 + cmp_bytes(s1, s2, n) + find_byte(s1, 30, n);
		r = r * 31 + cmp_quads(q1, q2, n) + find_quad(q1, q1[30], n);
	}
	return r;
}

/* A call to a cold function puts its block in rejoin.cold (.text.unlikely),
 * which jumps back into rejoin's hot code: the rest of rejoin must still run
 * in its copy and be counted. */
__attribute__((cold, noinline)) long rare(long x) { return x / 3 + 1; }
NOINLINE long rejoin(long x)
{
	long r = x * 5;
	if (x % 13 == 0)
		r = rare(r) + x;
	for (int k = 0; k < 8; k++)
		r += (r >> 3) ^ k;
	return r;
}

/* rejoin_mid.cold jumps back to just after the hot call, where the two
 * paths join: the middle of a block of rejoin_mid's own control flow. A
 * block must start there too, or the instructions from there to the
 * block's end go uncounted on the cold path. */
volatile long bad_seen;
__attribute__((cold, noinline)) void report_bad(long i) { bad_seen += i; }
NOINLINE long step(long i) { return i * 3; }
NOINLINE long rejoin_mid(int n)
{
	long acc = 0;
	for (int i = 0; i < n; i++) {
		if (i % 100 == 7) {
			report_bad(i);
			acc -= 1;
			continue;
		}
		acc += step(i);
	}
	return acc;
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
	/* through a pointer: rejoin is relocated at its own first call, and
	 * rejoin.cold with it while rejoin's copy is still being made */
	long (*volatile rejoin_ptr)(long) = rejoin;
	for (int i = 0; i < 100; i++)
		acc += rejoin_ptr(i);
	acc += rejoin_mid(1000);
	static char area[4096], from[4096] = "rep";
	for (int i = 0; i < 20; i++)
		fill_copy(area, from, (unsigned long)i * 37);
	acc += area[3] + area[500];
	printf("%lu\n", scan_strings());
	snprintf(buf, sizeof(buf), "%ld-%d", acc, arr[100]);
	printf("%s %u\n", buf, checksum(buf));
	return (int)(acc & 1);
}
