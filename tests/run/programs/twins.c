/* Memory tracing's untraced twins (memtrace --sample): the places where a
 * thread goes from a traced copy to its twin and back. Loops with calls
 * (callers switch where calls return), a loop without (its frame switches
 * at the window's end), a switch through a jump table (each copy has its
 * own), recursion, a call through a pointer, and libc's memset. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NOINLINE __attribute__((noinline))

static int a[4096], b[4096];

NOINLINE static int leaf(int i) { return a[i & 4095] + b[(i * 7) & 4095]; }

NOINLINE static int mid(int n)
{
	int s = 0;
	for (int i = 0; i < n; i++)
		s += leaf(i);
	return s;
}

NOINLINE static int pick(int k)
{
	switch (k & 7) {
	case 0: return a[1];
	case 1: return b[2] + 1;
	case 2: return a[3] * 2;
	case 3: return b[k & 4095];
	case 4: return a[k & 1023];
	case 5: return 5;
	case 6: return b[7] - 1;
	default: return a[k & 4095] ^ 3;
	}
}

NOINLINE static int depth(int n) { return n ? a[n & 4095] + depth(n - 1) : 0; }

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 2000;
	int (*volatile through)(int) = leaf;
	long s = 0;
	for (int i = 0; i < 4096; i++) {
		a[i] = i;
		b[i] = 3 * i;
	}
	for (int r = 0; r < rounds; r++) {
		s += mid(100 + r % 50);
		for (int k = 0; k < 200; k++)
			s += pick(k + r) + through(k);
		for (int k = 0; k < 300; k++)
			s += a[(k * 13 + r) & 4095];
		s += depth(r % 40);
		char buf[64];
		memset(buf, r, sizeof(buf));
		s += buf[r & 63];
	}
	printf("%ld\n", s);
	return 0;
}
