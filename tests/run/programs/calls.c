/* Calls of every kind, for the callgraph oracle: direct, through the PLT,
 * through function pointers with one target and with many (more than a
 * small inline cache would hold), a libc callback (qsort), a pointer to a
 * libc function, recursion and mutual recursion, and the same indirect
 * call sites from several threads at once. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define T(n) __attribute__((noinline)) static long t##n(long x) { return x * (n + 1) + n; }
#define T10(a) T(a##0) T(a##1) T(a##2) T(a##3) T(a##4) T(a##5) T(a##6) T(a##7) T(a##8) T(a##9)
T10(1) T10(2) T10(3) T10(4)
#define P(n) t##n,
#define P10(a) P(a##0) P(a##1) P(a##2) P(a##3) P(a##4) P(a##5) P(a##6) P(a##7) P(a##8) P(a##9)
static long (*const many[])(long) = { P10(1) P10(2) P10(3) P10(4) };
enum { NMANY = sizeof(many) / sizeof(many[0]) };

__attribute__((noinline)) static long one(long x) { return x + 1; }
static long (*volatile single)(long) = one;

__attribute__((noinline)) static long fib(long n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
__attribute__((noinline)) static int is_odd(unsigned n);
__attribute__((noinline)) static int is_even(unsigned n) { return n == 0 ? 1 : is_odd(n - 1); }
__attribute__((noinline)) static int is_odd(unsigned n) { return n == 0 ? 0 : is_even(n - 1); }

static int cmp(const void *a, const void *b)
{
	long x = *(const long *)a, y = *(const long *)b;
	return (x > y) - (x < y);
}

/* every call in it goes through a pointer the compiler cannot see through */
__attribute__((noinline)) static long spin(long rounds, long seed)
{
	long s = seed;
	for (long i = 0; i < rounds; i++) {
		s += many[(i * 7 + seed) % NMANY](i);
		s += single(s & 0xff);
	}
	return s;
}

static void *worker(void *arg)
{
	long id = (long)(size_t)arg;
	long *out = malloc(sizeof(long));
	*out = spin(20000 + 1000 * id, id);
	return out;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 5000;
	long s = spin(n, 3);
	s += fib(18);
	s += is_even(301);
	long v[257];
	for (int i = 0; i < 257; i++)
		v[i] = (i * 97) % 257;
	qsort(v, 257, sizeof(v[0]), cmp);
	size_t (*len)(const char *) = strlen;
	s += (long)len(argv[0]) * 0 + v[100];
	pthread_t th[3];
	for (long i = 0; i < 3; i++)
		pthread_create(&th[i], NULL, worker, (void *)(size_t)i);
	for (int i = 0; i < 3; i++) {
		void *r;
		pthread_join(th[i], &r);
		s += *(long *)r;
		free(r);
	}
	printf("%ld\n", s);
	return 0;
}
