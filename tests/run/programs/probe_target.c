/* A program that counts, itself, what the probe test asks reticle probe
 * to count (tests/run/probe_oracle.py): it prints "name value" lines, one
 * per aggregation, computed in plain C beside the calls they describe.
 *
 * Calls: send_msg under foo (also through recursion and a longjmp out of
 * foo, after which foo is off the stack), send_msg from bar, pick() and its
 * return values, a global `mode` (int) and `flag` (char), arguments signed
 * and unsigned, a second thread and a fork child doing the same work. */
#include <pthread.h>
#include <setjmp.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int mode;                 /* read by predicates: the program's own variable */
char flag;
volatile long sink;
static __thread int foo_depth;   /* how deep foo is, in this thread */
static __thread jmp_buf escape;

/* the truths */
static atomic_long t_send, t_send_in_foo, t_send_not_foo, t_bar_big, t_bar_neg, t_mode2, t_flag,
	t_pick0, t_pick_ret[7], t_key[256], t_hist[66], t_big_unsigned, t_mixed;

static int bucket(long v)   /* reticle's power-of-two key */
{
	if (v < 0)
		return -1;
	int b = 0;
	while (v) {
		b++;
		v >>= 1;
	}
	return b;
}

__attribute__((noinline)) long send_msg(long n)
{
	for (long i = 0; i < n % 64; i++)
		sink += i;
	return sink;
}

static void count_send(long n)
{
	t_send++;
	if (foo_depth)
		t_send_in_foo++;
	else
		t_send_not_foo++;
	if (mode == 2)
		t_mode2++;
	if (flag)
		t_flag++;
	if ((flag && !foo_depth) || (mode == 2 && foo_depth))   /* a predicate with alternatives */
		t_mixed++;
	t_hist[bucket(n) + 1]++;
}

__attribute__((noinline)) long foo(int depth, long n)
{
	foo_depth++;
	count_send(n);
	long r = send_msg(n);
	if (depth > 0)
		r += foo(depth - 1, n + 1);   /* recursion: foo stays on the stack */
	if (n % 17 == 0) {
		foo_depth = 0;                /* every foo frame is left at once */
		longjmp(escape, 1);
	}
	foo_depth--;
	sink++;                               /* no tail call: foo's frame stays to the end */
	return r;
}

__attribute__((noinline)) long bar(long n, unsigned long u)
{
	if (n > 1000)
		t_bar_big++;
	if (n < 0)
		t_bar_neg++;
	if (u > 0xffffffff00000000ul)
		t_big_unsigned++;
	count_send(n);
	long r = send_msg(n);
	sink++;
	return r;
}

__attribute__((noinline)) int pick(int k)
{
	return k % 7;
}

/* The globals' part runs under the lock (the truths read them as the
 * predicates do); pick() runs in both threads at once. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static void work(int rounds, int seed)
{
	for (int i = 0; i < rounds; i++) {
		pthread_mutex_lock(&lock);
		mode = (i + seed) % 3;
		flag = (char)((i + seed) % 5 == 0);
		if (!setjmp(escape))
			foo(i % 3, i + seed);
		bar((i % 2 ? -1 : 1) * (long)(i * 37 + seed), i % 4 == 0 ? ~0ul - (unsigned long)i : (unsigned long)i);
		pthread_mutex_unlock(&lock);
		int r = pick(i + seed);
		t_pick_ret[r]++;
		if (r == 0)
			t_pick0++;
		t_key[(signed char)(i + seed) + 128]++;   /* pick's argument as an int8 */
	}
}

static void *thread_main(void *arg)
{
	(void)arg;
	work(3000, 1);
	return NULL;
}

static void report(const char *who)
{
	printf("%s send %ld\n", who, t_send);
	printf("%s send_in_foo %ld\n", who, t_send_in_foo);
	printf("%s send_not_foo %ld\n", who, t_send_not_foo);
	printf("%s bar_big %ld\n", who, t_bar_big);
	printf("%s bar_neg %ld\n", who, t_bar_neg);
	printf("%s big_unsigned %ld\n", who, t_big_unsigned);
	printf("%s mode2 %ld\n", who, t_mode2);
	printf("%s flag %ld\n", who, t_flag);
	printf("%s pick0 %ld\n", who, t_pick0);
	printf("%s send_mixed %ld\n", who, t_mixed);
	for (int r = 0; r < 7; r++)
		printf("%s pick_ret[%d] %ld\n", who, r, t_pick_ret[r]);
	for (int k = 0; k < 256; k++)
		if (t_key[k])
			printf("%s key[%d] %ld\n", who, k - 128, t_key[k]);
	for (int b = 0; b < 66; b++)
		if (t_hist[b])
			printf("%s hist[%d] %ld\n", who, b - 1, t_hist[b]);
	fflush(stdout);
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 5000;
	pthread_t t;
	pthread_create(&t, NULL, thread_main, NULL);
	work(rounds, 0);
	pthread_join(t, NULL);
	report("parent");
	pid_t child = fork();
	if (child == 0) {   /* the child's counts start from the parent's: it adds its own */
		work(1000, 2);
		report("child");
		_exit(0);
	}
	int status;
	waitpid(child, &status, 0);
	return 7;
}
