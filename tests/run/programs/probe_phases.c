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
/* each thread's sums, without a lock: a lock shared by the two threads
 * made send_msg wait, under load, for a holder that was preempted, after
 * its end was read (reticle timed 3.6% more than the program measured) */
static __thread double t_in_foo, t_not_foo, t_foo;
static __thread long n_in_foo, n_not_foo, n_foo;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static double all_t[3];
static long all_n[3];
volatile int sink;

static void add(double *t, long *n, double d)
{
	*t += d;
	++*n;
}

/* The calling thread's sums into the totals. */
static void fold(void)
{
	pthread_mutex_lock(&lock);
	all_t[0] += t_in_foo, all_t[1] += t_not_foo, all_t[2] += t_foo;
	all_n[0] += n_in_foo, all_n[1] += n_not_foo, all_n[2] += n_foo;
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
	fold();
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
	fold();
	printf("in_foo %ld %.6f\n", all_n[0], all_t[0]);
	printf("not_foo %ld %.6f\n", all_n[1], all_t[1]);
	printf("foo %ld %.6f\n", all_n[2], all_t[2]);
	return 0;
}
