/* Data that reads like a jump table: int32 values that, taken as offsets
 * from the table, land in the executable segment (linked with
 * -z noseparate-code, .rodata shares the text's segment, as in Rust
 * binaries linked by lld). The function also has a real switch table. */
#include <stdint.h>
#include <stdio.h>

static const int32_t small[16] = { 7, 0, 3, 0, 3, 0, 13, 0, 1, 2, 3, 4, 5, 6, 7, 8 };

__attribute__((noinline)) long work(int op, int i)
{
	long r;
	switch (op) {
	case 0: r = 11; break;
	case 1: r = 23 * i; break;
	case 2: r = 37 - i; break;
	case 3: r = 41 ^ i; break;
	case 4: r = 53 + i; break;
	case 5: r = 67 * i + 1; break;
	case 6: r = 79 - 2 * i; break;
	default: r = 1;
	}
	return r + small[i & 15];
}

int main(void)
{
	long s = 0;
	for (int i = 0; i < 1000; i++)
		s += work(i % 9, i);
	printf("%ld\n", s);
	return 0;
}
