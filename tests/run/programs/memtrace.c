/* Data accesses of known shapes for the memtrace collector, compared with
 * valgrind lackey's instruction by instruction (memtrace_oracle.py): loads,
 * stores and read-modify-writes of static arrays through base, index and
 * rip-relative operands, a struct copied field by field, calls through a
 * pointer and recursion (the stack slots of call, ret, push and pop), a
 * thread-local counter (%fs), rep movsb and rep stosq (an access per
 * iteration), and a second thread with its own stream.
 * usage: memtrace [N] */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

struct pair { long a, b; int c; };
static long table[4096];
static int bytes[1024];
static struct pair pairs[64], copies[64];
static __thread long tls_count;

__attribute__((noinline)) static long walk(int n, int stride)
{
	long s = 0;
	for (int i = 0; i < n; i++)
		s += table[(i * stride) & 4095];
	return s;
}

__attribute__((noinline)) static void bump(int n)
{
	for (int i = 0; i < n; i++) {
		bytes[i & 1023] += i;   /* a read-modify-write */
		tls_count++;
	}
}

__attribute__((noinline)) static void copy_pairs(void)
{
	for (int i = 0; i < 64; i++) {
		copies[i].a = pairs[i].b;
		copies[i].b = pairs[i].a;
		copies[i].c = pairs[i].c + 1;
	}
}

__attribute__((noinline)) static long depth(int n)
{
	return n ? depth(n - 1) + table[n] : 0;
}

static long (*volatile indirect)(int, int) = walk;
static char src[3000], dst[3000];
static long words[400];

__attribute__((noinline)) static void rep_strings(size_t n)
{
	void *d = dst, *s = src;
	size_t c = n;
	__asm__ volatile("rep movsb" : "+D"(d), "+S"(s), "+c"(c) : : "memory");
	d = words;
	c = n / 8;
	__asm__ volatile("rep stosq" : "+D"(d), "+c"(c) : "a"(7L) : "memory");
	c = 0;   /* no iteration: no access */
	__asm__ volatile("rep movsb" : "+D"(d), "+S"(s), "+c"(c) : : "memory");
}

static void *other(void *arg)
{
	int n = *(int *)arg;
	bump(n);
	return (void *)(long)(walk(n, 7) + tls_count);
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 20000;
	for (int i = 0; i < 4096; i++)
		table[i] = i * 3;
	for (int i = 0; i < 64; i++)
		pairs[i] = (struct pair){ i, -i, i * 2 };
	pthread_t th;
	pthread_create(&th, NULL, other, &n);
	long s = walk(n, 1) + indirect(n, 17) + depth(200);
	bump(n);
	copy_pairs();
	for (int i = 0; i < 20; i++)
		rep_strings(1000 + i * 100);
	void *r;
	pthread_join(th, &r);
	printf("%ld %ld %ld %ld\n", s, copies[5].a + copies[63].c, tls_count, (long)r);
	return 0;
}
