/* Phases of known length for the probe test (probe_oracle.py): send_msg
 * spins a set time; foo calls it twice (10 and 5 ms), bar once (20 ms);
 * foo runs in the main thread and in a second one. The program measures
 * each send_msg call itself (the clock read at its start and at its end)
 * and prints, per thread and in total, the time spent in send_msg under foo
 * and not under foo, and in foo: the truth of Paradyn's Figure 1 ("time
 * in send_msg while foo is on the stack"). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static __thread int in_foo;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static double t_in_foo, t_not_foo, t_foo;
static long n_in_foo, n_not_foo, n_foo;
volatile int sink;

static void add(double *t, long *n, double d)
{
	pthread_mutex_lock(&lock);
	*t += d;
	++*n;
	pthread_mutex_unlock(&lock);
}

__attribute__((noinline)) void send_msg(int ms)
{
	double start = now(), end;
	do
		end = now();
	while (end - start < ms * 1e-3);
	if (in_foo)
		add(&t_in_foo, &n_in_foo, end - start);
	else
		add(&t_not_foo, &n_not_foo, end - start);
	sink++;
}

__attribute__((noinline)) void foo(void)
{
	double start = now();
	in_foo = 1;
	send_msg(10);
	send_msg(5);
	in_foo = 0;
	add(&t_foo, &n_foo, now() - start);
	sink++;
}

__attribute__((noinline)) void bar(void)
{
	send_msg(20);
	sink++;
}

static void *worker(void *a)
{
	(void)a;
	for (int i = 0; i < 5; i++)
		foo();
	return NULL;
}

int main(void)
{
	pthread_t t;
	pthread_create(&t, NULL, worker, NULL);
	for (int i = 0; i < 5; i++) {
		foo();
		bar();
	}
	pthread_join(t, NULL);
	printf("in_foo %ld %.6f\n", n_in_foo, t_in_foo);
	printf("not_foo %ld %.6f\n", n_not_foo, t_not_foo);
	printf("foo %ld %.6f\n", n_foo, t_foo);
	return 0;
}
