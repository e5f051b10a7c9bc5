/* No libc: exercises many RV64GC instruction kinds (M, A, F, D, shifts and
 * loads of every width, conversions, fclass, min/max, CSRs) and writes every
 * result in hex with the write system call, so its output under reticle sim
 * and under qemu-user can be compared value by value. */
#include <stdint.h>

static char buf[1 << 17];
static int pos;

static void put_hex(uint64_t v)
{
	for (int i = 60; i >= 0; i -= 4)
		buf[pos++] = "0123456789abcdef"[(v >> i) & 15];
	buf[pos++] = '\n';
}

static long sys3(long n, long a, long b, long c)
{
	register long a0 __asm__("a0") = a, a1 __asm__("a1") = b, a2 __asm__("a2") = c, a7 __asm__("a7") = n;
	__asm__ volatile("ecall" : "+r"(a0) : "r"(a1), "r"(a2), "r"(a7) : "memory");
	return a0;
}

static uint64_t bits_d(double d) { union { double d; uint64_t u; } x = { .d = d }; return x.u; }
static uint64_t class_d(double d) { uint64_t r; __asm__("fclass.d %0, %1" : "=r"(r) : "f"(d)); return r; }
static uint64_t class_f(float f) { uint64_t r; __asm__("fclass.s %0, %1" : "=r"(r) : "f"(f)); return r; }
static uint64_t bits_f(float f) { union { float f; uint32_t u; } x = { .f = f }; return x.u; }

/* volatile inputs keep the compiler from folding the operations away */
static volatile int64_t vi[] = { 0, 1, -1, 7, -7, 0x7fffffffffffffffll, (int64_t)0x8000000000000000ull,
				  0x123456789abcdefll, -0x80000000ll, 0xffffffffll, 3, -3 };
static volatile double vd[] = { 0.0, -0.0, 1.5, -2.25, 1e300, -1e-310, 3.0, 1.0 / 3.0, 1e19, -1e19, 2.5, -2.5 };
static volatile float vf[] = { 0.0f, 1.5f, -2.75f, 3e38f, 1e-40f, 0.1f };
static volatile int32_t vw[] = { 5, -5, 0x7fffffff, -0x7fffffff - 1, 0 };
static int64_t shared;

void _start(void)
{
	int n = sizeof vi / sizeof vi[0];
	for (int i = 0; i < n; i++)
		for (int j = 0; j < n; j++) {
			int64_t a = vi[i], b = vi[j];
			put_hex(a * b);
			put_hex((uint64_t)(((__int128)a * b) >> 64));
			put_hex((uint64_t)(((unsigned __int128)(uint64_t)a * (uint64_t)b) >> 64));
			put_hex(b ? (a == INT64_MIN && b == -1 ? a : a / b) : 0);
			put_hex(b ? (uint64_t)a % (uint64_t)b : 1);
			put_hex((uint64_t)(int64_t)((int32_t)a * (int32_t)b));
			put_hex((uint64_t)a >> (b & 63));
			put_hex(a >> (b & 63));
			put_hex((uint64_t)(int64_t)(int32_t)((uint32_t)a >> (b & 31)));
			put_hex(a < b);
			put_hex((uint64_t)a < (uint64_t)b);
		}
	for (int i = 0; i < 5; i++)
		for (int j = 0; j < 5; j++) {
			int32_t a = vw[i], b = vw[j];
			put_hex((uint64_t)(int64_t)(b ? (a == INT32_MIN && b == -1 ? a : a / b) : -1));
			put_hex((uint64_t)(int64_t)(b ? (a == INT32_MIN && b == -1 ? 0 : a % b) : a));
			put_hex((uint64_t)(int64_t)(int32_t)(b ? (uint32_t)a / (uint32_t)b : 0xffffffffu));
		}
	int nd = sizeof vd / sizeof vd[0];
	for (int i = 0; i < nd; i++) {
		double a = vd[i];
		put_hex((uint64_t)(int64_t)a);
		put_hex((uint64_t)(int64_t)(int32_t)a);
		put_hex((uint64_t)a);
		put_hex(bits_f((float)a));
		put_hex(bits_d(a * a));
		put_hex(class_d(a));
		put_hex(class_d(a * 1e300));
		for (int j = 0; j < nd; j++) {
			double b = vd[j];
			put_hex(bits_d(a + b));
			put_hex(bits_d(a / b));
			put_hex(bits_d(a * b - a));
			put_hex(a < b);
			put_hex(a == b);
			double mn, mx;
			__asm__("fmin.d %0, %1, %2" : "=f"(mn) : "f"(a), "f"(b));
			__asm__("fmax.d %0, %1, %2" : "=f"(mx) : "f"(a), "f"(b));
			put_hex(bits_d(mn));
			put_hex(bits_d(mx));
			put_hex(bits_d(__builtin_copysign(a, b)));
		}
		put_hex(bits_d(__builtin_sqrt(a < 0 ? -a : a)));
		put_hex(bits_d(__builtin_fma(a, 3.0, -1.0)));
	}
	for (int i = 0; i < 6; i++) {
		float a = vf[i];
		put_hex(bits_f(a * vf[(i + 1) % 6]));
		put_hex(bits_d((double)a));
		put_hex((uint64_t)(int64_t)a);
		put_hex(bits_f((float)vi[i]));
		put_hex(bits_f(__builtin_sqrtf(a)));
		put_hex(class_f(a));
	}
	for (int i = 0; i < n; i++) {
		put_hex(bits_d((double)vi[i]));
		put_hex(bits_d((double)(uint64_t)vi[i]));
		put_hex(__atomic_fetch_add(&shared, vi[i], __ATOMIC_SEQ_CST));
		put_hex(__atomic_exchange_n(&shared, vi[i] ^ 0x55, __ATOMIC_SEQ_CST));
		int64_t expect = vi[i] ^ 0x55;
		put_hex(__atomic_compare_exchange_n(&shared, &expect, 9, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST));
		put_hex(__atomic_fetch_or(&shared, vi[i], __ATOMIC_SEQ_CST));
	}
	uint64_t frm;
	__asm__ volatile("frrm %0" : "=r"(frm));
	put_hex(frm);
	sys3(64, 1, (long)buf, pos);
	sys3(93, 0, 0, 0);
	for (;;)
		;
}
